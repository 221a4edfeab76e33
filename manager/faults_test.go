package manager

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// stallWhen is a fault plan that holds the requests of one JSON-RPC
// method and passes the rest.
func stallWhen(method string) func(*fake.FaultRequest) fake.Fault {
	return func(r *fake.FaultRequest) fake.Fault {
		if r.Method == method {
			return fake.FaultStall
		}
		return fake.FaultNone
	}
}

// TestConnectTimeoutBoundsTheFirstCatalog: a server that accepts the
// connection and never answers tools/list fails the connect when
// ConnectTimeout runs out; the attempt does not hang for every caller
// after it.
func TestConnectTimeoutBoundsTheFirstCatalog(t *testing.T) {
	t.Parallel()
	for _, gen := range generations {
		t.Run(gen.name, func(t *testing.T) {
			srv := fake.Start(t, &fake.Options{Versions: gen.versions})
			p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Plan: stallWhen("tools/list")})
			m := newManager(t, &Options{ConnectTimeout: 200 * time.Millisecond}, cfg("s", p.URL))

			// The caller's own patience is far longer: only the connect's
			// bound can end this in time.
			err := m.Connect(ctxT(t, time.Minute), "s")
			if err == nil {
				t.Fatal("connected to a server that never listed its tools")
			}
			st := mustStatus(t, m, "s")
			if st.State != mcpgate.StateError || st.Error == nil || st.Error.Category != mcpgate.CategoryTimeout {
				t.Errorf("status = %s %+v, want error of category timeout", st.State, st.Error)
			}
		})
	}
}

// TestCallDeadlineBoundsTheHealthCheck: a call whose connection breaks
// makes the manager check the connection; when that check hangs, the call
// still ends at its own deadline, while the check goes on without it.
func TestCallDeadlineBoundsTheHealthCheck(t *testing.T) {
	t.Parallel()
	for _, gen := range generations {
		t.Run(gen.name, func(t *testing.T) {
			check := "ping"
			if gen.versions == nil || gen.versions[0] >= "2026-07-28" {
				check = "server/discover"
			}
			var armed atomic.Bool
			srv := fake.Start(t, &fake.Options{Versions: gen.versions})
			p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Plan: func(r *fake.FaultRequest) fake.Fault {
				switch {
				case !armed.Load():
					return fake.FaultNone
				case r.Method == "tools/call":
					return fake.FaultResetBefore
				case r.Method == check:
					return fake.FaultStall
				}
				return fake.FaultNone
			}})
			m := newManager(t, nil, cfg("s", p.URL))
			if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
				t.Fatal(err)
			}
			armed.Store(true)

			_, err := m.CallTool(ctxT(t, time.Minute), "s", "echo", raw(`{"text":"hi"}`), &CallOptions{Timeout: 300 * time.Millisecond})
			if err == nil {
				t.Fatal("a call whose connection was reset succeeded")
			}
			// The check has no verdict yet: it hangs until its own bound,
			// after which it would have retired the connection.
			if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady {
				t.Errorf("the call returned (%v) only once the hanging %s had ended: state %s", err, check, st.State)
			}
			// The check runs beside the call: on a loaded machine it may
			// reach the proxy only after the call's deadline has passed.
			eventually(t, "a stalled "+check+" at the proxy (the connection check)", func() bool {
				for _, r := range p.Records() {
					if r.Method == check && r.Fault == fake.FaultStall {
						return true
					}
				}
				return false
			})
		})
	}
}

// TestCatalogRefreshIsBounded: a catalog listed again on use (expired,
// or invalidated by list_changed) is bounded like a connect, even for a
// caller that set no deadline of its own (a model's call through the
// gateway looks its tool up first): a server that never answers the list
// fails the lookup instead of hanging it and every lookup queued behind.
func TestCatalogRefreshIsBounded(t *testing.T) {
	t.Parallel()
	for _, gen := range generations {
		t.Run(gen.name, func(t *testing.T) {
			t.Parallel()
			var armed atomic.Bool
			srv := fake.Start(t, &fake.Options{Versions: gen.versions})
			p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Plan: func(r *fake.FaultRequest) fake.Fault {
				if armed.Load() && r.Method == "tools/list" {
					return fake.FaultStall
				}
				return fake.FaultNone
			}})
			// Long enough for the first connect on a loaded machine; the
			// stalled list below must still end within it.
			m := newManager(t, &Options{ConnectTimeout: 2 * time.Second}, cfg("s", p.URL))
			if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
				t.Fatal(err)
			}
			armed.Store(true)
			s, _ := m.server("s")
			s.mu.Lock()
			s.catalog.m[kindTools].invalid = true // as a list_changed does
			s.mu.Unlock()

			done := make(chan error, 1)
			go func() {
				_, err := m.Tool(context.Background(), "s", "echo")
				done <- err
			}()
			select {
			case <-done:
				// Either the old catalog or an error will do; hanging will not.
			case <-time.After(30 * time.Second):
				t.Fatal("looking a tool up hung on a catalog list the server never answers")
			}
		})
	}
}

