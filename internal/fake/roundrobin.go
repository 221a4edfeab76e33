package fake

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// RoundRobin is a load balancer without affinity in front of several
// replicas of a service: each request goes to the next replica in turn,
// so consecutive requests of one client land on different replicas, as
// behind a real balancer with no sticky sessions. A replica marked down
// is skipped; if every replica is down the answer is 502. Streams (SSE)
// are passed through as they come.
//
// All methods are safe for concurrent use.
type RoundRobin struct {
	// URL is the balancer's address, http://127.0.0.1:<port>.
	URL string

	srv       *httptest.Server
	next      atomic.Uint64
	transport *http.Transport

	mu       sync.Mutex
	backends []*url.URL
	proxies  []*httputil.ReverseProxy
	down     map[int]bool
	hits     []int
}

// StartRoundRobin starts a balancer in front of the given base URLs
// (scheme and host; the request's path is kept) and stops it when the
// test ends.
func StartRoundRobin(t testing.TB, backends ...string) *RoundRobin {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 512
	rr := &RoundRobin{down: make(map[int]bool), transport: tr}
	for _, b := range backends {
		rr.Add(t, b)
	}
	hs, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(rr.serveHTTP))
	if err != nil {
		t.Fatal(err)
	}
	hs.Start()
	rr.srv, rr.URL = hs, base
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		tr.CloseIdleConnections()
	})
	return rr
}

// Add puts another replica (a base URL) behind the balancer, after those
// it has: a test that must tell replicas the balancer's URL starts it
// with none and adds them once they listen.
func (rr *RoundRobin) Add(t testing.TB, backend string) {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil || u.Host == "" {
		t.Fatalf("fake: round robin: backend %q is not a URL", backend)
	}
	u = &url.URL{Scheme: u.Scheme, Host: u.Host}
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	// A balancer keeps a pool to each replica, as big as its traffic.
	p.Transport = rr.transport
	p.ErrorLog = log.New(io.Discard, "", 0) // a replica going down mid-request is expected
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.backends = append(rr.backends, u)
	rr.proxies = append(rr.proxies, p)
	rr.hits = append(rr.hits, 0)
}

func (rr *RoundRobin) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rr.mu.Lock()
	n := len(rr.proxies)
	rr.mu.Unlock()
	if n == 0 {
		http.Error(w, "no replica is up", http.StatusBadGateway)
		return
	}
	start := int(rr.next.Add(1)-1) % n
	for i := range n {
		idx := (start + i) % n
		rr.mu.Lock()
		down := rr.down[idx]
		if !down {
			rr.hits[idx]++
		}
		p := rr.proxies[idx]
		rr.mu.Unlock()
		if down {
			continue
		}
		p.ServeHTTP(w, r)
		return
	}
	http.Error(w, "no replica is up", http.StatusBadGateway)
}

// SetDown marks replica i (in the order given to StartRoundRobin and Add) down
// or up again. Requests already forwarded to it are not cut.
func (rr *RoundRobin) SetDown(i int, down bool) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.down[i] = down
}

// Hits returns how many requests each replica was sent.
func (rr *RoundRobin) Hits() []int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]int(nil), rr.hits...)
}
