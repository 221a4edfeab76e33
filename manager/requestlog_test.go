package manager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// logged collects what a manager hands to Options.RequestLog.
type logged struct {
	mu      sync.Mutex
	entries []RequestLogEntry
}

func (l *logged) add(e RequestLogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

// find waits for an entry of server and method (and tool, if not empty).
func (l *logged) find(t *testing.T, server, method, tool string) RequestLogEntry {
	t.Helper()
	var found RequestLogEntry
	eventually(t, "a "+method+" entry in the request log", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, e := range l.entries {
			if e.Server == server && e.Method == method && (tool == "" || e.Tool == tool) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

func TestRequestLogRecordsCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		versions []string
		connect  []string
	}{
		{fake.SessionEra, []string{"initialize", "notifications/initialized", "tools/list"}},
		{nil, []string{"server/discover", "tools/list"}},
	} {
		srv := fake.Start(t, &fake.Options{Versions: tc.versions})
		var l logged
		m := newManager(t, &Options{RequestLog: l.add}, cfg("s", srv.URL))
		before := time.Now()
		if _, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`{"text":"hello"}`), nil); err != nil {
			t.Fatal(err)
		}
		e := l.find(t, "s", "tools/call", "echo")
		if e.HTTPStatus != http.StatusOK || e.Outcome != OutcomeOK || e.BytesIn <= 0 || e.BytesOut <= 0 ||
			e.Duration <= 0 || e.Time.Before(before.Add(-time.Second)) {
			t.Errorf("tools/call entry: %+v", e)
		}
		for _, method := range tc.connect {
			if e := l.find(t, "s", method, ""); e.Outcome != OutcomeOK || e.Tool != "" {
				t.Errorf("%s entry: %+v", method, e)
			}
		}
		if tc.versions != nil {
			continue
		}
		// The ring holds what the callback saw, in the same order.
		var recent []RequestLogEntry
		eventually(t, "the ring and the callback to agree", func() bool {
			recent = m.RecentRequests(0)
			l.mu.Lock()
			defer l.mu.Unlock()
			return slices.Equal(recent, l.entries)
		})
		if last := m.RecentRequests(1); len(last) != 1 || last[0] != recent[len(recent)-1] {
			t.Errorf("RecentRequests(1) = %+v, want the newest of %d", last, len(recent))
		}
	}
}

func TestRequestLogRecordsFailures(t *testing.T) {
	t.Parallel()
	hook := fake.Status500()
	h := fake.StartHostile(t, fake.HostileOptions{CallTool: hook.Call})
	var l logged
	m := newManager(t, &Options{RequestLog: l.add}, cfg("bad", h.URL))
	if _, err := m.CallTool(ctxT(t, 10*time.Second), "bad", "ping", nil, nil); err == nil {
		t.Fatal("the call answered 500 succeeded")
	}
	e := l.find(t, "bad", "tools/call", "ping")
	if e.HTTPStatus != http.StatusInternalServerError || e.Outcome != string(mcpgate.CategoryHTTP) {
		t.Errorf("500 entry: %+v", e)
	}

	srv := fake.Start(t, nil)
	m2 := newManager(t, &Options{RequestLog: l.add}, cfg("s", srv.URL))
	if _, err := m2.ReadResource(ctxT(t, 10*time.Second), "s", "file:///no/such/resource"); err == nil {
		t.Fatal("reading a missing resource succeeded")
	}
	if e := l.find(t, "s", "resources/read", ""); e.Outcome != string(mcpgate.CategoryRemote) || (e.HTTPStatus != http.StatusOK && e.HTTPStatus != http.StatusBadRequest) {
		t.Errorf("JSON-RPC error entry: %+v", e)
	}

	c := cfg("w", srv.URL)
	c.Timeout = 200 * time.Millisecond
	m3 := newManager(t, &Options{RequestLog: l.add}, c)
	// Connected first: on a loaded machine a connect can outlast the call's
	// 200 ms, and a call that times out before it is sent logs no call.
	if err := m3.Connect(ctxT(t, 10*time.Second), "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := m3.CallTool(ctxT(t, 10*time.Second), "w", "slow", raw(`{"seconds":5}`), nil); err == nil {
		t.Fatal("a slow call did not time out")
	}
	if e := l.find(t, "w", "tools/call", "slow"); e.Outcome != string(mcpgate.CategoryTimeout) {
		t.Errorf("timed out entry: %+v", e)
	}
	if e := l.find(t, "w", "notifications/cancelled", ""); e.Outcome != OutcomeOK {
		t.Errorf("cancellation entry: %+v", e)
	}
}

