package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Both ways of sending a tool call: the manager's own POST (rawcall.go)
// and the go-sdk client's.
var callPaths = []struct {
	name string
	sdk  bool
}{{"raw", false}, {"go-sdk", true}}

// rawEras are the two kinds of server a call is sent to: a 2026-07-28 one,
// and a session-era one that issues a session ID (and answers 404 to one
// it does not know).
var rawEras = []struct {
	name string
	opts fake.HostileOptions
}{{"2026-07-28", fake.HostileOptions{Stateless: true}}, {"session era", fake.HostileOptions{Sessions: true}}}

// wireRecord is one POST as the server received it.
type wireRecord struct {
	Header http.Header
	Body   map[string]any
}

// recorder keeps the POSTs of the given methods.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]wireRecord
}

func (r *recorder) intercept(methods ...string) func(http.ResponseWriter, *http.Request, string, json.RawMessage, json.RawMessage) bool {
	return func(_ http.ResponseWriter, req *http.Request, method string, id, params json.RawMessage) bool {
		for _, m := range methods {
			if m != method {
				continue
			}
			var i, ps any
			json.Unmarshal(id, &i)
			json.Unmarshal(params, &ps)
			body := map[string]any{"id": i, "params": ps}
			h := req.Header.Clone()
			h.Del("Content-Length") // the JSON's spacing is the encoder's
			r.mu.Lock()
			if r.seen == nil {
				r.seen = map[string][]wireRecord{}
			}
			r.seen[method] = append(r.seen[method], wireRecord{h, body})
			r.mu.Unlock()
		}
		return false
	}
}

func (r *recorder) get(method string) []wireRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[method]
}

// headerTools is a catalog whose tool carries x-mcp-header annotations at
// every depth and of every type.
func headerTools(string) json.RawMessage {
	return json.RawMessage(`{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[
		{"name":"route","inputSchema":{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"note":{"type":"string","x-mcp-header":"Note"},
			"count":{"type":"integer","x-mcp-header":"Count"},
			"big":{"type":"integer","x-mcp-header":"Big"},
			"missing":{"type":"string","x-mcp-header":"Missing"},
			"empty":{"type":"string","x-mcp-header":"Empty"},
			"nothing":{"type":"string","x-mcp-header":"Nothing"},
			"neg":{"type":"integer","x-mcp-header":"Neg"},
			"huge":{"type":"integer","x-mcp-header":"Huge"},
			"sentinel":{"type":"string","x-mcp-header":"Sentinel"},
			"tab":{"type":"string","x-mcp-header":"Tab"},
			"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}}}}},
		{"name":"plain","inputSchema":{"type":"object"}}]}`)
}

// TestRawCallSendsWhatTheSDKSends: a call leaves as the go-sdk would send
// it, at both generations: the same headers (at 2026-07-28 Mcp-Param-*
// from the catalog's x-mcp-header annotations, base64 where the value is
// not plain ASCII; in the session era the session's ID), the same _meta,
// name and arguments (as the bytes they came as); and a call abandoned
// before its answer is followed by the same notifications/cancelled.
func TestRawCallSendsWhatTheSDKSends(t *testing.T) {
	t.Parallel()
	for _, era := range rawEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			rawCallSendsWhatTheSDKSends(t, era.opts)
		})
	}
}