// TestEventStreamReopensAfterOverload: a server that answers its event
// stream (the standalone GET, subscriptions/listen) with 503 or 429 is
// overloaded, not without a stream: the stream is opened again later,
// and the server's change announcements reach the manager.
func TestEventStreamReopensAfterOverload(t *testing.T) {
	t.Parallel()
	for _, gen := range generations {
		for _, fault := range []fake.Fault{fake.Fault503, fake.Fault429} {
			t.Run(gen.name+"/"+string(fault), func(t *testing.T) {
				var refused atomic.Int32
				srv := fake.Start(t, &fake.Options{Versions: gen.versions})
				p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Plan: func(r *fake.FaultRequest) fake.Fault {
					stream := r.HTTPMethod == "GET" || r.Method == "subscriptions/listen"
					if stream && refused.Load() < 2 {
						refused.Add(1)
						return fault
					}
					return fake.FaultNone
				}})
				opened := make(chan struct{}, 10)
				m := newManager(t, &Options{
					streamPolicy: reconnectPolicy{floor: time.Millisecond, initial: time.Millisecond, max: 10 * time.Millisecond,
						stable: time.Second, perMinute: 100, failures: 5},
					OnEventStream: func(_ string, open bool) {
						if open {
							opened <- struct{}{}
						}
					},
				}, cfg("s", p.URL))
				if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
					t.Fatal(err)
				}
				select {
				case <-opened:
				case <-ctxT(t, 30*time.Second).Done():
					t.Fatalf("the event stream was never opened after %d refusals with %s", refused.Load(), fault)
				}
				srv.AddTool("late", "added after connecting")
				eventually(t, "the new tool to be listed", func() bool {
					_, err := m.Tool(ctxT(t, 5*time.Second), "s", "late")
					return err == nil
				})
			})
		}
	}
}

// TestEventFilterDeliversOnlyWholeEvents: a response stream that ends in
// the middle of an event, even one so large it was passed on as it came,
// reaches the go-sdk as a broken stream, never as an event: the SDK's own
// parser would take a last data line without its blank line as a whole
// event, and a call cut there would be reported done.
func TestEventFilterDeliversOnlyWholeEvents(t *testing.T) {
	t.Parallel()
	event := func(text string) string {
		return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + text + "\"}]}}\n\n"
	}
	small, large := event("hi"), event(strings.Repeat("x", 2*maxTappedEvent))
	for _, c := range []struct {
		name, body string
		broken     bool
	}{
		{"whole events", small + large + small, false},
		{"a small event without its blank line", small + small[:len(small)-1], true},
		{"a large event without its blank line", small + large[:len(large)-1], true},
		{"a large event cut in a line", small + large[:len(large)/2], true},
		{"a small event cut in a line", small[:len(small)/2], true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := io.ReadAll(filterEvents(io.NopCloser(strings.NewReader(c.body)), false, nil))
			if !c.broken {
				if err != nil || string(out) != c.body {
					t.Errorf("read %d bytes, %v; want the %d bytes unchanged", len(out), err, len(c.body))
				}
				return
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("a stream that ended in an event read as %v after %d bytes; want io.ErrUnexpectedEOF", err, len(out))
			}
			if !strings.HasPrefix(small+large, string(out)) && !strings.HasPrefix(c.body, string(out)) {
				t.Errorf("the filter changed what it passed on")
			}
		})
	}
}

