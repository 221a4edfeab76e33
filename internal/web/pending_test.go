package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type pendingJSON struct {
	ID      string `json:"id"`
	Server  string `json:"server"`
	Message string `json:"message"`
	Fields  []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Default  any    `json:"default"`
		Required bool   `json:"required"`
	} `json:"fields"`
}

// waitPending waits for n cards.
func (e *env) waitPending(n int) []pendingJSON {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := e.do("GET", "/api/pending", nil)
		var out struct{ Pending []pendingJSON }
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			e.t.Fatalf("%v: %s", err, body)
		}
		if len(out.Pending) == n {
			return out.Pending
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("want %d pending cards, have %s", n, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

func (e *env) callAsync(ctx context.Context, server, tool string) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		res, err := e.m.CallTool(ctx, server, tool, nil, nil)
		out <- callResult{res, err}
	}()
	return out
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestElicitationCardAnswersTheCall: a server's question during a call
// becomes a card with its fields and defaults; a wrong answer is refused,
// a right one reaches the call.
func TestElicitationCardAnswersTheCall(t *testing.T) {
	srv := fake.Start(t, nil)
	e := newEnv(t, mcpgate.ServerConfig{ID: "docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true})
	done := e.callAsync(context.Background(), "docs", "ask")

	cards := e.waitPending(1)
	c := cards[0]
	if c.Server != "docs" || c.Message != fake.AskMessage || len(c.Fields) != 2 ||
		c.Fields[1].Name != "name" || !c.Fields[1].Required || c.Fields[1].Default != "Ada" {
		t.Fatalf("card %+v", c)
	}
	for _, bad := range []map[string]any{
		{"action": "accept", "content": map[string]any{"lucky": 3}},                      // name missing
		{"action": "accept", "content": map[string]any{"name": "Bob", "lucky": "three"}}, // wrong type
		{"action": "accept", "content": map[string]any{"name": "Bob", "other": 1}},       // unknown field
		{"action": "maybe"},
	} {
		if code, body := e.do("POST", "/api/pending/"+c.ID, bad); code != http.StatusBadRequest {
			t.Errorf("answer %v: %d %s, want 400", bad, code, body)
		}
	}
	if code, body := e.do("POST", "/api/pending/"+c.ID, map[string]any{"action": "accept", "content": map[string]any{"name": "Bob", "lucky": 3}}); code != 200 {
		t.Fatalf("answer: %d %s", code, body)
	}
	r := <-done
	if r.err != nil || !strings.Contains(resultText(r.res), "Bob") {
		t.Fatalf("call: %v %+v", r.err, r.res)
	}
	e.waitPending(0)
	if code, _ := e.do("POST", "/api/pending/"+c.ID, map[string]any{"action": "decline"}); code != http.StatusNotFound {
		t.Errorf("answering twice: %d, want 404", code)
	}
}

// TestElicitationCardExpiresWithTheCall: when the call times out, its
// card goes.
func TestElicitationCardExpiresWithTheCall(t *testing.T) {
	srv := fake.Start(t, nil)
	e := newEnv(t, mcpgate.ServerConfig{ID: "docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true, Timeout: time.Second})
	done := e.callAsync(context.Background(), "docs", "ask")
	e.waitPending(1)
	if r := <-done; r.err == nil {
		t.Errorf("the call did not time out: %+v", r.res)
	}
	e.waitPending(0)
}
