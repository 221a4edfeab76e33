package hosted_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loadCallers is how many callers the load benchmark runs at once.
const loadCallers = 200

// BenchmarkLoad runs 200 concurrent callers against the fake server,
// directly and through two replicas behind the balancer (each caller a
// person of their own, so 200 workspaces), for -benchtime calls each
// sub-benchmark; it reports latency percentiles, throughput and errors,
// and the ratios of the two in the same run:
//
//	go test -run '^$' -bench Load -benchtime 30s ./serve/hosted/
//
// (-benchtime 30s gives each side about 30 s of load.)
func BenchmarkLoad(b *testing.B) {
	c := newCluster(b, nil)
	// Both sides' callers share a pool big enough for all of them.
	pool := http.DefaultTransport.(*http.Transport).Clone()
	pool.MaxIdleConnsPerHost = loadCallers
	b.Cleanup(pool.CloseIdleConnections)
	direct := make([]*mcp.ClientSession, loadCallers)
	viaGateway := make([]*mcp.ClientSession, loadCallers)
	for i := range loadCallers {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).Connect(b.Context(),
			&mcp.StreamableClientTransport{Endpoint: c.open.URL, HTTPClient: &http.Client{Transport: pool}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		direct[i] = cs
		viaGateway[i], err = connectWith(c.rr.URL, &http.Client{Transport: &withAuth{credential: c.apiKey("acme", fmt.Sprintf("user-%d", i)), next: pool}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { viaGateway[i].Close() })
		// The person's workspace opens on each replica.
		for range c.replicas {
			mustGW(b, viaGateway[i], map[string]any{"action": "call", "server": "open", "tool": "echo", "arguments": map[string]any{"text": "warm"}})
		}
	}
	var results [2]loadResult
	b.Run("direct", func(b *testing.B) {
		results[0] = runLoad(b, direct, func(ctx context.Context, cs *mcp.ClientSession, text string) error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			if err == nil && (res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != text) {
				err = fmt.Errorf("answer %+v", res.Content)
			}
			return err
		})
	})
	lists := c.open.Requests("tools/list")
	b.Run("two-replicas", func(b *testing.B) {
		results[1] = runLoad(b, viaGateway, func(ctx context.Context, cs *mcp.ClientSession, text string) error {
			out, err := gw(b, cs, map[string]any{"action": "call", "server": "open", "tool": "echo", "arguments": map[string]any{"text": text}})
			if err == nil && !strings.Contains(out, text) {
				err = fmt.Errorf("answer %q", out)
			}
			return err
		})
	})
	b.Logf("tools/list during the load: %d", c.open.Requests("tools/list")-lists)
	d, g := results[0], results[1]
	if d.calls > 0 && g.calls > 0 {
		b.Logf("%d callers: direct p50 %v p99 %v %.0f calls/s; two replicas p50 %v p99 %v %.0f calls/s; p50 ×%.2f, p99 ×%.2f, throughput ×%.2f",
			loadCallers, d.p50, d.p99, d.rate, g.p50, g.p99, g.rate,
			float64(g.p50)/float64(d.p50), float64(g.p99)/float64(d.p99), g.rate/d.rate)
	}
}

type loadResult struct {
	calls    int
	p50, p99 time.Duration
	rate     float64 // calls per second
}

// runLoad makes b.N calls in all from the sessions at once and reports
// p50, p99, calls/s and errors (which fail the benchmark).
func runLoad(b *testing.B, sessions []*mcp.ClientSession, call func(context.Context, *mcp.ClientSession, string) error) loadResult {
	var (
		next   atomic.Int64
		errs   atomic.Int64
		mu     sync.Mutex
		all    = make([]time.Duration, 0, b.N)
		wg     sync.WaitGroup
		first  sync.Once
		sample error
	)
	b.ResetTimer()
	start := time.Now()
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, b.N/len(sessions)+1)
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				t0 := time.Now()
				err := call(ctx, cs, fmt.Sprintf("load-%d-%d", i, n))
				mine = append(mine, time.Since(t0))
				cancel()
				if err != nil {
					errs.Add(1)
					first.Do(func() { sample = err })
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := errs.Load(); n > 0 {
		b.Errorf("%d of %d calls failed, the first: %v", n, b.N, sample)
	}
	slices.Sort(all)
	r := loadResult{calls: len(all), rate: float64(len(all)) / elapsed.Seconds()}
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	b.ReportMetric(float64(r.p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.p99.Microseconds()), "p99-µs")
	b.ReportMetric(r.rate, "calls/s")
	b.ReportMetric(float64(errs.Load()), "errors")
	return r
}

// BenchmarkIdleSession reports the memory a replica holds per person
// whose workspace is open with one upstream session, idle: the heap after
// opening b.N workspaces (each connected to the fake server by one call),
// less the heap before, per workspace.
//
//	go test -run '^$' -bench IdleSession -benchtime 200x ./serve/hosted/
func BenchmarkIdleSession(b *testing.B) {
	c := newCluster(b, &clusterOptions{replicas: 1})
	r := c.replicas[0]
	hosts := make([]*mcp.ClientSession, b.N)
	for i := range hosts {
		hosts[i] = c.host(r.URL, c.apiKey("acme", fmt.Sprintf("idle-%d", i)))
	}
	before := heap()
	b.ResetTimer()
	for i, cs := range hosts {
		mustGW(b, cs, map[string]any{"action": "call", "server": "open", "tool": "echo", "arguments": map[string]any{"text": "hello"}})
		hosts[i] = cs
	}
	b.StopTimer()
	after := heap()
	b.ReportMetric(float64(after-before)/float64(b.N), "heap-B/session")
	b.ReportMetric(0, "ns/op")
}

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
