package manager_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
)

// BenchmarkIdleUpstreamSession reports the live heap one connected, idle
// upstream session costs: b.N servers (all the same fake, each its own
// session and catalog) connected, less the heap before, per session; for
// both protocol generations.
//
//	go test -run '^$' -bench IdleUpstreamSession -benchtime 500x ./manager/
func BenchmarkIdleUpstreamSession(b *testing.B) {
	for name, versions := range map[string][]string{"2026-07-28": {"2026-07-28"}, "session-era": fake.SessionEra} {
		b.Run(name, func(b *testing.B) {
			srv := fake.Start(b, &fake.Options{Versions: versions})
			cfgs := make([]mcpgate.ServerConfig, b.N)
			for i := range cfgs {
				cfgs[i] = mcpgate.ServerConfig{ID: fmt.Sprintf("s%d", i), URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true}
			}
			m, err := manager.New(cfgs, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			before := liveHeap()
			b.ResetTimer()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for _, c := range cfgs {
				if err := m.Connect(ctx, c.ID); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// The fake's own sessions are in this heap too: what is
			// reported is an upper bound on the client's share.
			b.ReportMetric(float64(liveHeap()-before)/float64(b.N), "heap-B/session")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
