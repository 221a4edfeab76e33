package manager

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// connectGate passes requests on to a server, holding each connect's first
// request (initialize or server/discover) until the test releases one, and
// counts how many it holds at once.
type connectGate struct {
	proxy   *httputil.ReverseProxy
	release chan struct{}

	mu          sync.Mutex
	held, peak  int
	firstsTotal int
}

func (g *connectGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	first := bytes.Contains(body, []byte(`"method":"initialize"`)) || bytes.Contains(body, []byte(`"method":"server/discover"`))
	if first {
		g.mu.Lock()
		g.held++
		g.firstsTotal++
		g.peak = max(g.peak, g.held)
		g.mu.Unlock()
		select {
		case <-g.release:
		case <-r.Context().Done():
		}
		g.mu.Lock()
		g.held--
		g.mu.Unlock()
	}
	g.proxy.ServeHTTP(w, r)
}

func (g *connectGate) counts() (held, peak, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.peak, g.firstsTotal
}

// TestConnectsAreBounded: with MaxConnecting 2, six servers asked to
// connect at once open two connects at a time; the others wait in state
// connecting, and every one gets its turn.
func TestConnectsAreBounded(t *testing.T) {
	t.Parallel()
	for name, versions := range map[string][]string{"2026-07-28": {"2026-07-28"}, "session era": fake.SessionEra} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := fake.Start(t, &fake.Options{Versions: versions})
			target, err := url.Parse(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			g := &connectGate{proxy: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host}), release: make(chan struct{})}
			g.proxy.FlushInterval = -1
			g.proxy.ErrorLog = log.New(io.Discard, "", 0)
			front := httptest.NewServer(g)
			t.Cleanup(front.Close)
			// Released before front.Close, so no handler is left holding.
			t.Cleanup(func() { close(g.release) })

			const n = 6
			var servers []mcpgate.ServerConfig
			for i := range n {
				servers = append(servers, cfg(string(rune('a'+i)), front.URL+target.Path))
			}
			m := newManager(t, &Options{MaxConnecting: 2}, servers...)
			ctx := ctxT(t, 20*time.Second)
			errs := make(chan error, n)
			for _, c := range servers {
				go func() { errs <- m.Connect(ctx, c.ID) }()
			}
			eventually(t, "two connects to be held", func() bool {
				held, _, _ := g.counts()
				return held == 2
			})
			// Those waiting for a slot say so, once their Connect has been
			// called (a goroutine each: one may not have started yet).
			eventually(t, "every server to say connecting while two connect", func() bool {
				for _, st := range m.Statuses() {
					if st.State != mcpgate.StateConnecting {
						return false
					}
				}
				return true
			})
			if held, _, _ := g.counts(); held != 2 {
				t.Errorf("%d connects held while the others wait, want 2", held)
			}
			// A connect sends one first request or two (server/discover, then
			// initialize for a server of the session era): release them one
			// at a time until every connect is done.
			done := 0
			for done < n {
				select {
				case err := <-errs:
					if err != nil {
						t.Fatal(err)
					}
					done++
					continue
				default:
				}
				if held, peak, _ := g.counts(); peak > 2 {
					t.Fatalf("%d connects at once, want at most 2", peak)
				} else if held == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				select {
				case g.release <- struct{}{}:
				case err := <-errs:
					if err != nil {
						t.Fatal(err)
					}
					done++
				}
			}
			if _, peak, total := g.counts(); peak != 2 || total < n {
				t.Errorf("at most %d of %d first requests held at once, want 2 of at least %d", peak, total, n)
			}
		})
	}
}
