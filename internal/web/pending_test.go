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
	"github.com/mcpgate/mcpgate/store"
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
	t.Parallel()
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
	t.Parallel()
	srv := fake.Start(t, nil)
	e := newEnv(t, mcpgate.ServerConfig{ID: "docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true, Timeout: time.Second})
	done := e.callAsync(context.Background(), "docs", "ask")
	e.waitPending(1)
	if r := <-done; r.err == nil {
		t.Errorf("the call did not time out: %+v", r.res)
	}
	e.waitPending(0)
}

// TestStoredQuestionFromAnotherProcess: a question that mcpgate serve left
// in the store (its host cannot show forms) is a card here, and the answer
// goes back into the store for serve to pick up.
func TestStoredQuestionFromAnotherProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := store.Question{Server: "demo", Message: "Pick a colour",
		Schema: json.RawMessage(`{"type":"object","properties":{"colour":{"type":"string","default":"blue"}},"required":["colour"]}`)}
	payload, _ := json.Marshal(&q)
	in := &store.Interaction{ID: "q123", Server: "demo", Kind: store.KindQuestion, Message: "a question", Payload: payload,
		CreatedAt: time.Now(), Expiry: time.Now().Add(time.Minute)}
	if err := e.st.PutInteraction(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	_, body := e.do("GET", "/api/pending", nil)
	if !strings.Contains(body, `"id":"~q123"`) || !strings.Contains(body, "Pick a colour") {
		t.Fatalf("stored question not shown: %s", body)
	}
	if code, body := e.do("POST", "/api/pending/~q123", map[string]any{"action": "accept", "content": map[string]any{"colour": 7}}); code < 400 {
		t.Fatalf("a wrongly typed answer was accepted: %d %s", code, body)
	}
	if code, body := e.do("POST", "/api/pending/~q123", map[string]any{"action": "accept", "content": map[string]any{"colour": "green"}}); code != 200 {
		t.Fatalf("answer: %d %s", code, body)
	}
	list, _ := e.st.Interactions(context.Background(), "")
	var got store.Question
	json.Unmarshal(list[0].Payload, &got)
	if got.Answer == nil || got.Answer.Action != "accept" || got.Answer.Content["colour"] != "green" {
		t.Fatalf("answer in the store: %+v", got.Answer)
	}
	if _, body := e.do("GET", "/api/pending", nil); strings.Contains(body, "~q123") {
		t.Error("an answered question is still a card")
	}
}

// putQuestion stores a question as serve does for a host without forms.
func (e *env) putQuestion(id, schema string) {
	e.t.Helper()
	payload, _ := json.Marshal(&store.Question{Server: "demo", Message: "Choose", Schema: json.RawMessage(schema)})
	in := &store.Interaction{ID: id, Server: "demo", Kind: store.KindQuestion, Message: "a question", Payload: payload,
		CreatedAt: time.Now(), Expiry: time.Now().Add(time.Minute)}
	if err := e.st.PutInteraction(context.Background(), in); err != nil {
		e.t.Fatal(err)
	}
}

// storedAnswer waits for the stored question's answer.
func (e *env) storedAnswer(id string, within time.Duration) *store.Answer {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		list, _ := e.st.Interactions(context.Background(), "")
		for _, in := range list {
			var q store.Question
			if in.ID == id && json.Unmarshal(in.Payload, &q) == nil && q.Answer != nil {
				return q.Answer
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// TestMultiSelectQuestionsBecomeCards: MCP forms have multi-select fields
// (an array of enum strings) and titled choices (oneOf const/title). Such
// a question never reached the page, and the call that asked waited its
// whole timeout.
func TestMultiSelectQuestionsBecomeCards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.putQuestion("multi", `{"type":"object","properties":{
		"toppings":{"type":"array","title":"Toppings","items":{"type":"string","enum":["ham","olives","basil"]},"maxItems":2},
		"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
		"colours":{"type":"array","items":{"anyOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]}}
	},"required":["toppings"]}`)
	_, body := e.do("GET", "/api/pending", nil)
	if !strings.Contains(body, `"id":"~multi"`) || !strings.Contains(body, `"Large"`) || !strings.Contains(body, `"olives"`) {
		t.Fatalf("the multi-select question is not a card: %s", body)
	}
	for _, bad := range []map[string]any{
		{"toppings": []any{"ham", "pineapple"}},             // not a choice
		{"toppings": []any{"ham", "olives", "basil"}},       // more than maxItems
		{"toppings": "ham"},                                 // not a list
		{"toppings": []any{"ham"}, "size": "medium"},        // not a choice
		{"toppings": []any{"ham"}, "colours": []any{"Red"}}, // a title, not the value
	} {
		if code, body := e.do("POST", "/api/pending/~multi", map[string]any{"action": "accept", "content": bad}); code < 400 {
			t.Errorf("accepted %v: %d %s", bad, code, body)
		}
	}
	if code, body := e.do("POST", "/api/pending/~multi", map[string]any{"action": "accept", "content": map[string]any{
		"toppings": []any{"ham", "basil"}, "size": "l", "colours": []any{"g"}}}); code != 200 {
		t.Fatalf("answer: %d %s", code, body)
	}
	a := e.storedAnswer("multi", time.Second)
	if a == nil || a.Action != "accept" || len(a.Content["toppings"].([]any)) != 2 || a.Content["size"] != "l" {
		t.Errorf("answer in the store: %+v", a)
	}
}

// TestUndrawableStoredQuestionIsDeclinedAtOnce: a form the page cannot
// show is declined at once, so the call that asked does not wait for a
// card nobody sees.
func TestUndrawableStoredQuestionIsDeclinedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.putQuestion("nested", `{"type":"object","properties":{"address":{"type":"object","properties":{"street":{"type":"string"}}}}}`)
	if a := e.storedAnswer("nested", 5*time.Second); a == nil || a.Action != "decline" {
		t.Errorf("the question was not declined: %+v", a)
	}
}
