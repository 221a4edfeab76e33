package serve_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answering is a host's elicitation handler that accepts with answer-N
// and records the messages it was shown.
type answering struct {
	mu    sync.Mutex
	asked []string
}

func (a *answering) handler(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Params.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes-" + string(rune('0'+len(a.asked)))}}, nil
}

// A remote server that asks twice during one call reaches the person at
// every generation: session-era hosts get elicitation/create, 2026-07-28
// hosts InputRequiredResults (the go-sdk client retries by itself). The
// session-era hosts here do not understand InputRequiredResults, as the
// TypeScript SDK does not: the go-sdk server would turn one round of them
// into elicitation/create for such a host, but only one.
func TestElicitationAtEveryGeneration(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	srv := fake.Start(t, nil)
	each(t, func(t *testing.T, version string) {
		for _, direct := range []bool{false, true} {
			a := &answering{}
			opts := &mcp.ClientOptions{ElicitationHandler: a.handler}
			if version < "2026-07-28" {
				opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
			}
			r := startHost(t, host{direct: direct, version: version, client: opts}, cfg("up", url), cfg("demo", srv.URL))
			params := &mcp.CallToolParams{Name: "mcp__up__asktwice"}
			if !direct {
				params = &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"up","tool":"asktwice"}`)}
			}
			res, err := r.cs.CallTool(ctx10(t), params)
			if err != nil || !strings.Contains(textOf(res), "accept:yes-1 accept:yes-2") {
				t.Fatalf("direct=%v: %v %s", direct, err, textOf(res))
			}
			servedBy(t, r, version, 1)
			a.mu.Lock()
			if len(a.asked) != 2 || a.asked[0] != "[up asks] first?" || a.asked[1] != "[up asks] second?" {
				t.Errorf("direct=%v: the person was asked %q", direct, a.asked)
			}
			a.mu.Unlock()
		}
		// The fake's ask tool, with the defaults its schema gives.
		r := startHost(t, host{version: version, client: &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
			}}}, cfg("demo", srv.URL))
		out, _ := callMCP(t, r.cs, `{"action":"call","server":"demo","tool":"ask"}`)
		if !strings.Contains(out, "accepted: name=Grace lucky=7") {
			t.Errorf("the fake's ask: %s", out)
		}
	})
}

// manualHost is a 2026-07-28 host that handles InputRequiredResults
// itself, to show what goes over the wire.
func manualHost(t *testing.T) *running {
	return startHost(t, host{direct: true, version: "2026-07-28", client: &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { panic("not called") },
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	}}, cfg("up", upstream(t, catalog)))
}

func answer(key, text string) mcp.InputResponseMap {
	return mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": text}}}
}

func invalidParams(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams
}

func TestRequestStateIsBoundSingleUseAndHoldsNoSecret(t *testing.T) {
	t.Parallel()
	r := manualHost(t)
	ctx := ctx10(t)
	call := func(p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
		p.Name = "mcp__up__asktwice"
		return r.cs.CallTool(ctx, p)
	}
	res, err := call(&mcp.CallToolParams{})
	if err != nil || !res.NeedsInput() || res.RequestState == "" || len(res.Content) != 0 {
		t.Fatalf("first round: %v %+v", err, res)
	}
	q, ok := res.InputRequests["elicit-1"].(*mcp.ElicitParams)
	if !ok || q.Message != "[up asks] first?" || q.Mode != "form" {
		t.Fatalf("input requests: %+v", res.InputRequests)
	}
	state := res.RequestState
	body, _, _ := strings.Cut(state, ".")
	raw, err := base64.RawURLEncoding.DecodeString(body)
	var fields map[string]any
	if err != nil || json.Unmarshal(raw, &fields) != nil || len(fields) != 4 {
		t.Errorf("requestState payload: %s", raw)
	}

	tampered := strings.Replace(state, body, base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"s":1`, `"s":2`, 1))), 1)
	if _, err := call(&mcp.CallToolParams{RequestState: tampered, InputResponses: answer("elicit-1", "x")}); !invalidParams(err) {
		t.Errorf("a tampered requestState: %v", err)
	}
	if _, err := call(&mcp.CallToolParams{Arguments: map[string]any{"other": 1}, RequestState: state, InputResponses: answer("elicit-1", "x")}); !invalidParams(err) {
		t.Errorf("a requestState presented with other arguments: %v", err)
	}
	res, err = call(&mcp.CallToolParams{RequestState: state})
	if err != nil || !res.NeedsInput() || res.InputRequests["elicit-1"] == nil {
		t.Fatalf("a retry without the answer is asked again: %v %+v", err, res)
	}
	state = res.RequestState
	res, err = call(&mcp.CallToolParams{RequestState: state, InputResponses: answer("elicit-1", "one")})
	if err != nil || !res.NeedsInput() || res.InputRequests["elicit-2"] == nil {
		t.Fatalf("second round: %v %+v", err, res)
	}
	if _, err := call(&mcp.CallToolParams{RequestState: state, InputResponses: answer("elicit-1", "again")}); !invalidParams(err) {
		t.Errorf("a used requestState was accepted again: %v", err)
	}
	res, err = call(&mcp.CallToolParams{RequestState: res.RequestState, InputResponses: answer("elicit-2", "two")})
	if err != nil || res.NeedsInput() || !strings.Contains(textOf(res), "accept:one accept:two") {
		t.Fatalf("final round: %v %+v", err, res)
	}
}

func TestAbandonedAndExcessRoundsAreBounded(t *testing.T) {
	// Not in parallel: it changes how long every call is parked.
	serve.SetParking(t, 200*time.Millisecond, 1)
	r := manualHost(t)
	ctx := ctx10(t)
	first, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__up__asktwice"})
	if err != nil || !first.NeedsInput() {
		t.Fatalf("first call: %v %+v", err, first)
	}
	// One call waits already: a second one's questions are declined.
	res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__up__asktwice", Arguments: map[string]any{}})
	if err != nil || res.NeedsInput() || !strings.Contains(textOf(res), "decline:<nil> decline:<nil>") {
		t.Fatalf("over the bound: %v %+v", err, res)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__up__asktwice", RequestState: first.RequestState, InputResponses: answer("elicit-1", "late")}); !invalidParams(err) {
		t.Errorf("a retry after the call was abandoned: %v", err)
	}
}

// A call waiting for a 2026-07-28 host's answer ends, and the remote
// server hears of it, when the host goes away.
func TestHostLeavingCancelsWaitingCalls(t *testing.T) {
	t.Parallel()
	ended := make(chan string, 1)
	url := upstream(t, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: "still there?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)})
			if err != nil {
				ended <- "error"
				return nil, err
			}
			ended <- res.Action
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil
		})
	})
	r := startHost(t, host{direct: true, version: "2026-07-28", client: &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { panic("not called") },
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	}}, cfg("up", url))
	res, err := r.cs.CallTool(ctx10(t), &mcp.CallToolParams{Name: "mcp__up__wait"})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first round: %v %+v", err, res)
	}
	r.cs.Close()
	select {
	case got := <-ended:
		if got != "cancel" && got != "error" {
			t.Errorf("the remote server's question was answered %q after the host left", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the remote call still waits after the host left")
	}
}