func rawCallSendsWhatTheSDKSends(t *testing.T, opts fake.HostileOptions) {
	args := `{"region":"eu-west","note":" ünïcode ","count":3.0,"big":1.5,"empty":"","nothing":null,"opts":{"dry":true},"extra":[1,2],` +
		`"neg":-5,"huge":9007199254740993,"sentinel":"=?base64?eA==?=","tab":"a\tb"}`
	got := map[string]*recorder{}
	for _, p := range callPaths {
		rec := &recorder{}
		got[p.name] = rec
		o := opts
		o.ToolsList = headerTools
		o.Intercept = rec.intercept("tools/call", "notifications/cancelled")
		o.CallTool = func(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
			if strings.Contains(string(params), `"slow"`) {
				<-r.Context().Done()
				return
			}
			fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`))
		}
		h := fake.StartHostile(t, o)
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		m := newManager(t, &Options{sdkCalls: p.sdk, OnLog: func(string, *mcp.LoggingMessageParams) {}}, cfg("s", h.URL))
		ctx := ctxT(t, 10*time.Second)
		if _, err := m.CallTool(ctx, "s", "route", raw(args), &CallOptions{Progress: func(*mcp.ProgressNotificationParams) {}}); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if _, err := m.CallTool(ctx, "s", "plain", nil, nil); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if _, err := m.CallTool(ctx, "s", "plain", raw(`{"x":"slow"}`), &CallOptions{Timeout: 100 * time.Millisecond}); !errors.Is(err, mcpgate.ErrTimeout) {
			t.Fatalf("%s: slow call: %v, want a timeout", p.name, err)
		}
		eventually(t, "the cancellation", func() bool { return len(rec.get("notifications/cancelled")) == 1 })
	}

	raw, sdk := got["raw"].get("tools/call"), got["go-sdk"].get("tools/call")
	if len(raw) != 3 || len(sdk) != 3 {
		t.Fatalf("tools/call sent %d times raw, %d through the go-sdk; want 3 each", len(raw), len(sdk))
	}
	// Each path has a session of its own: the IDs differ, their presence
	// must not.
	sessionIDs := func(h http.Header) http.Header {
		if opts.Sessions {
			if h.Get("Mcp-Session-Id") == "" {
				t.Errorf("a request without the session's ID: %v", h)
			}
			h.Set("Mcp-Session-Id", "the session's")
		}
		return h
	}
	callID := raw[2].Body["id"]
	for i := range raw {
		if diff := cmp.Diff(sessionIDs(sdk[i].Header), sessionIDs(raw[i].Header)); diff != "" {
			t.Errorf("call %d: headers differ (-go-sdk +raw):\n%s", i, diff)
		}
		delete(raw[i].Body, "id")
		delete(sdk[i].Body, "id")
		if diff := cmp.Diff(sdk[i].Body, raw[i].Body); diff != "" {
			t.Errorf("call %d: bodies differ (-go-sdk +raw):\n%s", i, diff)
		}
	}
	want := http.Header{"Mcp-Param-Region": {"eu-west"}, "Mcp-Param-Note": {"=?base64?IMO8bsOvY29kZSA=?="},
		"Mcp-Param-Count": {"3"}, "Mcp-Param-Empty": {""}, "Mcp-Param-Dry-Run": {"true"}, "Mcp-Param-Neg": {"-5"},
		"Mcp-Param-Sentinel": {"=?base64?PT9iYXNlNjQ/ZUE9PT89?="}, "Mcp-Param-Tab": {"=?base64?YQli?="}}
	if !opts.Stateless {
		want = nil // the standard headers are 2026-07-28's
	}
	for k := range raw[0].Header {
		if strings.HasPrefix(k, "Mcp-Param-") && want[k] == nil {
			t.Errorf("unexpected header %s: %q", k, raw[0].Header[k])
		}
	}
	for k, v := range want {
		if got := raw[0].Header[k]; !cmp.Equal(got, v) {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}

	if raw[0].Body["params"] == nil {
		t.Fatalf("no params recorded: %v", raw[0].Body)
	}
	rc, sc := got["raw"].get("notifications/cancelled")[0], got["go-sdk"].get("notifications/cancelled")[0]
	if diff := cmp.Diff(sessionIDs(sc.Header), sessionIDs(rc.Header)); diff != "" {
		t.Errorf("notifications/cancelled headers differ (-go-sdk +raw):\n%s", diff)
	}
	rp, sp := rc.Body["params"].(map[string]any), sc.Body["params"].(map[string]any)
	if rp["reason"] != sp["reason"] || rp["requestId"] != callID {
		t.Errorf("raw notifications/cancelled %v, want the reason %q and the call's id", rc.Body, sp["reason"])
	}
}

// TestRawCallUsedAtEveryGeneration: a server's calls are the manager's
// own at every generation; with Options.ClientMiddleware they are the
// go-sdk's, whose requests the middleware sees.
func TestRawCallUsedAtEveryGeneration(t *testing.T) {
	t.Parallel()
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			srv := fake.Start(t, &fake.Options{Versions: g.versions})
			for _, middleware := range []bool{false, true} {
				var seen atomic.Int32
				opts := &Options{}
				if middleware {
					opts.ClientMiddleware = func(string) mcp.Middleware {
						return func(next mcp.MethodHandler) mcp.MethodHandler {
							return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
								if method == "tools/call" {
									seen.Add(1)
								}
								return next(ctx, method, req)
							}
						}
					}
				}
				m := newManager(t, opts, cfg("s", srv.URL))
				res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`{"text":"hi"}`), nil)
				if err != nil || text(t, res) != "hi" {
					t.Fatalf("echo: %v", err)
				}
				// At 2026-07-28 the server names itself in the result's
				// _meta; the result reads as at the session era.
				if _, ok := res.Meta[mcp.MetaKeyServerInfo]; ok || res.NeedsInput() {
					t.Errorf("middleware %v: the result keeps the server's identity (%v) or asks for input", middleware, res.Meta)
				}
				s, _ := m.server("s")
				s.mu.Lock()
				sess := s.sess
				s.mu.Unlock()
				if (sess.raw == nil) != middleware || (seen.Load() == 1) != middleware {
					t.Errorf("at %s with middleware %v: the raw call is set %v, the middleware saw %d calls",
						sess.protocol, middleware, sess.raw != nil, seen.Load())
				}
			}
		})
	}
}

// TestRawCallFailsAsTheSDKDoes: every way a server can answer a call badly
// gives the same error (category, message, status, code) and leaves the
// server in the same state on both paths, at both generations; in the
// session era so does every way a resumption of a broken stream goes.
func TestRawCallFailsAsTheSDKDoes(t *testing.T) {
	t.Parallel()
	sse := func(w http.ResponseWriter, events ...string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			io.WriteString(w, e)
		}
	}
	answer := func(id json.RawMessage, result string) string {
		return fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result)
	}
	status := func(code int, ct, body string) func(http.ResponseWriter, *http.Request, json.RawMessage, json.RawMessage) {
		return func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.WriteHeader(code)
			io.WriteString(w, strings.ReplaceAll(body, "ID", string(id)))
		}
	}
	// A stream broken after an event with an ID, asking to be resumed
	// 10 ms later.
	broken := func(w http.ResponseWriter, _ *http.Request, _, _ json.RawMessage) {
		sse(w, "id: e1\nretry: 10\ndata:\n\n")
	}
	type resumption func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int)
	type failure struct {
		name string
		call func(http.ResponseWriter, *http.Request, json.RawMessage, json.RawMessage)
		// resume answers the n-th GET with Last-Event-ID, for the call id;
		// a case with one runs only in the session era.
		resume resumption
	}
	for _, c := range []failure{
		{"JSON-RPC error", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			fake.WriteError(w, id, -32602, "no such \x1b[31mthing")
		}, nil},
		{"JSON-RPC error on SSE", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32000,\"message\":\"boom\"}}\n\n", id))
		}, nil},
		{"tool error", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"text","text":"bad"}],"isError":true}`))
		}, nil},
		{"notifications then the answer", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, ": comment\n\n", "event: ping\ndata: x\n\n", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"a\"}}\n\n",
				"data: {\"jsonrpc\":\"2.0\",\"id\":\"other\",\"result\":{}}\n\n", answer(id, `{"content":[{"type":"text","text":"ok"}]}`))
		}, nil},
		{"not a result", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"nonsense"}]}`))
		}, nil},
		{"500", status(500, "text/plain", "internal "+fake.LeakCanary), nil},
		{"503", status(503, "", ""), nil},
		{"429", status(429, "", ""), nil},
		{"404", status(404, "text/plain", "not found"), nil},
		{"400 with a JSON-RPC error", status(400, "application/json", `{"jsonrpc":"2.0","id":ID,"error":{"code":-32600,"message":"bad request"}}`), nil},
		{"409", status(409, "text/plain", "conflict"), nil},
		{"401", status(401, "text/plain", "who are you"), nil},
		{"403", status(403, "text/plain", "no"), nil},
		{"200 text/html", status(200, "text/html", "<html>hello</html>"), nil},
		{"202", status(202, "", ""), nil},
		{"invalid JSON", status(200, "application/json", `{"jsonrpc":"2.0","id":ID,"result":`), nil},
		{"SSE without an answer", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) { sse(w, ": nothing\n\n") }, nil},
		{"SSE cut in an event", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, answer(id, `{"content":[]}`)[:30])
		}, nil},
		{"SSE malformed line", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, "garbage\n\n", answer(id, `{}`))
		}, nil},
		{"SSE event not JSON", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, "data: {nope\n\n", answer(id, `{}`))
		}, nil},
		{"connection dropped", fake.DropConnection().Call, nil},
		{"SSE over the body bound", fake.HugeResultSSE(2 << 20).Call, nil},
		{"JSON over the body bound", fake.HugeResult(2 << 20).Call, nil},
		{"SSE under the body bound", fake.HugeResultSSE(200 << 10).Call, nil},
		{"SSE resumed", broken, func(w http.ResponseWriter, r *http.Request, id json.RawMessage, _ int) {
			if r.Header.Get("Last-Event-ID") != "e1" {
				http.Error(w, "wrong Last-Event-ID", http.StatusBadRequest)
				return
			}
			sse(w, answer(id, `{"content":[{"type":"text","text":"resumed"}]}`))
		}},
		{"SSE resumed after the backoff", func(w http.ResponseWriter, _ *http.Request, _, _ json.RawMessage) {
			sse(w, "id: e1\ndata:\n\n") // no retry: the go-sdk's own delay, 1 to 2 s
		}, func(w http.ResponseWriter, _ *http.Request, id json.RawMessage, _ int) {
			sse(w, answer(id, `{"content":[{"type":"text","text":"resumed"}]}`))
		}},
		{"SSE resumed twice", broken, func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int) {
			if n == 1 {
				sse(w, "id: e2\nretry: 10\ndata:\n\n")
				return
			}
			sse(w, answer(id, `{"content":[{"type":"text","text":"resumed at `+r.Header.Get("Last-Event-ID")+`"}]}`))
		}},
		{"SSE resumed without IDs", broken, func(w http.ResponseWriter, _ *http.Request, _ json.RawMessage, _ int) {
			sse(w, ": nothing\n\n")
		}},
		{"SSE resumed without progress", broken, func(w http.ResponseWriter, _ *http.Request, _ json.RawMessage, _ int) {
			sse(w, "id: e1\nretry: 10\ndata:\n\n")
		}},
		{"SSE resumed over the body bound", broken, func(w http.ResponseWriter, r *http.Request, id json.RawMessage, _ int) {
			fake.HugeResultSSE(2<<20).Call(w, r, id, nil)
		}},
		{"SSE resumption 404", broken, func(w http.ResponseWriter, r *http.Request, _ json.RawMessage, _ int) {
			http.Error(w, "session not found", http.StatusNotFound)
		}},
		{"SSE resumption 503", broken, func(w http.ResponseWriter, r *http.Request, _ json.RawMessage, _ int) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}},
		{"SSE resumption 400 with a JSON-RPC error", broken, func(w http.ResponseWriter, r *http.Request, _ json.RawMessage, _ int) {
			fake.WriteError(w, nil, -32600, "no resuming")
		}},
	} {
		for _, era := range rawEras {
			if c.resume != nil && era.opts.Stateless {
				continue
			}
			t.Run(c.name+"/"+era.name, func(t *testing.T) {
				t.Parallel()
				rawCallFailsAsTheSDKDoes(t, era.opts, c.call, c.resume)
			})
		}
	}
}

func rawCallFailsAsTheSDKDoes(t *testing.T, opts fake.HostileOptions, call func(http.ResponseWriter, *http.Request, json.RawMessage, json.RawMessage), resume func(http.ResponseWriter, *http.Request, json.RawMessage, int)) {
	type outcome struct {
		Err   *mcpgate.Error
		Text  string
		State mcpgate.State
		Info  *ErrorInfo
		Next  string // a second call, answered well
	}
	var outs []outcome
	for _, p := range callPaths {
		var calls, resumes atomic.Int32
		var first atomic.Value // the first call's id
		o := opts
		o.CallTool = func(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
			if calls.Add(1) == 1 {
				first.Store(id)
				call(w, r, id, params)
				return
			}
			fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"text","text":"pong"}]}`))
		}
		if resume != nil {
			o.Intercept = func(w http.ResponseWriter, r *http.Request, _ string, _, _ json.RawMessage) bool {
				if r.Method != http.MethodGet || r.Header.Get("Last-Event-ID") == "" {
					return false
				}
				id, _ := first.Load().(json.RawMessage)
				resume(w, r, id, int(resumes.Add(1)))
				return true
			}
		}
		h := fake.StartHostile(t, o)
		m := newManager(t, &Options{sdkCalls: p.sdk, Limits: Limits{MaxResponseBytes: 1 << 20},
			streamPolicy: reconnectPolicy{floor: time.Millisecond, initial: time.Millisecond, max: 10 * time.Millisecond,
				stable: time.Second, perMinute: 100, failures: 5}}, cfg("s", h.URL))
		if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
			t.Fatal(err)
		}
		res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil)
		var out outcome
		if err != nil {
			if !errors.As(err, &out.Err) {
				t.Fatalf("%s: %T %v is not an attributed error", p.name, err, err)
			}
			out.Err = &mcpgate.Error{Category: out.Err.Category, Message: out.Err.Message, HTTPStatus: out.Err.HTTPStatus, Code: out.Err.Code}
		} else {
			out.Text = text(t, res) + fmt.Sprint(res.IsError)
		}
		// The raw path ends a session it takes for broken before the
		// call returns; the go-sdk a moment after, on another goroutine:
		// its state is waited for, the longer where the raw path's
		// changed.
		wait := time.Duration(0)
		if p.sdk {
			wait = 250 * time.Millisecond
			if outs[0].State != mcpgate.StateReady {
				wait = 1500 * time.Millisecond
			}
		}
		deadline := time.Now().Add(wait)
		for {
			st := mustStatus(t, m, "s")
			out.State, out.Info = st.State, st.Error
			if out.Info != nil {
				// Which of "session" and "calling ping" says it is a race
				// on the go-sdk's path: its session ends on another
				// goroutine.
				i := *out.Info
				_, i.Message, _ = strings.Cut(i.Message, ": ")
				out.Info = &i
			}
			if st.State != mcpgate.StateReady || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil); err != nil {
			out.Next = err.Error()
		} else {
			out.Next = text(t, res)
		}
		outs = append(outs, out)
	}
	if diff := cmp.Diff(outs[1], outs[0]); diff != "" {
		t.Errorf("outcomes differ (-go-sdk +raw):\n%s", diff)
	}
	// A session the call's failure ended says why as the call did: the
	// SDK's watcher and the raw path tell it from the session's last
	// answer, not only the call that saw it.
	for i, o := range outs {
		if o.State != mcpgate.StateError || o.Err == nil || o.Info == nil {
			continue
		}
		if _, why, _ := strings.Cut(o.Err.Message, ": "); o.Info.Message != why {
			t.Errorf("%s: the status says %q where the call said %q", callPaths[i].name, o.Info.Message, why)
		}
	}
	if outs[0].Err != nil && strings.Contains(outs[0].Err.Message, fake.LeakCanary) {
		t.Errorf("the error quotes the server's body: %s", outs[0].Err.Message)
	}
}

