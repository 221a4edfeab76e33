package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// servedBy checks that the stdio fast path answered at least want of r's
// tool calls so far, at every generation (a 2026-07-28 host's since it
// serves them too).
func servedBy(t *testing.T, r *running, version string, want int64) {
	t.Helper()
	if got := serve.FastCalls(r.front); got < want {
		t.Errorf("%s: the fast path answered %d calls, want %d", version, got, want)
	}
}

var nonces = regexp.MustCompile(`nonce=\\?"[^"\\]*\\?"`)

// outcome is what a host sees of a call, the boundary's nonces aside.
type outcome struct {
	Err        string
	IsError    bool
	Content    string
	Structured string
}

func outcomeOf(res *mcp.CallToolResult, err error) outcome {
	if err != nil {
		return outcome{Err: err.Error()}
	}
	b, _ := json.Marshal(res.Content)
	s, _ := json.Marshal(res.StructuredContent)
	return outcome{IsError: res.IsError, Content: nonces.ReplaceAllString(string(b), "nonce=N"), Structured: string(s)}
}

// The fast path answers every kind of call as the go-sdk server did:
// results, model-safe failures, bad arguments, disabled and unknown tools,
// structured content, at both session-era versions, gateway and direct.
func TestFastPathAnswersAsTheGoSDKDid(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	url := upstream(t, catalog)
	demo := cfg("demo", srv.URL)
	demo.DisabledTools = []string{"add"}
	calls := []struct {
		direct bool
		params *mcp.CallToolParams
	}{
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"hi"}}`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"up","tool":"weather","arguments":{"city":"Oslo"}}`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`"call demo echo"`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"echo","arguments":[1]}`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"add","arguments":{"a":1,"b":2}}`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"nope"}`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"nowhere","tool":"x"}`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"echo","arguments":{"server":"demo"}}`)}},
		{false, &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"status"}`)}},
		{true, &mcp.CallToolParams{Name: "mcp__demo__echo", Arguments: json.RawMessage(`{"text":"hi"}`)}},
		{true, &mcp.CallToolParams{Name: "mcp__up__weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}},
		{true, &mcp.CallToolParams{Name: "mcp__demo__echo", Arguments: json.RawMessage(`[1]`)}},
		{true, &mcp.CallToolParams{Name: "mcp__demo__echo"}},
		{true, &mcp.CallToolParams{Name: "mcp__demo__add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}},
		{true, &mcp.CallToolParams{Name: "mcp__demo__nope"}},
	}
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			for _, direct := range []bool{false, true} {
				viaSDK := startHost(t, host{direct: direct, version: version, memory: true}, demo, cfg("up", url))
				fast := startHost(t, host{direct: direct, version: version}, demo, cfg("up", url))
				n := int64(0)
				for _, c := range calls {
					if c.direct != direct {
						continue
					}
					want := outcomeOf(viaSDK.cs.CallTool(ctx10(t), c.params))
					got := outcomeOf(fast.cs.CallTool(ctx10(t), c.params))
					n++
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s %s:\n fast path %+v\n go-sdk    %+v", c.params.Name, c.params.Arguments, got, want)
					}
				}
				if got := serve.FastCalls(fast.front); got != n {
					t.Errorf("direct=%v: the fast path answered %d of %d calls", direct, got, n)
				}
				if got := serve.FastCalls(viaSDK.front); got != 0 {
					t.Errorf("direct=%v: in-memory calls went through the stdio fast path (%d)", direct, got)
				}
			}
		})
	}
}

// A host's notifications/cancelled for a call the fast path serves
// cancels the remote call, the session goes on, and calls of a 2026-07-28
// host are still the go-sdk's.
func TestFastPathCancellation(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	each(t, func(t *testing.T, version string) {
		for _, direct := range []bool{false, true} {
			r := startHost(t, host{direct: direct, version: version}, cfg("demo", srv.URL))
			before := len(srv.Cancellations())
			params := &mcp.CallToolParams{Name: "mcp__demo__slow", Arguments: json.RawMessage(`{"seconds":30}`)}
			if !direct {
				params = &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"slow","arguments":{"seconds":30}}`)}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { _, err := r.cs.CallTool(ctx, params); done <- err }()
			deadline := time.Now().Add(10 * time.Second)
			for srv.InFlight("slow") == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			if err := <-done; err == nil {
				t.Fatalf("direct=%v: a cancelled call returned no error", direct)
			}
			for len(srv.Cancellations()) == before && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if len(srv.Cancellations()) != before+1 {
				t.Fatalf("direct=%v: the remote server never saw the cancellation", direct)
			}
			for srv.InFlight("slow") != 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			echo := &mcp.CallToolParams{Name: "mcp__demo__echo", Arguments: json.RawMessage(`{"text":"after"}`)}
			if !direct {
				echo = &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"after"}}`)}
			}
			if res, err := r.cs.CallTool(ctx10(t), echo); err != nil || res.IsError || !strings.Contains(textOf(res), "after") {
				t.Fatalf("direct=%v: a call after the cancelled one: %v %+v", direct, err, res)
			}
			servedBy(t, r, version, 1)
		}
	})
}

