package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/store"
)

// BenchmarkAppendLog appends batches to a log already at its bound, so
// each batch is trimmed too: 20 entries, as serve's request log writes
// when calls are few, and 500, the most it writes at once (logFlushAt)
// when calls come fast. Each reports its cost per entry.
func BenchmarkAppendLog(b *testing.B) {
	for _, n := range []int{20, 500} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "mcpgate.db"), sealer(b, 1))
			ctx := context.Background()
			batch := make([]*store.LogEntry, n)
			for i := range batch {
				batch[i] = &store.LogEntry{Tenant: "", Time: time.Now(), Server: "demo", Method: "tools/call", Tool: "echo",
					Duration: time.Millisecond, Outcome: "ok", HTTPStatus: 200, BytesIn: 120, BytesOut: 90}
			}
			for range store.MaxLogEntries/n + 1 {
				if err := s.AppendLog(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := s.AppendLog(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
	}
}