// TestResumedStreamIsBounded: the resumption of a broken response stream
// is held to the body bound as the POST it resumes is, on both paths: a
// server cannot send more through a GET with Last-Event-ID than through
// the call.
func TestResumedStreamIsBounded(t *testing.T) {
	t.Parallel()
	for _, p := range callPaths {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			var first atomic.Value
			h := fake.StartHostile(t, fake.HostileOptions{Sessions: true,
				CallTool: func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
					first.Store(id)
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "id: e1\nretry: 10\ndata:\n\n")
				},
				Intercept: func(w http.ResponseWriter, r *http.Request, _ string, _, _ json.RawMessage) bool {
					if r.Method != http.MethodGet || r.Header.Get("Last-Event-ID") == "" {
						return false
					}
					id, _ := first.Load().(json.RawMessage)
					fake.HugeResultSSE(2<<20).Call(w, r, id, nil)
					return true
				}})
			m := newManager(t, &Options{sdkCalls: p.sdk, Limits: Limits{MaxResponseBytes: 1 << 20}}, cfg("s", h.URL))
			_, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil)
			var e *mcpgate.Error
			if !errors.As(err, &e) || !strings.Contains(e.Message, "exceeded the size bound") {
				t.Fatalf("a resumption of 2 MiB under a bound of 1 MiB: %v", err)
			}
		})
	}
}