// Over the wire: the fast path answers with the request's own ID (string
// or number), content never null, progress to the host's token as the
// host wrote it; before initialize, a call is the go-sdk's to refuse.
func TestFastPathOnTheWire(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	h := startRawWith(t, true, cfg("up", url))
	h.send(`{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"mcp__up__count"}}`)
	if r := h.reply(); r.Error == nil || string(r.ID) != `"early"` {
		t.Fatalf("a call before initialize: %+v", r)
	}
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := h.reply(); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"mcp__up__count","_meta":{"progressToken":12345678901234567}}}`)
	var progress []string
	for {
		line := h.line()
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Token json.RawMessage `json:"progressToken"`
			} `json:"params"`
			Result struct {
				Content json.RawMessage `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if msg.Method == "notifications/progress" {
			progress = append(progress, string(msg.Params.Token))
		}
		if msg.Method != "" {
			continue // the mirror's list_changed, progress
		}
		if string(msg.ID) != `"a-1"` || !strings.Contains(string(msg.Result.Content), "counted") {
			t.Fatalf("the answer: %s", line)
		}

		break
	}
	if fmt.Sprint(progress) != "[12345678901234567 12345678901234567 12345678901234567]" {
		t.Errorf("progress tokens: %v", progress)
	}
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp__up__nothing"}}`)
	r := h.reply()
	for r.ID == nil {
		r = h.reply() // notifications
	}
	if string(r.ID) != "7" || r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("an unknown tool: %+v", r)
	}
	// Member names are matched exactly, as the go-sdk matches them: this
	// one has no name, and is the go-sdk's to refuse.
	h.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"Name":"mcp__up__count"}}`)
	r = h.reply()
	for r.ID == nil {
		r = h.reply()
	}
	if string(r.ID) != "8" || r.Error == nil {
		t.Fatalf("a call without a name: %+v", r)
	}
	if got := serve.FastCalls(h.front); got != 2 {
		t.Errorf("the fast path answered %d calls, want 2", got)
	}
}

// A host that goes away mid-call (its stdin closes) cancels the calls the
// fast path serves for it, as the go-sdk cancels its own.
func TestFastPathCallsEndWithTheHost(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	r := startHost(t, host{}, cfg("demo", srv.URL))
	go r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"demo","tool":"slow","arguments":{"seconds":30}}`)})
	deadline := time.Now().Add(10 * time.Second)
	for srv.InFlight("slow") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r.hostIn.Close() // the host's process ends
	for len(srv.Cancellations()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(srv.Cancellations()) != 1 {
		t.Fatal("the remote call outlived the host")
	}
}

// meta2026 is a 2026-07-28 request's _meta as a go-sdk host sends it,
// without the closing brace, so a test can add members.
const meta2026 = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}`

var requestStates = regexp.MustCompile(`"requestState":"[^"]*"`)

// exchange sends line and returns every line the front writes up to the
// response to id, the boundary's nonces and requestStates made alike.
func (h *rawHost) exchange(line, id string) string {
	h.t.Helper()
	h.send(line)
	var got []string
	for {
		l := h.line()
		l = requestStates.ReplaceAllString(nonces.ReplaceAllString(l, "nonce=N"), `"requestState":"S"`)
		got = append(got, l)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(l), &msg)
		if msg.Method == "" && string(msg.ID) == id {
			return strings.Join(got, "\n")
		}
	}
}

