package ops_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/serve/ops"
)

// get sends one request as tenant and returns the response, its body read.
func send(t *testing.T, ctx context.Context, client *http.Client, method, url, tenant string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	req.Header.Set("X-Test-Tenant", tenant)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func TestBurstPastTheRateGets429WhileAnotherTenantIsUnaffected(t *testing.T) {
	clk := newClock()
	metrics := newTestMetrics()
	sink := &memSink{}
	audit := ops.NewAudit(sink, nil)
	audit.SetNow(clk.Now)
	// 18 a minute: a burst of 3 (ten seconds' worth), then one every 3⅓ s.
	lim := ops.NewLimiter(&ops.LimiterOptions{
		Tenants: map[string]config.Limits{"acme": {RequestsPerMinute: 18}, "globex": {RequestsPerMinute: 18}},
		Who:     who, Metrics: metrics, Audit: audit,
	})
	lim.SetNow(clk.Now)
	srv := httptest.NewServer(asTenant(lim.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))))
	defer srv.Close()
	ctx := context.Background()

	for i := range 3 {
		if resp, _ := send(t, ctx, srv.Client(), http.MethodPost, srv.URL, "acme"); resp.StatusCode != http.StatusOK {
			t.Fatalf("acme request %d within the burst: %d", i+1, resp.StatusCode)
		}
	}
	resp, body := send(t, ctx, srv.Client(), http.MethodPost, srv.URL, "acme")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("acme past the burst: %d, want 429", resp.StatusCode)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "4" {
		t.Errorf("Retry-After = %q, want 4 (the next token in 3⅓ s)", ra)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var rpc struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Limit      string `json:"limit"`
				RetryAfter int    `json:"retryAfterSeconds"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &rpc); err != nil {
		t.Fatalf("429 body is not JSON: %q", body)
	}
	if rpc.JSONRPC != "2.0" || rpc.ID != nil || rpc.Error.Code != ops.CodeLimited || rpc.Error.Data.Limit != ops.LimitRate || rpc.Error.Data.RetryAfter != 4 {
		t.Errorf("429 body = %s", body)
	}
	if !strings.Contains(rpc.Error.Message, "18 a minute") || !strings.Contains(rpc.Error.Message, "try again in 4 s") {
		t.Errorf("message %q does not say the limit and when to retry", rpc.Error.Message)
	}

	// Another tenant is unaffected.
	for i := range 3 {
		if resp, _ := send(t, ctx, srv.Client(), http.MethodPost, srv.URL, "globex"); resp.StatusCode != http.StatusOK {
			t.Fatalf("globex request %d while acme is limited: %d", i+1, resp.StatusCode)
		}
	}
	// A refusal does not cost acme a token: when Retry-After said, one
	// request passes.
	clk.Advance(4 * time.Second)
	if resp, _ := send(t, ctx, srv.Client(), http.MethodPost, srv.URL, "acme"); resp.StatusCode != http.StatusOK {
		t.Fatalf("acme after Retry-After: %d", resp.StatusCode)
	}
	if resp, _ := send(t, ctx, srv.Client(), http.MethodPost, srv.URL, "acme"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("acme again at once: %d, want 429", resp.StatusCode)
	}

	fams := scrape(t, metrics.Handler())
	if got := value(t, fams, "mcpgate_rate_limited_total", map[string]string{"tenant": "acme", "limit": "rate"}); got != 2 {
		t.Errorf("rate_limited_total{acme} = %v, want 2", got)
	}
	if sample(fams, "mcpgate_rate_limited_total", map[string]string{"tenant": "globex"}) != nil {
		t.Error("globex was counted as limited")
	}
	audit.Close(ctx)
	entries := sink.all()
	if len(entries) != 2 {
		t.Fatalf("audit entries = %+v, want one per refusal a second apart", entries)
	}
	for _, e := range entries {
		if e.Event != ops.EventPolicyRefused || e.Outcome != ops.AuditRefused || e.Tenant != "acme" || e.User != "user-acme" || e.Reason != ops.LimitRate || e.Remote != "127.0.0.1" {
			t.Errorf("audit entry = %+v", e)
		}
	}
}

func TestRefusalsAreAuditedCoalesced(t *testing.T) {
	clk := newClock()
	sink := &memSink{}
	audit := ops.NewAudit(sink, nil)
	audit.SetNow(clk.Now)
	lim := ops.NewLimiter(&ops.LimiterOptions{Tenants: map[string]config.Limits{"acme": {RequestsPerMinute: 1}}, Who: who, Audit: audit})
	lim.SetNow(clk.Now)
	h := asTenant(lim.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	call := func() int {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("X-Test-Tenant", "acme")
		h.ServeHTTP(w, r)
		return w.Code
	}
	if call() != http.StatusOK {
		t.Fatal("first request refused")
	}
	for range 5 {
		if call() != http.StatusTooManyRequests {
			t.Fatal("a request past one a minute passed")
		}
	}
	clk.Advance(2 * time.Second)
	call()
	audit.Close(context.Background())
	var counts []int
	for _, e := range sink.all() {
		counts = append(counts, e.Count)
	}
	if len(counts) != 2 || counts[0] != 1 || counts[1] != 5 {
		t.Errorf("audited counts = %v, want [1 5]: the first refusal, then the five since", counts)
	}
}

func TestConcurrencyCapReleasesOnCompletionAndOnCancellation(t *testing.T) {
	metrics := newTestMetrics()
	lim := ops.NewLimiter(&ops.LimiterOptions{Tenants: map[string]config.Limits{"acme": {ConcurrentCalls: 2}}, Who: who, Metrics: metrics})
	var mu sync.Mutex
	finish := map[string]chan struct{}{}
	stop := make(chan struct{}) // frees every handler if the test fails early
	srv := httptest.NewServer(asTenant(lim.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request as a front does; only then does net/http notice
		// that the host hung up.
		io.Copy(io.Discard, r.Body)
		id := r.URL.Query().Get("id")
		mu.Lock()
		ch := finish[id]
		mu.Unlock()
		if ch == nil {
			return
		}
		select {
		case <-ch:
		case <-r.Context().Done(): // the host gave up: the call is cancelled
		case <-stop:
		}
	}))))
	defer srv.Close()
	defer close(stop)
	slow := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		finish[id] = make(chan struct{})
		return finish[id]
	}
	finishA, _ := slow("a"), slow("b")
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()

	var wg sync.WaitGroup
	codes := make(map[string]int)
	var codesMu sync.Mutex
	start := func(ctx context.Context, id string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := send(t, ctx, srv.Client(), http.MethodPost, srv.URL+"?id="+id, "acme")
			codesMu.Lock()
			defer codesMu.Unlock()
			if resp != nil {
				codes[id] = resp.StatusCode
			}
		}()
	}
	start(context.Background(), "a")
	start(ctxB, "b")
	waitFor(t, func() bool { return lim.InFlight("acme") == 2 })

	resp, body := send(t, context.Background(), srv.Client(), http.MethodPost, srv.URL, "acme")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"limit":"concurrency"`) {
		t.Fatalf("a third call at once: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// Another tenant has no cap and is not held up.
	if resp, _ := send(t, context.Background(), srv.Client(), http.MethodPost, srv.URL, "globex"); resp.StatusCode != http.StatusOK {
		t.Fatalf("globex while acme is at its cap: %d", resp.StatusCode)
	}
	// Event streams (GET) take no slot.
	if resp, _ := send(t, context.Background(), srv.Client(), http.MethodGet, srv.URL, "acme"); resp.StatusCode != http.StatusOK {
		t.Fatalf("acme GET at the cap: %d", resp.StatusCode)
	}

	close(finishA) // completion gives a slot back
	waitFor(t, func() bool { return lim.InFlight("acme") == 1 })
	if resp, _ := send(t, context.Background(), srv.Client(), http.MethodPost, srv.URL, "acme"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a call after one finished: %d", resp.StatusCode)
	}
	cancelB() // so does cancellation
	waitFor(t, func() bool { return lim.InFlight("acme") == 0 })
	wg.Wait()
	if codes["a"] != http.StatusOK {
		t.Errorf("the finished call got %d", codes["a"])
	}
	if got := value(t, scrape(t, metrics.Handler()), "mcpgate_rate_limited_total", map[string]string{"tenant": "acme", "limit": "concurrency"}); got != 1 {
		t.Errorf("concurrency refusals counted = %v, want 1", got)
	}
}

func TestAcquireReleaseIsIdempotent(t *testing.T) {
	lim := ops.NewLimiter(&ops.LimiterOptions{Tenants: map[string]config.Limits{"acme": {ConcurrentCalls: 1}}})
	release, err := lim.Acquire("acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Acquire("acme"); err == nil {
		t.Fatal("a second slot of one")
	}
	release()
	release() // must not free a slot someone else holds
	r2, err := lim.Acquire("acme")
	if err != nil {
		t.Fatal(err)
	}
	defer r2()
	if _, err := lim.Acquire("acme"); err == nil {
		t.Fatal("releasing twice made two slots")
	}
}

func TestTenantsOutsideTheDeploymentShareOneLimit(t *testing.T) {
	clk := newClock()
	lim := ops.NewLimiter(&ops.LimiterOptions{Other: config.Limits{RequestsPerMinute: 12}}) // a burst of 2
	lim.SetNow(clk.Now)
	if lim.Allow("stranger-1") != nil || lim.Allow("stranger-2") != nil {
		t.Fatal("the shared burst refused too early")
	}
	err := lim.Allow("stranger-3")
	var le *ops.LimitError
	if err == nil {
		t.Fatal("a third unknown tenant passed a shared burst of 2")
	}
	if le, _ = err.(*ops.LimitError); le == nil || le.Limit != ops.LimitRate {
		t.Fatalf("err = %v", err)
	}
	// Without limits for them, unknown tenants are not limited.
	open := ops.NewLimiter(nil)
	for range 100 {
		if err := open.Allow("anyone"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpdateKeepsCallsInFlight(t *testing.T) {
	lim := ops.NewLimiter(&ops.LimiterOptions{Tenants: map[string]config.Limits{"acme": {ConcurrentCalls: 2}}})
	r1, _ := lim.Acquire("acme")
	r2, _ := lim.Acquire("acme")
	lim.Update(map[string]config.Limits{"acme": {ConcurrentCalls: 1}}, config.Limits{})
	if lim.InFlight("acme") != 2 {
		t.Fatalf("in flight after update = %d, want the 2 still running", lim.InFlight("acme"))
	}
	r1()
	if _, err := lim.Acquire("acme"); err == nil {
		t.Fatal("admitted past the new cap of 1 with one call still running")
	}
	r2()
	r3, err := lim.Acquire("acme")
	if err != nil {
		t.Fatalf("no slot after both finished: %v", err)
	}
	r3()
}

// memSink keeps audit entries in memory; block, when set, holds each
// write until it is closed (a slow disk).
type memSink struct {
	mu      sync.Mutex
	entries []ops.AuditEntry
	block   chan struct{}
	closed  bool
}

func (s *memSink) WriteAudit(es []ops.AuditEntry) error {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, es...)
	return nil
}

func (s *memSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *memSink) all() []ops.AuditEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ops.AuditEntry(nil), s.entries...)
}
