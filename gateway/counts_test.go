package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// A list that failed is not an empty one: status says its count is
// unknown rather than 0; and one tool is "1 tool".
func TestStatusSaysUnknownForAListThatFailed(t *testing.T) {
	h := fake.StartHostile(t, fake.HostileOptions{
		PromptsList: func(string) json.RawMessage { return json.RawMessage(`{"prompts":"not a list"}`) },
	})
	g := newGateway(t, cfg("h", h.URL))
	run(t, g, `{"action":"list","server":"h"}`) // connects
	out, _ := run(t, g, `{"action":"status"}`)
	if !strings.Contains(out, "1 tool, unknown prompts, 0 resources") {
		t.Errorf("status: %s", out)
	}
}
