package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLogDataIsBoundedAndSanitized(t *testing.T) {
	t.Parallel()
	if got := logData("line\x1b[31m one\nline two"); got != "line[31m one line two" {
		t.Errorf("a string: %q", got)
	}
	got := logData(map[string]any{"header": "Authorization: Bearer sk-live-0123456789abcdef", "n": 1})
	raw, ok := got.(json.RawMessage)
	if !ok || !json.Valid(raw) || strings.Contains(string(raw), "0123456789abcdef") {
		t.Errorf("JSON data with a credential: %v", got)
	}
	big := logData(map[string]any{"blob": strings.Repeat("x", 3*maxLogData)})
	if s, ok := big.(string); !ok || len(s) > maxLogData+len("…") {
		t.Errorf("oversized data: %T of %d bytes", big, len(big.(string)))
	}
}