// TestHeaderPlanIsMadeOncePerCatalogEntry: a tool's x-mcp-header
// annotations are found once for each catalog entry, not on every call; a
// new entry (a new listing) gets a new plan.
func TestHeaderPlanIsMadeOncePerCatalogEntry(t *testing.T) {
	t.Parallel()
	var schema map[string]any
	json.Unmarshal([]byte(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}`), &schema)
	rc := newRawCalls(version20260728, &mcp.Implementation{Name: "t"}, "")
	tool := &mcp.Tool{Name: "t", InputSchema: schema}
	plan := func(tool *mcp.Tool, arg string) (*paramHeader, string) {
		h := http.Header{}
		rc.paramHeaders(tool, raw(`{"r":"`+arg+`"}`), h)
		return &rc.plans["t"].headers[0], h.Get("Mcp-Param-R")
	}
	first, v1 := plan(tool, "a")
	again, v2 := plan(tool, "b")
	if first != again || v1 != "a" || v2 != "b" {
		t.Errorf("the second call made a new plan (%v) or sent %q, %q", first != again, v1, v2)
	}
	relisted := *tool
	if next, _ := plan(&relisted, "c"); next == first {
		t.Error("a new catalog entry kept the old plan")
	}
}

// TestServerRequestOnACallStreamIsAnswered: a request the server sends on
// a call's stream gets the go-sdk client's answer, at both generations,
// so the server does not wait for one that never comes: a ping, no roots,
// sampling refused, an elicitation checked, asked and its answer checked.
func TestServerRequestOnACallStreamIsAnswered(t *testing.T) {
	t.Parallel()
	form := `{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer","default":3}},"required":["name"]}}`
	for _, c := range []struct {
		name, method, params string
		answer               map[string]any // what Options.Elicit answers; nil declines
		want                 string         // in the raw path's answer
	}{
		{"ping", "ping", `{}`, nil, `{"body":{},"result":true}`},
		{"sampling", "sampling/createMessage", `{"messages":[],"maxTokens":1}`, nil, `"code":-31001`},
		{"roots", "roots/list", `{}`, nil, `"roots":[]`},
		{"unknown", "tools/list", `{}`, nil, `"code":-32601`},
		{"elicitation accepted", "elicitation/create", form, map[string]any{"name": "Ada"}, `"size":3`},
		{"elicitation declined", "elicitation/create", form, nil, `"action":"decline"`},
		{"elicitation answered against its schema", "elicitation/create", form, map[string]any{"name": 7}, `"code":-32602`},
		{"elicitation of a nested form", "elicitation/create",
			`{"message":"?","requestedSchema":{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}}`, nil, `"code":-32602`},
		{"elicitation by URL without one", "elicitation/create", `{"mode":"url","message":"?","elicitationId":"e"}`, nil, `"code":-32602`},
		{"elicitation of an unknown mode", "elicitation/create", `{"mode":"telepathy","message":"?"}`, nil, `"code":-32602`},
	} {
		for _, era := range rawEras {
			t.Run(c.name+"/"+era.name, func(t *testing.T) {
				t.Parallel()
				var answers []string
				for _, p := range callPaths {
					got := serverRequestAnswer(t, era.opts, p.sdk, c.method, c.params, c.answer)
					if p.name == "raw" && !strings.Contains(got, c.want) {
						t.Errorf("the server's %s was answered %s, want %s", c.method, got, c.want)
					}
					answers = append(answers, got)
				}
				if diff := cmp.Diff(answers[1], answers[0]); diff != "" {
					t.Errorf("answers differ (-go-sdk +raw):\n%s", diff)
				}
			})
		}
	}
}

// serverRequestAnswer makes a call during which the server asks method
// with params on the call's stream, and returns the client's answer as
// the server got it (its result or error, as canonical JSON).
func serverRequestAnswer(t *testing.T, opts fake.HostileOptions, sdk bool, method, params string, answer map[string]any) string {
	answers := make(chan string, 1)
	o := opts
	o.CallTool = func(w http.ResponseWriter, r *http.Request, id, _ json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":%q,\"params\":%s}\n\n", method, params)
		http.NewResponseController(w).Flush()
		var got string
		select {
		case got = <-answers:
		case <-time.After(5 * time.Second):
		}
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%q}]}}\n\n", id, got)
	}
	o.Intercept = func(w http.ResponseWriter, r *http.Request, m string, id, _ json.RawMessage) bool {
		if m != "" || r.Method != http.MethodPost {
			return false
		}
		var msg struct {
			ID     string          `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(peek(r)), &msg) == nil && msg.ID == "srv-1" {
			var v any
			if msg.Result != nil {
				json.Unmarshal(msg.Result, &v)
			} else {
				json.Unmarshal(msg.Error, &v)
			}
			b, _ := json.Marshal(map[string]any{"result": msg.Result != nil, "body": v})
			answers <- string(b)
		}
		return false
	}
	h := fake.StartHostile(t, o)
	elicit := func(context.Context, *ElicitRequest) (*mcp.ElicitResult, error) {
		if answer == nil {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: cloneMap(answer)}, nil
	}
	m := newManager(t, &Options{sdkCalls: sdk, Elicit: elicit}, cfg("s", h.URL))
	res, err := m.CallTool(ctxT(t, 20*time.Second), "s", "ping", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return text(t, res)
}

// FuzzTextResult: a tools/call result read in place (textResult) is what
// the go-sdk's decoding makes of it, unexported fields included, whenever
// the fast path takes it; and the common results do take it.
func FuzzTextResult(f *testing.F) {
	common := []string{
		`{"content":[{"type":"text","text":"pong"}]}`,
		`{"content":[{"type":"text","text":"{\"temperature\":21}"}],"isError":false}`,
		` { "isError" : true , "content" : [ { "text" : "no such city" , "type" : "text" } , {"type":"text","text":""} ] } `,
		`{"content":[]}`,
		`{"content":[{"type":"text","text":"caf\u00e9 \ud83d\ude00 ` + "\u00e9" + `"}]}`,
		// 2026-07-28: what the go-sdk's server adds to every result.
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","title":"Fake","version":"1.0.0"}},"content":[{"type":"text","text":"ping"}],"resultType":"complete"}`,
		`{"content":[],"isError":true,"resultType":"complete"}`,
	}
	for _, s := range common {
		if _, ok := textResult([]byte(s)); !ok {
			f.Fatalf("the fast path did not take %s", s)
		}
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a"}],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"a"}, 1]}`,
		`{"content":[{"type":"text","text":"a"}],"content":[]}`,
		`{"Content":[{"type":"text","text":"a"}]}`,
		`{"cont\u0065nt":[{"typ\u0065":"text","text":"a"}]}`,
		`{"content":[{"type":"text","text":"\ud800 lone"}]}`,
		`{"content":[{"type":"text","text":null}]}`,
		`{"content":null,"isError":null}`,
		`{"content":[{"type":"text","type":"text","text":"a"}]}`,
		`{"resultType":"complete","content":[]}`,
		`{"resultType":"input_required","content":[]}`,
		`{"resultType":"complete","resultType":"complete","content":[]}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{},"k":1},"content":[]}`,
		`{"_meta":{"io.modelcontextprotocol\/serverInfo":1},"content":[]}`,
		`{"_meta":null,"content":[]}`,
		`{"_meta":{},"content":[]}`,
		`{"_meta":{},"_meta":{"k":1},"content":[]}`,
		`[]`, `null`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		got, ok := textResult(raw)
		if !ok {
			return
		}
		var want mcp.CallToolResult
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("the fast path took %s, which the go-sdk refuses: %v", raw, err)
		}
		dropServerInfo(&want) // as callTool does to either
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("%s:\nfast path %#v\ngo-sdk    %#v", raw, got, &want)
		}
	})
}