// A 2026-07-28 host's tool calls take the fast path too, and it answers
// them byte for byte as the go-sdk server does (resultType, the server's
// identity in _meta, InputRequiredResult rounds, progress, errors); what
// it cannot answer so (a log level in _meta, capabilities other than the
// session's, a retry with requestState, malformed _meta) stays the
// go-sdk's.
func TestFastPathAnswers2026AsTheGoSDK(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	passthrough := func(next mcp.MethodHandler) mcp.MethodHandler { return next }
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}
	gw := func(args, meta string) string {
		return `{"name":"mcp","arguments":` + args + `,"_meta":` + meta + `}`
	}
	tool := func(name, args, meta string) string {
		return `{"name":"` + name + `","arguments":` + args + `,"_meta":` + meta + `}`
	}
	m := meta2026 + "}"
	type step struct {
		params string
		fast   bool // the fast path answers it
	}
	for _, direct := range []bool{false, true} {
		var steps []step
		if !direct {
			steps = []step{
				{gw(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"hi <&> \u2028"}}`, m), true},
				{gw(`{"action":"call","server":"demo","tool":"add","arguments":{"a":1,"b":2}}`, m), true},
				{gw(`{"action":"call","server":"demo","tool":"fail"}`, m), true},
				{gw(`{"action":"call","server":"nowhere","tool":"x"}`, m), true},
				{gw(`"call demo echo"`, m), true},
				{gw(`{"action":"status"}`, m), true},
				{gw(`{"action":"call","server":"demo","tool":"progress","arguments":{"steps":2}}`, meta2026+`,"progressToken":"p-1"}`), true},
				{gw(`{"action":"call","server":"demo","tool":"ask"}`, m), true},
				{gw(`{"action":"call","server":"demo","tool":"log","arguments":{"text":"hello"}}`, m), true},
				{gw(`{"action":"call","server":"demo","tool":"log","arguments":{"text":"hello"}}`, meta2026+`,"io.modelcontextprotocol/logLevel":"info"}`), false},
				{gw(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"x"}}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`), false},
				{gw(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"x"}}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), false},
				{gw(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"x"}}`, meta2026+`,"io.modelcontextprotocol/clientInfo":"raw"}`), false},
				{gw(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"x"}}`, `{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`), false},
				{`{"name":"mcp","arguments":{"action":"status"}}`, false},
				{gw(`{"action":"status"}`, `{"progressToken":1}`), false},
				{tool("nope", `{}`, m), false},
			}
		} else {
			steps = []step{
				{tool("mcp__demo__echo", `{"text":"hi"}`, m), true},
				{tool("mcp__demo__add", `{"a":1,"b":2}`, m), true},
				{tool("mcp__demo__echo", `[1]`, m), true},
				{tool("mcp__demo__nope", `{}`, m), true},
				{tool("mcp__demo__ask", `{}`, m), true},
				{tool("mcp__demo__echo", `{"text":"x"}`, meta2026+`,"io.modelcontextprotocol/logLevel":"debug"}`), false},
			}
		}
		viaSDK := startRawFront(t, rawFront{direct: direct, wired: true, middleware: passthrough}, cfg("demo", srv.URL))
		fast := startRawFront(t, rawFront{direct: direct, wired: true}, cfg("demo", srv.URL))
		first := `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"_meta":` + m + `}}`
		if got, want := fast.exchange(first, "0"), viaSDK.exchange(first, "0"); got != want {
			t.Fatalf("direct=%v: tools/list:\n fast path %s\n go-sdk    %s", direct, got, want)
		}
		served := int64(0)
		for i, st := range steps {
			id := fmt.Sprint(i + 1)
			got, want := fast.exchange(call(id, st.params), id), viaSDK.exchange(call(id, st.params), id)
			if got != want {
				t.Errorf("direct=%v %s:\n fast path %s\n go-sdk    %s", direct, st.params, got, want)
			}
			// A result names the server the host speaks to, mcpgate, and
			// not the one behind it, which named itself to mcpgate.
			if direct && i == 0 && (!strings.Contains(got, mcp.MetaKeyServerInfo) || strings.Contains(got, `"name":"fake"`)) {
				t.Errorf("the result of %s names another server than mcpgate: %s", st.params, got)
			}
			if st.fast {
				served++
			}
			if n := serve.FastCalls(fast.front); n != served {
				t.Fatalf("direct=%v %s: the fast path answered %d calls, want %d", direct, st.params, n, served)
			}
			if strings.Contains(want, `"resultType":"input_required"`) {
				// The host's retry with the answer, and its requestState:
				// the go-sdk's on both fronts, finishing what each began.
				var replies [2]string
				for k, h := range []*rawHost{fast, viaSDK} {
					state := requestStates.FindString(h.out.Text())
					retry := strings.Replace(st.params, `"_meta":`, state+`,"inputResponses":{"elicit-1":{"action":"accept","content":{"name":"Ada","lucky":7}}},"_meta":`, 1)
					replies[k] = h.exchange(call(id+"0", retry), id+"0")
				}
				if replies[0] != replies[1] || !strings.Contains(replies[0], "accepted: name=Ada") {
					t.Errorf("direct=%v: the retry:\n fast path %s\n go-sdk    %s", direct, replies[0], replies[1])
				}
			}
		}
		if n := serve.FastCalls(viaSDK.front); n != 0 {
			t.Errorf("direct=%v: with a ServerMiddleware the fast path answered %d calls", direct, n)
		}
	}
}
