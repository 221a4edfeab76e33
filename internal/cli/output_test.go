package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeCounter counts the writes it is given, as a terminal or pipe
// counts system calls.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// A long table reaches the output aligned, in as few writes as its size
// needs, not one per cell and run of padding.
func TestTableWritesInFewWrites(t *testing.T) {
	t.Parallel()
	rows := make([][]string, 1000)
	for i := range rows {
		rows[i] = []string{"server", fmt.Sprintf("tool_%d", i), "Does something useful."}
	}
	var out writeCounter
	if err := writeRows(&out, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(rows) || lines[7] != "server  tool_7    Does something useful." {
		t.Fatalf("%d lines, the eighth %q", len(lines), lines[7])
	}
	if most := out.Len()/4096 + 1; out.writes > most {
		t.Errorf("%d bytes in %d writes, want at most %d", out.Len(), out.writes, most)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain text\nsecond\tline", "plain text\nsecond\tline"},
		{"\x1b[2J\x1b[Hclear", "[2J[Hclear"},
		{"title\x1b]0;pwned\x07", "title]0;pwned"},
		{"csi\u009b31m", "csi31m"},
		{"cr\roverwrite", "croverwrite"},
		{"del\x7f", "del"},
		{"bidi \u202eevil\u202c", "bidi evil"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"ünïcödé ✓", "ünïcödé ✓"},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	t.Parallel()
	if got := firstLine("\n  Echoes text.\nMore.", 80); got != "Echoes text." {
		t.Errorf("got %q", got)
	}
	if got := firstLine(strings.Repeat("é", 10), 5); got != "éééé…" {
		t.Errorf("got %q", got)
	}
}

// JSON keeps every string's value but escapes what could drive a terminal.
func TestWriteJSONEscapesControls(t *testing.T) {
	t.Parallel()
	in := map[string]string{"s": "a\x1b[31mb\u009bc\u202ed<&>"}
	var out strings.Builder
	if err := writeJSON(&out, in); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r != '\n' && unsafeRune(r) {
			t.Fatalf("raw control %U in %q", r, out.String())
		}
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(out.String()), &back); err != nil || back["s"] != in["s"] {
		t.Errorf("round trip: %q, %v", back["s"], err)
	}
	if !strings.Contains(out.String(), "<&>") {
		t.Errorf("HTML escaping is noise on a terminal: %s", out.String())
	}
}

func TestWriteCallResult(t *testing.T) {
	t.Parallel()
	size := int64(2048)
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "hello\x1b[2J"},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 12345)},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
		&mcp.ResourceLink{URI: "https://example.com/r", Name: "report", MIMEType: "text/csv", Size: &size},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "inside"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.bin", Blob: []byte{1, 2, 3}}},
	}}
	var out strings.Builder
	writeCallResult(&out, res)
	want := strings.Join([]string{
		"hello[2J",
		"[image image/png, 12345 bytes]",
		"[audio audio/wav, 10 bytes]",
		"[resource link: report <https://example.com/r> (text/csv, 2048 bytes)]",
		"[resource file:///a.txt (text/plain)]",
		"inside",
		"[resource file:///b.bin: unknown type, 3 bytes]",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	writeCallResult(&out, &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 5}})
	if !strings.Contains(out.String(), `"sum": 5`) {
		t.Errorf("structured only: %q", out.String())
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{usageErrorf("bad"), 2},
		{mcpgate.Errorf(mcpgate.CategoryInvalid, "invalid"), 2},
		{mcpgate.Errorf(mcpgate.CategoryAuth, "auth"), 4},
		{mcpgate.ErrAuthRequired, 4},
		{mcpgate.Errorf(mcpgate.CategoryNetwork, "down"), 1},
		{mcpgate.Errorf(mcpgate.CategoryNotFound, "nope"), 1},
		{&reportedError{Err: errToolFailed}, 1},
		{&reportedError{Err: mcpgate.ErrAuthRequired}, 4},
		{errToolFailed, 1},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"stauts"}, "did you mean status?"},
		{[]string{"servers", "extra"}, "takes 0 argument(s), got 1"},
		{[]string{"--nope"}, "unknown flag: --nope"},
		{[]string{"list", "--json=maybe"}, `--json "maybe": must be true or false`},
		{[]string{"prompt", "demo", "greet", "name"}, "want KEY=VALUE"},
		{[]string{"prompt", "demo", "greet", "a=1", "a=2"}, "given twice"},
		{[]string{"import", "x", "--format", "zedd"}, "--format: \"zedd\": unknown; did you mean zed?"},
		{[]string{"read", "demo", " "}, "URI must not be empty"},
	}
	for _, tt := range tests {
		r := h.run(tt.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "--help' for usage") {
			t.Errorf("%v: want exit 2 and %q:\n%s", tt.args, tt.want, r)
		}
	}
	// Help is not an error.
	for _, args := range [][]string{nil, {"--help"}, {"help", "call"}, {"tools"}, {"--version"}} {
		r := h.runRaw("", args...)
		if r.code != 0 || r.stdout == "" {
			t.Errorf("%v: want exit 0 and help:\n%s", args, r)
		}
	}
}