// BenchmarkTextResult: a common tools/call result read in place against
// the go-sdk's decoding of it, in the same run.
//
//	go test -run '^$' -bench TextResult -benchmem ./manager/
func BenchmarkTextResult(b *testing.B) {
	for _, c := range []struct{ name, raw string }{
		{"session-era", `{"content":[{"type":"text","text":"{\"temperature\":21,\"conditions\":\"sunny\"}"}],"isError":false}`},
		// What a go-sdk server of 2026-07-28 adds to every result.
		{"2026", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"weather","title":"Weather","version":"1.0.0"}},"content":[{"type":"text","text":"{\"temperature\":21,\"conditions\":\"sunny\"}"}],"resultType":"complete"}`},
	} {
		raw := []byte(c.raw)
		b.Run(c.name+"/in-place", func(b *testing.B) {
			for b.Loop() {
				if _, ok := textResult(raw); !ok {
					b.Fatal("not taken")
				}
			}
		})
		b.Run(c.name+"/go-sdk", func(b *testing.B) {
			for b.Loop() {
				var res mcp.CallToolResult
				if err := json.Unmarshal(raw, &res); err != nil {
					b.Fatal(err)
				}
				dropServerInfo(&res)
			}
		})
	}
}

// FuzzDecodeMessage: a message read in place (scanMessage) is what
// json.Unmarshal makes of it whenever the fast path takes it; and the
// messages a server sends do take it.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"mcpgate-call-1","result":{"content":[{"type":"text","text":"pong"}]}}`,
		` {"result":{},"id":7,"jsonrpc":"2.0"} `,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool","data":{"a":[1]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
		`{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{"message":"caf\u00e9?"},"extra":[1,{"b":null}]}`,
		`{"jsonrpc":"2.0","id":null,"result":null,"error":null}`,
	} {
		if _, ok := scanMessage([]byte(s)); !ok {
			f.Fatalf("the fast path did not take %s", s)
		}
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","Result":{},"id":1}`,
		`{"jsonrpc":"2.0","result":{},"result":[],"id":1}`,
		`{"jsonrpc":2,"id":1}`,
		`{"jsonrpc":"2.0","method":null}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","\u0069d":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}`,
		`[{"jsonrpc":"2.0"}]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := scanMessage(b)
		if !ok {
			return
		}
		var want rpcMessage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("the fast path took %q, which json.Unmarshal refuses: %v", b, err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("%q:\nfast path %#v\nUnmarshal %#v", b, got, &want)
		}
	})
}

// The raw call tells the request log its POST's method and tool instead
// of having the body read back (withKnownSummary): what it tells is what
// reading the body it built would have found, at both generations.
func TestRawCallKnowsItsSummary(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", version20260728} {
		rc := newRawCalls(protocol, &mcp.Implementation{Name: "mcpgate", Version: "1"}, "sess-1")
		for _, name := range []string{"echo", "tool.with-dots_and\"quote", "caf\u00e9 \\ tool"} {
			body, err := rc.body("mcpgate-call-1", name, json.RawMessage(`{"a":"b"}`), mcp.Meta{"progressToken": 7}, nil, "state")
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequestWithContext(withKnownSummary(t.Context(), "tools/call", name), http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			method, tool, ok := bodySummary(req)
			known := newBodySummary(req)
			kMethod, kTool, kOK := known.get()
			if !ok || method != kMethod || tool != kTool || ok != kOK {
				t.Errorf("%s, %q: the body says %q %q (%v), the call told %q %q (%v)", protocol, name, method, tool, ok, kMethod, kTool, kOK)
			}
		}
	}
}
