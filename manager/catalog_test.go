package manager

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

func toolNames(t *testing.T, m *Manager, id string) []string {
	t.Helper()
	tools, err := m.Tools(ctxT(t, 10*time.Second), id)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

func toolsPage(names ...string) json.RawMessage {
	var tools []map[string]any
	for _, n := range names {
		tools = append(tools, map[string]any{"name": n, "description": "does " + n, "inputSchema": map[string]any{"type": "object"}})
	}
	b, _ := json.Marshal(map[string]any{"tools": tools})
	return b
}

func TestListChangedKeepsLastValidCatalogOnMalformedRefresh(t *testing.T) {
	t.Parallel()
	var current atomic.Value
	current.Store(toolsPage("alpha", "beta"))
	h := fake.StartHostile(t, fake.HostileOptions{
		GetStream: fake.GetStreamOpen,
		Sessions:  true,
		ToolsList: func(string) json.RawMessage { return current.Load().(json.RawMessage) },
	})
	m := newManager(t, nil, cfg("s", h.URL))
	if got := toolNames(t, m, "s"); strings.Join(got, ",") != "alpha,beta" {
		t.Fatalf("initial catalog %v", got)
	}
	eventually(t, "GET stream open", func() bool { return h.OpenStreams() > 0 })

	// A malformed refresh must not erase the valid catalog.
	current.Store(json.RawMessage(`{"tools":"surprise"}`))
	h.Notify("notifications/tools/list_changed")
	eventually(t, "stale after malformed refresh", func() bool { return mustStatus(t, m, "s").Stale })
	if got := toolNames(t, m, "s"); strings.Join(got, ",") != "alpha,beta" {
		t.Fatalf("catalog after malformed refresh %v, want the last valid one", got)
	}
	st := mustStatus(t, m, "s")
	if st.State != mcpgate.StateReady || len(st.Diagnostics) == 0 {
		t.Errorf("status after malformed refresh: %+v", st)
	}

	// A valid refresh replaces it.
	current.Store(toolsPage("gamma"))
	h.Notify("notifications/tools/list_changed")
	eventually(t, "catalog replaced", func() bool { return !mustStatus(t, m, "s").Stale && mustStatus(t, m, "s").Tools == 1 })
	if got := toolNames(t, m, "s"); strings.Join(got, ",") != "gamma" {
		t.Fatalf("catalog after valid refresh %v", got)
	}
}

func TestListChangedFromHonestServer(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	before := len(toolNames(t, m, "s"))
	srv.AddTool("fresh", "a tool added at run time")
	eventually(t, "new tool mirrored", func() bool { return mustStatus(t, m, "s").Tools == before+1 })
}

// A flood of list_changed notifications costs at most the refresh that
// was running and one more, never one list per notification, and the
// catalog ends up as the server's last one.
func TestListChangedFloodIsCoalesced(t *testing.T) {
	t.Parallel()
	var current atomic.Value
	current.Store(toolsPage("alpha"))
	release := make(chan struct{})
	var lists atomic.Int32
	h := fake.StartHostile(t, fake.HostileOptions{GetStream: fake.GetStreamOpen, ToolsList: func(string) json.RawMessage {
		if lists.Add(1) > 1 {
			<-release // hold every refresh after the first list
		}
		return current.Load().(json.RawMessage)
	}})
	m := newManager(t, nil, cfg("s", h.URL))
	if got := toolNames(t, m, "s"); strings.Join(got, ",") != "alpha" {
		t.Fatalf("first catalog %v", got)
	}
	eventually(t, "stream open", func() bool { return h.OpenStreams() == 1 })
	current.Store(toolsPage("omega"))
	for range 300 {
		h.Notify("notifications/tools/list_changed")
	}
	eventually(t, "a refresh started", func() bool { return lists.Load() >= 2 })
	s, _ := m.server("s")
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	eventually(t, "every notification seen", func() bool {
		sess.refresh.mu.Lock()
		defer sess.refresh.mu.Unlock()
		return sess.refresh.kinds[kindTools].wanted >= 301
	})
	close(release)
	eventually(t, "catalog replaced", func() bool {
		names := toolNames(t, m, "s")
		return len(names) == 1 && names[0] == "omega"
	})
	time.Sleep(200 * time.Millisecond)
	if n := lists.Load(); n > 3 {
		t.Fatalf("300 notifications made %d tools/list requests; want at most 3 (connect, the running refresh, one queued)", n)
	}
}

func TestEndlessCursorIsStopped(t *testing.T) {
	t.Parallel()
	hook := fake.EndlessCursor()
	h := fake.StartHostile(t, fake.HostileOptions{ToolsList: hook.List})
	lim := Limits{MaxPages: 7}
	m := newManager(t, &Options{Limits: lim}, cfg("s", h.URL))
	names := toolNames(t, m, "s")
	if hook.Hits() != 7 {
		t.Errorf("fetched %d pages, want the bound 7", hook.Hits())
	}
	if len(names) != 7 {
		t.Errorf("kept %d tools, want the 7 from the pages read", len(names))
	}
	st := mustStatus(t, m, "s")
	if st.State != mcpgate.StateReady || !hasDiag(st, "stopped after 7 pages") {
		t.Errorf("status: %+v", st)
	}
}

func TestOversizedAndInvalidEntriesDropped(t *testing.T) {
	t.Parallel()
	hook := fake.OversizedToolsList(3, 100<<10)
	h := fake.StartHostile(t, fake.HostileOptions{ToolsList: hook.List})
	m := newManager(t, nil, cfg("s", h.URL))
	names := toolNames(t, m, "s")
	for _, n := range names {
		if n == "" || strings.HasPrefix(n, "huge") || strings.HasPrefix(n, "bad") {
			t.Errorf("kept invalid or oversized tool %q", n)
		}
	}
	if len(names) == 0 {
		t.Fatal("dropped the valid tools too")
	}
	st := mustStatus(t, m, "s")
	if !hasDiag(st, "exceeds the 65536-byte bound") || !hasDiag(st, "empty name") || !hasDiag(st, "inputSchema") {
		t.Errorf("diagnostics do not explain the drops: %q", st.Diagnostics)
	}
}

func hasDiag(st Status, sub string) bool {
	for _, d := range st.Diagnostics {
		if strings.Contains(d, sub) {
			return true
		}
	}
	return false
}
