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
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	before := len(toolNames(t, m, "s"))
	srv.AddTool("fresh", "a tool added at run time")
	eventually(t, "new tool mirrored", func() bool { return mustStatus(t, m, "s").Tools == before+1 })
}

func TestNewestRefreshWins(t *testing.T) {
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	ctx := ctxT(t, 10*time.Second)
	if err := m.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	s, _ := m.server("s")
	s.mu.Lock()
	sess := s.sess
	mi := &s.catalog.m[kindTools]
	// Pretend a newer refresh (generation +5) already committed.
	mi.requested += 5
	mi.committed = mi.requested
	want := len(s.catalog.tools)
	s.mu.Unlock()
	srv.AddTool("late", "arrives in an older refresh")
	// This refresh started before the newer one committed? No: it starts
	// now, so it gets a newer generation and must commit.
	s.refresh(ctx, sess, kindTools)
	if got := mustStatus(t, m, "s").Tools; got != want+1 {
		t.Fatalf("newer refresh not committed: %d tools, want %d", got, want+1)
	}
	// An answer for an older generation must be discarded.
	s.mu.Lock()
	mi.committed = mi.requested + 1
	s.mu.Unlock()
	srv.RemoveTool("late")
	s.refresh(ctx, sess, kindTools) // generation requested+1 == committed: not newer
	if got := mustStatus(t, m, "s").Tools; got != want+1 {
		t.Fatalf("an older result replaced a newer catalog: %d tools", got)
	}
}

func TestEndlessCursorIsStopped(t *testing.T) {
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
