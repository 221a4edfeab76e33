package serve

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

func TestRequestLogDropsOldestAndFlushesOnClose(t *testing.T) {
	t.Parallel()
	key := make([]byte, seal.KeySize)
	sl, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "mcpgate.db"), sl)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// While nothing writes (a store busy elsewhere), the queue stays
	// bounded by dropping the oldest entries, and add never blocks.
	s := idleRequestLog(st)
	n := logQueueSize + 10
	for i := range n {
		s.Add("", manager.RequestLogEntry{Server: "s", Method: "tools/call", Tool: fmt.Sprint("t", i), Outcome: "ok"})
	}
	go s.run()
	s.Close()
	got, err := st.RecentLog(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != logQueueSize || got[0].Tool != "t10" || got[len(got)-1].Tool != fmt.Sprint("t", n-1) {
		t.Fatalf("after close the store has %d entries (%s..%s), want %d: t10..t%d",
			len(got), got[0].Tool, got[len(got)-1].Tool, logQueueSize, n-1)
	}
	s.Close() // idempotent
}

func TestRequestLogKeepsEachTenantApart(t *testing.T) {
	t.Parallel()
	sl, err := seal.New(make([]byte, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "mcpgate.db"), sl)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := NewRequestLog(st)
	s.For("acme:alice")(manager.RequestLogEntry{Server: "docs", Method: "tools/call", Tool: "a", Outcome: "ok"})
	s.For("acme:bob")(manager.RequestLogEntry{Server: "docs", Method: "tools/call", Tool: "b", Outcome: "ok"})
	s.Close()
	for tenant, want := range map[string]string{"acme:alice": "a", "acme:bob": "b"} {
		got, err := st.RecentLog(t.Context(), tenant, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Tool != want || got[0].Tenant != tenant {
			t.Errorf("%s's log: %d entries, want only its own call %q", tenant, len(got), want)
		}
	}
}

// Under load the writer does not wait out logBatchDelay once logFlushAt
// entries are waiting: a queue that fills faster than the delay is written
// before it drops anything.
func TestRequestLogWritesEarlyWhenHalfFull(t *testing.T) {
	t.Parallel()
	s := idleRequestLog(nil)
	for i := range logFlushAt - 1 {
		s.Add("", manager.RequestLogEntry{Server: "s", Method: "tools/call", Tool: fmt.Sprint("t", i), Outcome: "ok"})
	}
	select {
	case <-s.full:
		t.Fatalf("the writer was hurried with %d entries waiting, fewer than %d", logFlushAt-1, logFlushAt)
	default:
	}
	s.Add("", manager.RequestLogEntry{Server: "s", Method: "tools/call", Tool: "last", Outcome: "ok"})
	select {
	case <-s.full:
	default:
		t.Fatalf("%d entries waiting did not end the writer's wait", logFlushAt)
	}
}
