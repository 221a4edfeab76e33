package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askSchema is the fake server's ask form.
const askSchema = `{"type":"object","properties":{"name":{"type":"string","default":"Ada"},"lucky":{"type":"number","default":7}},"required":["name"]}`

func elicitWith(t *testing.T, mode, stdin, schema string) (*mcp.ElicitResult, string) {
	t.Helper()
	var out strings.Builder
	in := newLineReader(strings.NewReader(stdin))
	defer in.close()
	e := newElicitor(mode, in, &out)
	res, err := e.elicit(context.Background(), &manager.ElicitRequest{
		Server: "demo", Message: "What is your name?", Schema: json.RawMessage(schema),
	})
	if err != nil {
		t.Fatalf("elicit: %v", err)
	}
	return res, out.String()
}

func TestElicitAcceptDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		want   *mcp.ElicitResult
	}{
		{"defaults", askSchema, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "lucky": 7.0}}},
		{"required without default", `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
			&mcp.ElicitResult{Action: "decline"}},
		{"optional without default is left out", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean","default":true}}}`,
			&mcp.ElicitResult{Action: "accept", Content: map[string]any{"b": true}}},
		{"integer", `{"type":"object","properties":{"n":{"type":"integer","default":3}}}`,
			&mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": int64(3)}}},
		{"enum default", `{"type":"object","properties":{"c":{"type":"string","enum":["red","green"],"default":"green"}}}`,
			&mcp.ElicitResult{Action: "accept", Content: map[string]any{"c": "green"}}},
		{"invalid default is no default", `{"type":"object","properties":{"c":{"type":"string","enum":["red"],"default":"blue"}},"required":["c"]}`,
			&mcp.ElicitResult{Action: "decline"}},
		{"multi-select", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"default":["a","c"]}}}`,
			&mcp.ElicitResult{Action: "accept", Content: map[string]any{"m": []string{"a", "c"}}}},
		{"empty form", `{"type":"object","properties":{}}`, &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}},
		{"unsupported field type", `{"type":"object","properties":{"o":{"type":"object","default":{}}}}`, &mcp.ElicitResult{Action: "decline"}},
		{"not a schema", `[1,2]`, &mcp.ElicitResult{Action: "decline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := elicitWith(t, elicitAcceptDefaults, "", tt.schema)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestElicitDeclineModeNeverReads(t *testing.T) {
	t.Parallel()
	got, out := elicitWith(t, elicitDecline, "Bob\n", askSchema)
	if got.Action != "decline" || got.Content != nil {
		t.Errorf("got %+v", got)
	}
	if !strings.Contains(out, "declined") {
		t.Errorf("the person is not told: %q", out)
	}
}

func TestElicitAsk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		stdin  string
		want   *mcp.ElicitResult
		output []string // each in the output
	}{
		{
			name: "enter accepts defaults", schema: askSchema, stdin: "\n\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "lucky": 7.0}},
			output: []string{`The server "demo" asks:`, "What is your name?", "name (string, required) [Ada]: ", "lucky (number) [7]: "},
		},
		{
			name: "typed answers", schema: askSchema, stdin: "Grace\n42\n",
			want: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace", "lucky": 42.0}},
		},
		{
			name: "a wrong type is asked again", schema: askSchema, stdin: "Grace\nseven\n7.5\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace", "lucky": 7.5}},
			output: []string{`"seven" is not a number`},
		},
		{
			name: "required is asked again", schema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
			stdin: "\n  \nLin\n",
			want:  &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Lin"}}, output: []string{"a value is required"},
		},
		{
			name: "decline", schema: askSchema, stdin: "decline\n",
			want: &mcp.ElicitResult{Action: "decline"}, output: []string{"(declined)"},
		},
		{
			name: "cancel in the second field", schema: askSchema, stdin: "Bob\ncancel\n",
			want: &mcp.ElicitResult{Action: "cancel"},
		},
		{
			name: "end of input cancels", schema: askSchema, stdin: "Bob\n",
			want: &mcp.ElicitResult{Action: "cancel"}, output: []string{"no more input"},
		},
		{
			name:   "choices by number or value",
			schema: `{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},"d":{"type":"string","enum":["x","y"]}}}`,
			stdin:  "2\ny\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"c": "g", "d": "y"}},
			output: []string{"1) r — Red", "2) g — Green"},
		},
		{
			name:   "boolean, integer bounds, multi-select",
			schema: `{"type":"object","properties":{"ok":{"type":"boolean","default":false},"n":{"type":"integer","minimum":1,"maximum":5},"m":{"type":"array","items":{"anyOf":[{"const":"a"},{"const":"b"}]}}}}`,
			stdin:  "yes\n9\n2.5\n3\n1, b\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true, "n": int64(3), "m": []string{"a", "b"}}},
			output: []string{"[n]", "at most 5", "want a whole number"},
		},
		{
			name:   "string rules",
			schema: `{"type":"object","properties":{"e":{"type":"string","format":"email"},"s":{"type":"string","minLength":2,"maxLength":3}}}`,
			stdin:  "nope\na@b.example\nx\nxyzw\nxyz\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"e": "a@b.example", "s": "xyz"}},
			output: []string{"want an email address", "at least 2 characters", "at most 3 characters"},
		},
		{
			name: "optional left empty", schema: `{"type":"object","properties":{"a":{"type":"string"}}}`, stdin: "\n",
			want: &mcp.ElicitResult{Action: "accept", Content: map[string]any{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out := elicitWith(t, elicitAsk, tt.stdin, tt.schema)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s\noutput:\n%s", d, out)
			}
			for _, want := range tt.output {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// Questions ask required fields first, otherwise in the schema's order, and
// a hostile server's text cannot drive the terminal.
func TestElicitAskShowsFieldsInOrderSanitized(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"zeta":{"type":"string","title":"Z\u001b[2J"},"alpha":{"type":"string"},"req":{"type":"string","default":"x"}},"required":["req"]}`
	var out strings.Builder
	in := newLineReader(strings.NewReader("\n\n\n"))
	defer in.close()
	e := newElicitor(elicitAsk, in, &out)
	_, err := e.elicit(context.Background(), &manager.ElicitRequest{Server: "demo", Message: "hi\x1b]0;pwned\x07", Schema: json.RawMessage(schema)})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.ContainsRune(s, 0x1b) || strings.ContainsRune(s, 0x07) {
		t.Errorf("control characters reached the terminal: %q", s)
	}
	if r, z, a := strings.Index(s, "req"), strings.Index(s, "zeta"), strings.Index(s, "alpha"); r < 0 || z < 0 || a < 0 || r > z || z > a {
		t.Errorf("fields out of order:\n%s", s)
	}
}

// A question ends when its call's context does, even though stdin never
// answers.
func TestElicitAskHonoursContext(t *testing.T) {
	t.Parallel()
	r, w := newBlockingReader()
	defer w()
	in := newLineReader(r)
	defer in.close()
	e := newElicitor(elicitAsk, in, &strings.Builder{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := e.elicit(ctx, &manager.ElicitRequest{Server: "demo", Schema: json.RawMessage(askSchema)})
	if err == nil {
		t.Fatal("elicit returned without an answer or an error")
	}
}

// newBlockingReader returns a reader that blocks until release is called,
// then reports EOF.
func newBlockingReader() (r *blockingReader, release func()) {
	b := &blockingReader{done: make(chan struct{})}
	return b, func() { close(b.done) }
}

type blockingReader struct{ done chan struct{} }

func (b *blockingReader) Read([]byte) (int, error) {
	<-b.done
	return 0, io.EOF
}
