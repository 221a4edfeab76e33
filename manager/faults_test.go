package manager

import (
	"context"
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
			stalled := false
			for _, r := range p.Records() {
				stalled = stalled || (r.Method == check && r.Fault == fake.FaultStall)
			}
			if !stalled {
				t.Errorf("no %s reached the proxy: the connection was not checked", check)
			}
		})
	}
}

// TestCatalogRefreshIsBounded: a catalog listed again on use (expired,
// or invalidated by list_changed) is bounded like a connect, even for a
// caller that set no deadline of its own (a model's call through the
// gateway looks its tool up first): a server that never answers the list
// fails the lookup instead of hanging it and every lookup queued behind.
func TestCatalogRefreshIsBounded(t *testing.T) {
	for _, gen := range generations {
		t.Run(gen.name, func(t *testing.T) {
			var armed atomic.Bool
			srv := fake.Start(t, &fake.Options{Versions: gen.versions})
			p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Plan: func(r *fake.FaultRequest) fake.Fault {
				if armed.Load() && r.Method == "tools/list" {
					return fake.FaultStall
				}
				return fake.FaultNone
			}})
			m := newManager(t, &Options{ConnectTimeout: 200 * time.Millisecond}, cfg("s", p.URL))
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