func TestRequestLogBounded(t *testing.T) {
	t.Parallel()
	l := newRequestLog(3, nil)
	if got := l.recent(0); len(got) != 0 {
		t.Fatalf("empty ring: %+v", got)
	}
	for i := range 5 {
		l.add(RequestLogEntry{Method: string(rune('a' + i))})
	}
	methods := func(es []RequestLogEntry) string {
		var b strings.Builder
		for _, e := range es {
			b.WriteString(e.Method)
		}
		return b.String()
	}
	if got := methods(l.recent(0)); got != "cde" {
		t.Errorf("recent(0) = %q, want the newest 3, oldest first: cde", got)
	}
	if got := methods(l.recent(2)); got != "de" {
		t.Errorf("recent(2) = %q, want de", got)
	}
	if got := methods(l.recent(10)); got != "cde" {
		t.Errorf("recent(10) = %q, want cde", got)
	}
	// The ring grows as entries come: at every fill, before and after it
	// wraps, it holds the newest entries in order and no more than size.
	for _, size := range []int{1, 3, 40} {
		l := newRequestLog(size, nil)
		var all []RequestLogEntry
		for i := range 3*size + 2 {
			e := RequestLogEntry{Method: strconv.Itoa(i)}
			l.add(e)
			all = append(all, e)
			for _, n := range []int{0, 1, size - 1, size, size + 1} {
				want := all[max(0, len(all)-min(size, len(all))):]
				if n > 0 && n < len(want) {
					want = want[len(want)-n:]
				}
				if got := l.recent(n); !slices.Equal(got, want) {
					t.Fatalf("size %d after %d entries: recent(%d) = %q, want %q", size, i+1, n, methods(got), methods(want))
				}
			}
			if cap(l.ring) > size {
				t.Fatalf("size %d: the ring holds room for %d entries", size, cap(l.ring))
			}
		}
	}

	srv := fake.Start(t, nil)
	m := newManager(t, &Options{RequestLogSize: 2}, cfg("s", srv.URL))
	if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
		t.Fatal(err)
	}
	if got := m.RecentRequests(0); len(got) != 2 {
		t.Errorf("a manager with RequestLogSize 2 keeps %d entries", len(got))
	}
}

