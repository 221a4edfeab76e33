package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/store"
)

// BenchmarkAppendLog appends a burst of 20 entries, as serve's request log
// writes one every 50 ms under load, to a log already at its bound, so
// each batch is trimmed too.
func BenchmarkAppendLog(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "mcpgate.db"), sealer(b, 1))
	ctx := context.Background()
	batch := make([]*store.LogEntry, 20)
	for i := range batch {
		batch[i] = &store.LogEntry{Tenant: "", Time: time.Now(), Server: "demo", Method: "tools/call", Tool: "echo",
			Duration: time.Millisecond, Outcome: "ok", HTTPStatus: 200, BytesIn: 120, BytesOut: 90}
	}
	for range store.MaxLogEntries/len(batch) + 1 {
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
}
