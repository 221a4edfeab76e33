package ops_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/serve/ops"
)

func probe(t *testing.T, h http.Handler, method string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, "/", nil))
	return w.Code, strings.TrimSpace(w.Body.String())
}

func TestProbes(t *testing.T) {
	clk := newClock()
	var checks atomic.Int32
	var failing atomic.Bool
	h := ops.NewHealth(&ops.HealthOptions{Ready: func(ctx context.Context) error {
		checks.Add(1)
		if failing.Load() {
			return errors.New("connecting to postgres://gate:" + canary + "@db: refused")
		}
		return nil
	}, CacheFor: time.Second})
	h.SetNow(clk.Now)

	if code, body := probe(t, h.Healthz(), http.MethodGet); code != 200 || body != `{"status":"ok"}` {
		t.Errorf("healthz = %d %s", code, body)
	}
	if code, body := probe(t, h.Readyz(), http.MethodGet); code != 200 || body != `{"status":"ready"}` {
		t.Errorf("readyz = %d %s", code, body)
	}
	probe(t, h.Readyz(), http.MethodGet)
	if n := checks.Load(); n != 1 {
		t.Errorf("two probes within a second ran %d checks, want 1", n)
	}

	failing.Store(true)
	clk.Advance(time.Second)
	code, body := probe(t, h.Readyz(), http.MethodGet)
	if code != http.StatusServiceUnavailable || body != `{"status":"unavailable"}` {
		t.Errorf("readyz with the database down = %d %s", code, body)
	}
	if strings.Contains(body, canary) || strings.Contains(body, "postgres") {
		t.Errorf("readyz shows the check's error: %s", body)
	}
	if code, _ := probe(t, h.Healthz(), http.MethodGet); code != 200 {
		t.Errorf("healthz with the database down = %d: the process is alive", code)
	}

	failing.Store(false)
	clk.Advance(time.Second)
	h.Drain()
	select {
	case <-h.Draining():
	default:
		t.Error("Draining() not closed after Drain")
	}
	if code, body := probe(t, h.Readyz(), http.MethodGet); code != http.StatusServiceUnavailable || body != `{"status":"draining"}` {
		t.Errorf("readyz while draining = %d %s", code, body)
	}
	if code, body := probe(t, h.Healthz(), http.MethodHead); code != 200 || body != "" {
		t.Errorf("HEAD healthz while draining = %d %q", code, body)
	}
	h.Drain() // again: nothing
}

// startServe runs ops.Serve on a loopback listener.
func startServe(t *testing.T, handler http.Handler, opts *ops.DrainOptions) (addr string, drain context.CancelFunc, result <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- ops.Serve(ctx, &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}, ln, opts)
	}()
	t.Cleanup(cancel)
	return ln.Addr().String(), cancel, errc
}

// TestDrainFinishesInFlightAndRefusesNew: on drain, readyz fails at once
// (while the listener still accepts, for Delay), an event stream ends, the
// slow request in flight gets its whole answer, and then a new
// connection is refused.
func TestDrainFinishesInFlightAndRefusesNew(t *testing.T) {
	h := ops.NewHealth(nil)
	started, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/readyz", h.Readyz())
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "finished")
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": open\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-h.Draining(): // the host reconnects elsewhere
		case <-r.Context().Done():
		}
	})
	addr, drain, result := startServe(t, mux, &ops.DrainOptions{Health: h, Delay: time.Second, Timeout: 10 * time.Second})
	base := "http://" + addr

	stream, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	bufio.NewReader(stream.Body).ReadString('\n')

	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		slow <- resp.Status + " " + string(b)
	}()
	<-started

	drain() // SIGTERM
	waitFor(t, h.IsDraining)
	// During the delay a load balancer's probe still connects, and is told.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := fresh.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("readyz during the delay: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz while draining = %d, want 503 at once", resp.StatusCode)
	}
	// The stream ended with the drain.
	if _, err := io.Copy(io.Discard, stream.Body); err != nil {
		t.Errorf("event stream: %v", err)
	}

	// After the delay the listener is closed: new connections go elsewhere.
	waitFor(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	select {
	case err := <-result:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}

	close(release)
	if got := <-slow; got != "200 OK finished" {
		t.Errorf("the request in flight got %q, want its whole answer", got)
	}
	select {
	case err := <-result:
		if err != nil {
			t.Errorf("Serve = %v, want nil after a complete drain", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the last request ended")
	}
}

func TestDrainDeadlineCutsWhatRemains(t *testing.T) {
	started := make(chan struct{})
	cut := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // never finishes by itself
		close(cut)
	})
	addr, drain, result := startServe(t, h, &ops.DrainOptions{Timeout: 200 * time.Millisecond})
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	drain()
	select {
	case err := <-result:
		if !errors.Is(err, ops.ErrDrainTimeout) {
			t.Errorf("Serve = %v, want ErrDrainTimeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve outlived its drain deadline")
	}
	select {
	case <-cut: // its connection was closed, so its context ended
	case <-time.After(5 * time.Second):
		t.Fatal("the request past the deadline was not cut")
	}
}

func TestServeReturnsAListenerFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = ops.Serve(context.Background(), &http.Server{ReadHeaderTimeout: time.Second}, ln, nil)
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve on a closed listener = %v, want its error", err)
	}
}
