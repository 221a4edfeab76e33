package fake_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// The balancer sends consecutive requests to different replicas and skips
// one that is down.
func TestRoundRobin(t *testing.T) {
	t.Parallel()
	var a, b atomic.Int32
	ra := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.Add(1); io.WriteString(w, "a"+r.URL.Path) }))
	defer ra.Close()
	rb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.Add(1); io.WriteString(w, "b"+r.URL.Path) }))
	defer rb.Close()
	rr := fake.StartRoundRobin(t, ra.URL, rb.URL)
	get := func() string {
		resp, err := http.Get(rr.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	first, second := get(), get()
	if first == second || (first != "a/x" && first != "b/x") {
		t.Fatalf("two requests went to %q and %q", first, second)
	}
	rr.SetDown(0, true)
	for range 3 {
		if got := get(); got != "b/x" {
			t.Fatalf("with replica 0 down: %q", got)
		}
	}
	rr.SetDown(1, true)
	resp, err := http.Get(rr.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("every replica down: %d", resp.StatusCode)
	}
	if h := rr.Hits(); h[0] != 1 || h[1] != 4 {
		t.Errorf("hits %v", h)
	}
}