// TestAWebPageIsNotMCP: a URL that answers with a web page (the server's
// documentation pasted instead of its endpoint), or with a REST API's
// JSON, is said to be one, with what to check, not taken for a closed
// connection; the same for a call a server answers with a page, on both
// call paths.
func TestAWebPageIsNotMCP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ contentType, says string }{
		{"", "the server answered with a web page (text/html), not MCP; check that the URL is the server's MCP endpoint"},
		{"text/plain", "the server answered with text/plain, not MCP (JSON or an event stream); check that the URL is the server's MCP endpoint"},
		{"application/json", "the server answered with JSON that is not JSON-RPC, so not MCP; check that the URL is the server's MCP endpoint"},
	} {
		m := newManager(t, nil, cfg("s", fake.StartWebPage(t, c.contentType)))
		err := m.Connect(ctxT(t, 10*time.Second), "s")
		var e *mcpgate.Error
		if !errors.As(err, &e) || e.Category != mcpgate.CategoryProtocol || e.Message != "connecting: "+c.says {
			t.Errorf("connecting to a %q page: %v", c.contentType, err)
		}
		if st := mustStatus(t, m, "s"); st.Error == nil || !strings.Contains(st.Error.Message, c.says) {
			t.Errorf("status after a %q page: %+v", c.contentType, st.Error)
		}
	}
	for _, p := range callPaths {
		h := fake.StartHostile(t, fake.HostileOptions{Sessions: true, CallTool: func(w http.ResponseWriter, _ *http.Request, _, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>sign in</html>")
		}})
		m := newManager(t, &Options{sdkCalls: p.sdk}, cfg("s", h.URL))
		_, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil)
		var e *mcpgate.Error
		if !errors.As(err, &e) || !strings.Contains(e.Message, "a web page (text/html), not MCP") {
			t.Errorf("%s: a call answered with a page: %v", p.name, err)
		}
	}
}

// TestIsRPCMessage: what the connection's first answer is held to before
// it is called not JSON-RPC.
func TestIsRPCMessage(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{}}`:             true,
		" \n{\"id\":1,\"jsonrpc\":\"2.0\",\"error\":{}}\n": true,
		`[{"jsonrpc":"2.0","id":1,"result":{}}]`:           true, // a batch (2025-03-26)
		`{"message":"Not Found"}`:                          false,
		`{"data":{"jsonrpc":"2.0"}}`:                       false, // only a top-level member counts
		`"jsonrpc"`:                                        false,
		`{"jsonrpc":"2.0",`:                                false,
		`<html>`:                                           false,
		``:                                                 false,
	} {
		if got := isRPCMessage([]byte(body)); got != want {
			t.Errorf("isRPCMessage(%q) = %v, want %v", body, got, want)
		}
	}
}

// TestFailedConnectDoesNotHoldTheNext: a connect that fails after the
// server gave it a session (here its first tools/list answers 503) ends
// that session, and the server may hold the DELETE that ends it. The next
// connect does not wait for that DELETE: a failed attempt's session is
// closed in the background, not under the lock every connect takes.
func TestFailedConnectDoesNotHoldTheNext(t *testing.T) {
	t.Parallel()
	var lists, deletes atomic.Int32
	srv := fake.Start(t, &fake.Options{Versions: fake.SessionEra})
	p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Plan: func(r *fake.FaultRequest) fake.Fault {
		switch {
		case r.Method == "tools/list" && lists.Add(1) == 1:
			return fake.Fault503
		case r.HTTPMethod == http.MethodDelete && deletes.Add(1) == 1:
			return fake.FaultStall
		}
		return fake.FaultNone
	}})
	m := newManager(t, nil, cfg("s", p.URL))

	// The held DELETE lasts seconds (the go-sdk's bound on it is 5 s);
	// a connect needs a fraction of that. Neither the failed connect's
	// caller nor the next connect waits for it. The bound below leaves a
	// loaded machine room and still tells a connect that waited.
	const most = 4 * time.Second
	start := time.Now()
	if err := m.Connect(ctxT(t, 10*time.Second), "s"); err == nil {
		t.Fatal("connected although the first tools/list failed")
	}
	if took := time.Since(start); took > most {
		t.Errorf("the failed connect returned after %s: it waited for its session's DELETE", took.Round(time.Millisecond))
	}
	start = time.Now()
	if err := m.Connect(ctxT(t, most), "s"); err != nil {
		t.Fatalf("the connect after a failed one: %v (after %s)", err, time.Since(start).Round(time.Millisecond))
	}
	// The DELETE goes out in the background: on a loaded machine it may
	// reach the proxy only after the second connect.
	eventually(t, "the failed connect's session ended with a DELETE", func() bool {
		for _, r := range p.Records() {
			if r.HTTPMethod == http.MethodDelete && r.Fault == fake.FaultStall {
				return true
			}
		}
		return false
	})
	p.Close() // lets the held DELETE go, so closing the manager need not wait it out
}