func TestRequestLogKeepsNoSecrets(t *testing.T) {
	t.Parallel()
	const token, arg, query = "tok-SECRET-123", "arg-SECRET-456", "q-SECRET-789"
	srv := fake.Start(t, &fake.Options{BearerToken: token})
	c := cfg("s", srv.URL+"?key="+query)
	c.Auth = mcpgate.AuthBearer
	c.BearerTokenEnv = "TOKEN"
	var l logged
	m := newManager(t, &Options{RequestLog: l.add, Getenv: func(string) string { return token }}, c)
	if _, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`{"text":"`+arg+`"}`), nil); err != nil {
		t.Fatal(err)
	}
	l.find(t, "s", "tools/call", "echo")
	m.Close() // the session's DELETE is logged too

	l.mu.Lock()
	all, _ := json.Marshal(l.entries)
	l.mu.Unlock()
	ring, _ := json.Marshal(m.RecentRequests(0))
	for _, secret := range []string{token, arg, query} {
		if strings.Contains(string(all), secret) || strings.Contains(string(ring), secret) {
			t.Errorf("the request log holds %q:\n%s", secret, all)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	big := strings.Repeat(`"x",`, 20000)
	tests := []struct {
		name, body, method, tool string
	}{
		{"call", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`, "tools/call", "search"},
		{"name after arguments", `{"method":"tools/call","params":{"_meta":{"a":[1,{"b":2}]},"arguments":{"name":"decoy"},"name":"real"}}`, "tools/call", "real"},
		{"huge arguments after name", `{"method":"tools/call","params":{"name":"t","arguments":[` + big + `"y"]}}`, "tools/call", "t"},
		{"params first", `{"id":1,"params":{"name":"t"},"method":"tools/call"}`, "tools/call", "t"},
		{"prompt name is not a tool", `{"method":"prompts/get","params":{"name":"greet","arguments":{"who":"x"}}}`, "prompts/get", ""},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, "notifications/cancelled", ""},
		{"response", `{"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{"name":"x"}}}`, "response", ""},
		{"not an object", `[{"method":"ping"}]`, "unknown", ""},
		{"control characters", `{"method":"tools/call","params":{"name":"a\u001b[31mb"}}`, "tools/call", "a[31mb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, tool := summarize(strings.NewReader(tt.body))
			if method != tt.method || tool != tt.tool {
				t.Errorf("summarize = %q, %q; want %q, %q", method, tool, tt.method, tt.tool)
			}
			req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if method, tool, ok := bodySummary(req); !ok || method != tt.method || tool != tt.tool {
				t.Errorf("bodySummary = %q, %q, %v; want %q, %q", method, tool, ok, tt.method, tt.tool)
			}
		})
	}
}

// FuzzSummary: a request body read in place (bodySummary) says what the
// token reading (summarize) says of it, whatever it is.
func FuzzSummary(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`))
	f.Add([]byte(`{"method":"tools/call","method":1,"params":{"name":"a","name":null}}`))
	f.Add([]byte(`{"method":null,"params":[1],"method":"tools/call","params":{"name":"\u00e9\ud800","arguments":{}}}`))
	f.Add([]byte(` {"method":"ping"}`))
	f.Add([]byte(`{"params":{"name":"t","name":2},"method":"tools/call"}`))
	f.Add([]byte(`{"method":"tools/call","params":"x","params":{"name":"t"}}`))
	f.Add([]byte(`{"id":1,"result":{}}`))
	f.Add([]byte(`{"method":"tools/call"`))
	f.Fuzz(func(t *testing.T, body []byte) {
		method, tool := summarize(bytes.NewReader(body))
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if m, tl, ok := bodySummary(req); !ok || m != method || tl != tool {
			t.Fatalf("bodySummary(%q) = %q, %q, %v; summarize says %q, %q", body, m, tl, ok, method, tool)
		}
	})
}

func TestRPCErrorScanner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sse  bool
		body string
		want bool
	}{
		{"result", false, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, false},
		{"error", false, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`, true},
		{"null error", false, `{"jsonrpc":"2.0","id":1,"error":null,"result":{}}`, false},
		{"nested error key", false, `{"id":1,"result":{"structuredContent":{"error":{"x":1}}}}`, false},
		{"error in a string", false, `{"id":1,"result":{"text":"\"error\":{}","e":"x\\"},"errors":1}`, false},
		{"sse result", true, "event: message\ndata: {\"id\":1,\"result\":{}}\n\n", false},
		{"sse error", true, "id: 1\ndata: {\"id\":1,\n\ndata:{\"id\":2,\"error\":{\"code\":1}}\n\n", true},
		{"sse elicitation then result", true, "data: {\"method\":\"elicitation/create\",\"params\":{\"error\":{}}}\n\ndata: {\"id\":1,\"result\":{}}\n\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Fed one byte at a time and all at once, the answer is the same.
			for _, chunk := range []int{1, len(tt.body)} {
				s := rpcErrorScanner{sse: tt.sse}
				for b := []byte(tt.body); len(b) > 0; {
					n := min(chunk, len(b))
					s.feed(b[:n])
					b = b[n:]
				}
				if s.found != tt.want {
					t.Errorf("chunks of %d: found = %v, want %v", chunk, s.found, tt.want)
				}
			}
		})
	}
}

// TestRequestLogHasACallWhenTheManagerCloses: a call's POST stream may go
// on after its answer (the server ends it a moment later), and the call is
// recorded when it ends. A manager closed right after the call (a CLI
// command, done) waits for that, so the call is in the log.
func TestRequestLogHasACallWhenTheManagerCloses(t *testing.T) {
	t.Parallel()
	h := fake.StartHostile(t, fake.HostileOptions{
		CallTool: func(w http.ResponseWriter, _ *http.Request, id, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n", id)
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond) // the stream ends a moment after the answer
		},
	})
	var l logged
	m, err := New([]mcpgate.ServerConfig{cfg("s", h.URL)}, &Options{RequestLog: l.add})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	m.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.ContainsFunc(l.entries, func(e RequestLogEntry) bool { return e.Method == "tools/call" }) {
		t.Errorf("no tools/call in the log when Close returned: %+v", l.entries)
	}
}
