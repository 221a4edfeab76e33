package manager

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
)

// newManager starts a manager for the given servers and closes it (with
// its goroutines) when the test ends.
func newManager(t *testing.T, opts *Options, servers ...mcpgate.ServerConfig) *Manager {
	t.Helper()
	m, err := New(servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func cfg(id, url string) mcpgate.ServerConfig {
	return mcpgate.ServerConfig{ID: id, URL: url, Auth: mcpgate.AuthNone, Enabled: true}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the test's patience runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustStatus(t *testing.T, m *Manager, id string) Status {
	t.Helper()
	st, err := m.Status(id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// gate is a reverse proxy in front of a server that can hold the first
// request of a connect (initialize, or server/discover) until released, to
// catch connects in flight.
type gate struct {
	URL      string
	mu       sync.Mutex
	held     chan struct{}
	arrived  chan struct{}
	requests int
	noStream bool // answer the standalone GET with 405, as servers without one do
}

func startGate(t *testing.T, target string) *gate {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{arrived: make(chan struct{}, 100)}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.FlushInterval = -1
	proxy.ErrorLog = log.New(io.Discard, "", 0) // cancelled held requests are expected
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.requests++
		held := g.held
		noStream := g.noStream
		g.mu.Unlock()
		if r.Method == http.MethodGet && noStream {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if r.Method == http.MethodPost && held != nil {
			body := peek(r)
			if strings.Contains(body, `"initialize"`) || strings.Contains(body, `"server/discover"`) {
				g.arrived <- struct{}{}
				select {
				case <-held:
				case <-r.Context().Done():
					return
				}
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	g.URL = ts.URL + u.Path
	return g
}

// await waits until a held request arrived.
func (g *gate) await(t *testing.T) {
	t.Helper()
	select {
	case <-g.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no connect reached the gate")
	}
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = make(chan struct{})
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

func peek(r *http.Request) string {
	var buf strings.Builder
	b := make([]byte, 4096)
	for {
		n, err := r.Body.Read(b)
		buf.Write(b[:n])
		if err != nil {
			break
		}
	}
	r.Body = readCloser{strings.NewReader(buf.String())}
	return buf.String()
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

func raw(v string) json.RawMessage { return json.RawMessage(v) }
