package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileQuestion is a question that would drive a terminal (OSC sets the
// window title, CSI moves the cursor), display in another order than it
// reads, and fill the host's screen.
var hostileQuestion = "Approve?\x1b]0;pwned\x07 \x1b[2J\u202eevil\u2066 \u009b31m" + strings.Repeat("long ", 20000)

// hostileAsker is an upstream whose only tool asks hostileQuestion, with
// field titles and descriptions just as hostile.
func hostileAsker(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			schema := map[string]any{"type": "object", "properties": map[string]any{
				"answer": map[string]any{"type": "string", "title": "T\x1b[31m\u202eitle", "description": "D\x1b]0;x\x07" + strings.Repeat("d", 10000)},
			}}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: hostileQuestion, RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil
		})
}

func checkShown(t *testing.T, where, s string, max int) {
	t.Helper()
	if strings.ContainsAny(s, "\x1b\x07\u202e\u2066\u009b") {
		t.Errorf("%s carries control or bidi characters: %.200q", where, s)
	}
	if len(s) > max {
		t.Errorf("%s is %d bytes, want at most %d", where, len(s), max)
	}
}

// TestElicitationTextIsCleanedForTheHost: the host shows the question to
// its person as it gets it, so the front cleans and bounds it (and the
// form's titles and descriptions) first.
func TestElicitationTextIsCleanedForTheHost(t *testing.T) {
	t.Parallel()
	url := upstream(t, hostileAsker)
	var mu sync.Mutex
	var got []*mcp.ElicitParams
	r := startHost(t, host{client: &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		got = append(got, req.Params)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}}, cfg("up", url))
	if out, _ := callMCP(t, r.cs, `{"action":"call","server":"up","tool":"ask"}`); !strings.Contains(out, "decline") {
		t.Fatalf("call: %s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("asked %d times", len(got))
	}
	checkShown(t, "the message", got[0].Message, 4<<10)
	if !strings.HasPrefix(got[0].Message, "[up asks] Approve?") {
		t.Errorf("message %.80q", got[0].Message)
	}
	schema, _ := json.Marshal(got[0].RequestedSchema)
	var s struct {
		Properties map[string]struct{ Title, Description string }
	}
	json.Unmarshal(schema, &s)
	p := s.Properties["answer"]
	checkShown(t, "the title", p.Title, 200)
	checkShown(t, "the description", p.Description, 2<<10)
}

// TestStoredQuestionsAreCleaned: a question left for the settings page is
// cleaned and bounded before it is stored.
func TestStoredQuestionsAreCleaned(t *testing.T) {
	t.Parallel()
	serveSide, uiSide := twoHandles(t)
	unlock, err := uiSide.Lock(context.Background(), store.UILockName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	q := &serve.StoredQuestions{Store: serveSide, Poll: 10 * time.Millisecond, Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Ask(ctx, &manager.ElicitRequest{Server: "up", Message: hostileQuestion, Schema: json.RawMessage(`{"type":"object","properties":{}}`)})
	}()
	defer func() { cancel(); <-done }()
	for {
		list, _ := uiSide.Interactions(ctx, "")
		if len(list) == 1 {
			var sq store.Question
			json.Unmarshal(list[0].Payload, &sq)
			checkShown(t, "the stored message", sq.Message, 4<<10)
			return
		}
		if ctx.Err() != nil {
			t.Fatal("no question stored")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
