package manager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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

// Both ways of sending a 2026-07-28 tool call: the manager's own POST
// (rawcall.go) and the go-sdk client's.
var callPaths = []struct {
	name string
	sdk  bool
}{{"raw", false}, {"go-sdk", true}}

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

// TestRawCallSendsWhatTheSDKSends: a 2026-07-28 call leaves as the go-sdk
// would send it: the same headers (Mcp-Param-* from the catalog's
// x-mcp-header annotations, base64 where the value is not plain ASCII),
// the same _meta, name and arguments (as the bytes they came as); and a
// call abandoned before its answer is followed by the same
// notifications/cancelled.
func TestRawCallSendsWhatTheSDKSends(t *testing.T) {
	t.Parallel()
	args := `{"region":"eu-west","note":" ünïcode ","count":3.0,"big":1.5,"empty":"","nothing":null,"opts":{"dry":true},"extra":[1,2],` +
		`"neg":-5,"huge":9007199254740993,"sentinel":"=?base64?eA==?=","tab":"a\tb"}`
	got := map[string]*recorder{}
	for _, p := range callPaths {
		rec := &recorder{}
		got[p.name] = rec
		h := fake.StartHostile(t, fake.HostileOptions{Stateless: true, ToolsList: headerTools,
			Intercept: rec.intercept("tools/call", "notifications/cancelled"),
			CallTool: func(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
				if strings.Contains(string(params), `"slow"`) {
					<-r.Context().Done()
					return
				}
				fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`))
			}})
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
	callID := raw[2].Body["id"]
	for i := range raw {
		if diff := cmp.Diff(sdk[i].Header, raw[i].Header); diff != "" {
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
	if diff := cmp.Diff(sc.Header, rc.Header); diff != "" {
		t.Errorf("notifications/cancelled headers differ (-go-sdk +raw):\n%s", diff)
	}
	rp, sp := rc.Body["params"].(map[string]any), sc.Body["params"].(map[string]any)
	if rp["reason"] != sp["reason"] || rp["requestId"] != callID {
		t.Errorf("raw notifications/cancelled %v, want the reason %q and the call's id", rc.Body, sp["reason"])
	}
}

// TestRawCallUsedOnlyAt20260728: session-era servers keep the go-sdk's
// call; a 2026-07-28 server's calls are the manager's own.
func TestRawCallUsedOnlyAt20260728(t *testing.T) {
	t.Parallel()
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			srv := fake.Start(t, &fake.Options{Versions: g.versions})
			m := newManager(t, nil, cfg("s", srv.URL))
			res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`{"text":"hi"}`), nil)
			if err != nil || text(t, res) != "hi" {
				t.Fatalf("echo: %v", err)
			}
			s, _ := m.server("s")
			s.mu.Lock()
			sess := s.sess
			s.mu.Unlock()
			if stateless := sess.protocol >= version20260728; (sess.raw != nil) != stateless {
				t.Errorf("at %s the raw call is set: %v", sess.protocol, sess.raw != nil)
			}
		})
	}
}

// TestRawCallFailsAsTheSDKDoes: every way a 2026-07-28 server can answer a
// call badly gives the same error (category, message, status, code) and
// leaves the server in the same state on both paths.
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
	for _, c := range []struct {
		name string
		call func(http.ResponseWriter, *http.Request, json.RawMessage, json.RawMessage)
	}{
		{"JSON-RPC error", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			fake.WriteError(w, id, -32602, "no such \x1b[31mthing")
		}},
		{"JSON-RPC error on SSE", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32000,\"message\":\"boom\"}}\n\n", id))
		}},
		{"tool error", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"text","text":"bad"}],"isError":true}`))
		}},
		{"notifications then the answer", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, ": comment\n\n", "event: ping\ndata: x\n\n", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"a\"}}\n\n",
				"data: {\"jsonrpc\":\"2.0\",\"id\":\"other\",\"result\":{}}\n\n", answer(id, `{"content":[{"type":"text","text":"ok"}]}`))
		}},
		{"not a result", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"nonsense"}]}`))
		}},
		{"500", status(500, "text/plain", "internal "+fake.LeakCanary)},
		{"503", status(503, "", "")},
		{"429", status(429, "", "")},
		{"404", status(404, "text/plain", "not found")},
		{"400 with a JSON-RPC error", status(400, "application/json", `{"jsonrpc":"2.0","id":ID,"error":{"code":-32600,"message":"bad request"}}`)},
		{"409", status(409, "text/plain", "conflict")},
		{"401", status(401, "text/plain", "who are you")},
		{"403", status(403, "text/plain", "no")},
		{"200 text/html", status(200, "text/html", "<html>hello</html>")},
		{"202", status(202, "", "")},
		{"invalid JSON", status(200, "application/json", `{"jsonrpc":"2.0","id":ID,"result":`)},
		{"SSE without an answer", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) { sse(w, ": nothing\n\n") }},
		{"SSE cut in an event", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, answer(id, `{"content":[]}`)[:30])
		}},
		{"SSE malformed line", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, "garbage\n\n", answer(id, `{}`))
		}},
		{"SSE event not JSON", func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			sse(w, "data: {nope\n\n", answer(id, `{}`))
		}},
		{"connection dropped", fake.DropConnection().Call},
		{"SSE over the body bound", fake.HugeResultSSE(2 << 20).Call},
		{"JSON over the body bound", fake.HugeResult(2 << 20).Call},
		{"SSE under the body bound", fake.HugeResultSSE(200 << 10).Call},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			type outcome struct {
				Err   *mcpgate.Error
				Text  string
				State mcpgate.State
				Info  *ErrorInfo
				Next  string // a second call, answered well
			}
			var outs []outcome
			for _, p := range callPaths {
				var calls atomic.Int32
				h := fake.StartHostile(t, fake.HostileOptions{Stateless: true, CallTool: func(w http.ResponseWriter, r *http.Request, id, params json.RawMessage) {
					if calls.Add(1) == 1 {
						c.call(w, r, id, params)
						return
					}
					fake.WriteResult(w, id, json.RawMessage(`{"content":[{"type":"text","text":"pong"}]}`))
				}})
				m := newManager(t, &Options{sdkCalls: p.sdk, Limits: Limits{MaxResponseBytes: 1 << 20}}, cfg("s", h.URL))
				if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
					t.Fatal(err)
				}
				res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil)
				var o outcome
				if err != nil {
					if !errors.As(err, &o.Err) {
						t.Fatalf("%s: %T %v is not an attributed error", p.name, err, err)
					}
					o.Err = &mcpgate.Error{Category: o.Err.Category, Message: o.Err.Message, HTTPStatus: o.Err.HTTPStatus, Code: o.Err.Code}
				} else {
					o.Text = text(t, res) + fmt.Sprint(res.IsError)
				}
				// The go-sdk ends a session it takes for broken a moment
				// after the call returns.
				deadline := time.Now().Add(1500 * time.Millisecond)
				for {
					st := mustStatus(t, m, "s")
					o.State, o.Info = st.State, st.Error
					if o.Info != nil {
						// Which of "session" and "calling ping" says it is
						// a race on the go-sdk's path: its session ends on
						// another goroutine.
						i := *o.Info
						_, i.Message, _ = strings.Cut(i.Message, ": ")
						o.Info = &i
					}
					if st.State != mcpgate.StateReady || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil); err != nil {
					o.Next = err.Error()
				} else {
					o.Next = text(t, res)
				}
				outs = append(outs, o)
			}
			if diff := cmp.Diff(outs[1], outs[0]); diff != "" {
				t.Errorf("outcomes differ (-go-sdk +raw):\n%s", diff)
			}
			if outs[0].Err != nil && strings.Contains(outs[0].Err.Message, fake.LeakCanary) {
				t.Errorf("the error quotes the server's body: %s", outs[0].Err.Message)
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
	rc := newRawCalls(version20260728, &mcp.Implementation{Name: "t"})
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
// a call's stream gets an answer, so the server does not wait for one
// that never comes: a ping as the go-sdk answers it, anything else (a
// 2026-07-28 server asks with an InputRequiredResult) refused.
func TestServerRequestOnACallStreamIsAnswered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		method, want string
		paths        []struct {
			name string
			sdk  bool
		}
	}{
		{"ping", `"result":{}`, callPaths},
		{"sampling/createMessage", `"code":-32601`, callPaths[:1]},
	} {
		for _, p := range c.paths {
			t.Run(c.method+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				answers := make(chan string, 1)
				h := fake.StartHostile(t, fake.HostileOptions{Stateless: true, CallTool: func(w http.ResponseWriter, r *http.Request, id, _ json.RawMessage) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":%q,\"params\":{}}\n\n", c.method)
					http.NewResponseController(w).Flush()
					var got string
					select {
					case got = <-answers:
					case <-time.After(5 * time.Second):
					}
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%q}]}}\n\n", id, got)
				}})
				// In front of the server, to read the client's answer.
				target, _ := url.Parse(h.URL)
				proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
				proxy.FlushInterval = -1
				front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if body := peek(r); strings.Contains(body, `"srv-1"`) {
						answers <- body
					}
					proxy.ServeHTTP(w, r)
				}))
				t.Cleanup(front.Close)
				m := newManager(t, &Options{sdkCalls: p.sdk}, cfg("s", front.URL+target.Path))
				res, err := m.CallTool(ctxT(t, 20*time.Second), "s", "ping", nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := text(t, res); !strings.Contains(got, c.want) {
					t.Errorf("the server's %s was answered %q, want %s", c.method, got, c.want)
				}
			})
		}
	}
}
