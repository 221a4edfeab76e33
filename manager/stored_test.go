package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// catalogStore opens a fresh SQLite store for catalogs, counting writes.
func catalogStore(t *testing.T) *countingCatalogs {
	t.Helper()
	sl, err := seal.New(bytes.Repeat([]byte{1}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "mcpgate.db"), sl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &countingCatalogs{CatalogStore: st}
}

type countingCatalogs struct {
	store.CatalogStore
	puts atomic.Int32
}

func (c *countingCatalogs) PutCatalog(ctx context.Context, cat *store.Catalog) error {
	c.puts.Add(1)
	return c.CatalogStore.PutCatalog(ctx, cat)
}

// listedOnce lists the server's catalogs in a manager over st and closes
// it, as a process that ran `mcpgate list` would.
func listedOnce(t *testing.T, st store.CatalogStore, c mcpgate.ServerConfig) {
	t.Helper()
	m, err := New([]mcpgate.ServerConfig{c}, &Options{Catalogs: st})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close() // waits for the catalog's write
	// Connected, so a catalog stored before is listed again, not read.
	if err := m.Connect(ctxT(t, 10*time.Second), c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Tools(ctxT(t, 10*time.Second), c.ID); err != nil {
		t.Fatal(err)
	}
}

func TestStoredCatalogAnswersWithoutConnecting(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	st := catalogStore(t)
	listedOnce(t, st, cfg("s", srv.URL))
	if n := st.puts.Load(); n != 1 {
		t.Errorf("one connect wrote the catalog %d times, want once", n)
	}
	want := toolNamesOf(t, srv)
	lists, connects := srv.Requests("tools/list"), srv.Connects()

	m := newManager(t, &Options{Catalogs: st}, cfg("s", srv.URL))
	st0 := mustStatus(t, m, "s")
	if !st0.Cached || st0.State == mcpgate.StateReady || st0.Tools != len(want) || st0.CachedAt.IsZero() {
		t.Errorf("status from the stored catalog: cached %v, state %s, %d tools (want %d)", st0.Cached, st0.State, st0.Tools, len(want))
	}
	if got := toolNames(t, m, "s"); !slices.Equal(got, want) {
		t.Errorf("tools from the stored catalog %v, want %v", got, want)
	}
	ctx := ctxT(t, 10*time.Second)
	if ps, err := m.Prompts(ctx, "s"); err != nil || len(ps) == 0 {
		t.Errorf("prompts from the stored catalog: %d, %v", len(ps), err)
	}
	if rs, err := m.Resources(ctx, "s"); err != nil || len(rs) == 0 {
		t.Errorf("resources from the stored catalog: %d, %v", len(rs), err)
	}
	if _, err := m.Tool(ctx, "s", "echo"); err != nil {
		t.Errorf("describing a stored tool: %v", err)
	}
	if n, c := srv.Requests("tools/list")-lists, srv.Connects()-connects; n != 0 || c != 0 {
		t.Fatalf("answering from the stored catalog sent %d tools/list and made %d connects, want none", n, c)
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateDisconnected {
		t.Errorf("state after reads from the stored catalog: %s, want disconnected", st.State)
	}

	// A call connects as before, and the status is then the live one.
	if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"hi"}`), nil); err != nil {
		t.Fatal(err)
	}
	if srv.Connects() == connects {
		t.Error("a call did not connect")
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady || st.Cached {
		t.Errorf("status after a call: state %s, cached %v; want ready and live", st.State, st.Cached)
	}
	m.Close()
	if n := st.puts.Load(); n != 1 {
		t.Errorf("a second connect listing the same catalog wrote it again (%d writes in all)", n)
	}
}

func toolNamesOf(t *testing.T, srv *fake.Server) []string {
	t.Helper()
	m := newManager(t, nil, cfg("s", srv.URL))
	defer m.Close()
	return toolNames(t, m, "s")
}

// TestStoredCatalogSaysWhatTheServerSaidOfItself: the title and
// instructions a server gave the session that listed its catalog are
// stored with it, sanitized, and a status from the stored catalog says
// them as the live one did, for search to rank alike.
func TestStoredCatalogSaysWhatTheServerSaidOfItself(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			srv := fake.Start(t, &fake.Options{Versions: []string{version},
				Instructions: "On-call rotations\nand alerting.\x1b[31m Key: Bearer abcdefghijklmnopqrstuvwxyz0123456789"})
			st := catalogStore(t)
			live, err := New([]mcpgate.ServerConfig{cfg("s", srv.URL)}, &Options{Catalogs: st})
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close()
			if _, err := live.Tools(ctxT(t, 10*time.Second), "s"); err != nil {
				t.Fatal(err)
			}
			was := mustStatus(t, live, "s")
			if was.ServerTitle != "Fake MCP server" || !strings.HasPrefix(was.ServerInstructions, "On-call rotations and alerting.") ||
				strings.Contains(was.ServerInstructions, "\x1b") || strings.Contains(was.ServerInstructions, "abcdefghij") {
				t.Fatalf("live status: title %q, instructions %q", was.ServerTitle, was.ServerInstructions)
			}
			live.Close() // waits for the catalog's write
			c, err := st.GetCatalog(ctxT(t, 5*time.Second), "", "s")
			if err != nil || c.Title != was.ServerTitle || c.Instructions != was.ServerInstructions {
				t.Fatalf("stored: %+v, %v", c, err)
			}
			m := newManager(t, &Options{Catalogs: st}, cfg("s", srv.URL))
			got := mustStatus(t, m, "s")
			if !got.Cached || got.ServerTitle != was.ServerTitle || got.ServerInstructions != was.ServerInstructions {
				t.Errorf("status from the stored catalog: cached %v, title %q, instructions %q; the live one said %q, %q",
					got.Cached, got.ServerTitle, got.ServerInstructions, was.ServerTitle, was.ServerInstructions)
			}
		})
	}
}

// TestTakeStoredCatalogFromAnotherProcess: a manager answering from a
// stored catalog takes the one another process stored since, without
// connecting: its reads, counts and generation change and OnStateChange
// says so; the same catalog again changes nothing, and a server with a
// live session keeps its own.
func TestTakeStoredCatalogFromAnotherProcess(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	st := catalogStore(t)
	listedOnce(t, st, cfg("s", srv.URL))
	var changes atomic.Int64
	m := newManager(t, &Options{Catalogs: st, OnStateChange: func(Status) { changes.Add(1) }}, cfg("s", srv.URL))
	before := toolNames(t, m, "s")
	was := mustStatus(t, m, "s")

	srv.AddTool("announce", "Announces a text.")
	listedOnce(t, st, cfg("s", srv.URL)) // another process
	connects := srv.Connects()
	ctx := ctxT(t, 10*time.Second)
	if err := m.TakeStoredCatalog(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	now := mustStatus(t, m, "s")
	if !now.Cached || now.Tools != was.Tools+1 || now.Generation == was.Generation || changes.Load() == 0 {
		t.Errorf("after taking the new catalog: cached %v, %d tools (before %d), generation %d (before %d), %d changes said",
			now.Cached, now.Tools, was.Tools, now.Generation, was.Generation, changes.Load())
	}
	if got := toolNames(t, m, "s"); len(got) != len(before)+1 || !slices.Contains(got, "announce") {
		t.Errorf("tools after taking the new catalog: %v", got)
	}
	if c := srv.Connects(); c != connects {
		t.Errorf("taking the stored catalog connected %d times", c-connects)
	}
	said := changes.Load()
	if err := m.TakeStoredCatalog(ctx, "s"); err != nil || changes.Load() != said || mustStatus(t, m, "s").Generation != now.Generation {
		t.Errorf("taking the same catalog again: %v, changes %d → %d", err, said, changes.Load())
	}

	// Live: the session's catalog stays.
	if err := m.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	srv.RemoveTool("announce")
	listedOnce(t, st, cfg("s", srv.URL))
	if err := m.TakeStoredCatalog(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m, "s"); st.Cached || st.State != mcpgate.StateReady {
		t.Errorf("a live server after TakeStoredCatalog: cached %v, %s", st.Cached, st.State)
	}
	if err := m.TakeStoredCatalog(ctx, "nope"); err == nil {
		t.Error("TakeStoredCatalog of an unknown server succeeded")
	}
}

func TestStoredCatalogOfAnotherURLIsIgnored(t *testing.T) {
	t.Parallel()
	old := fake.Start(t, nil)
	srv := fake.Start(t, nil)
	old.AddTool("only_at_the_old_url", "lives at the old URL")
	st := catalogStore(t)
	listedOnce(t, st, cfg("s", old.URL))

	// Configured now with another URL: the stored catalog is not used.
	m := newManager(t, &Options{Catalogs: st}, cfg("s", srv.URL))
	if mustStatus(t, m, "s").Cached {
		t.Fatal("a catalog listed from another URL is shown as the server's")
	}
	connects := srv.Connects()
	if got := toolNames(t, m, "s"); slices.Contains(got, "only_at_the_old_url") {
		t.Errorf("tools %v come from the old URL", got)
	}
	if srv.Connects() == connects {
		t.Error("the server at the new URL was not connected")
	}

	// A URL changed while running drops the held catalog at once. (The
	// connect above stored the new URL's catalog: list the old one again.)
	m.Close()
	listedOnce(t, st, cfg("s", old.URL))
	m2 := newManager(t, &Options{Catalogs: st}, cfg("s", old.URL))
	if !mustStatus(t, m2, "s").Cached {
		t.Fatal("the catalog of the old URL was not loaded for it")
	}
	if err := m2.Update(ctxT(t, 10*time.Second), []mcpgate.ServerConfig{cfg("s", srv.URL)}); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m2, "s"); st.Cached || st.Tools != -1 {
		t.Errorf("after the URL changed: cached %v with %d tools, want nothing held", st.Cached, st.Tools)
	}
	if got := toolNames(t, m2, "s"); slices.Contains(got, "only_at_the_old_url") {
		t.Errorf("tools after the URL changed %v come from the old URL", got)
	}
}

func TestLiveListReplacesStoredCatalog(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	st := catalogStore(t)
	m := newManager(t, &Options{Catalogs: st}, cfg("s", srv.URL))
	ctx := ctxT(t, 10*time.Second)
	if err := m.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first catalog stored", func() bool { return storedHas(t, st, "s", "echo") })
	first, err := st.GetCatalog(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}

	// list_changed makes a new live list, which replaces the stored one.
	srv.AddTool("fresh_tool", "added while connected")
	eventually(t, "the new tool stored", func() bool { return storedHas(t, st, "s", "fresh_tool") })
	next, err := st.GetCatalog(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	if next.Generation <= first.Generation {
		t.Errorf("stored generation went from %d to %d, want it to grow", first.Generation, next.Generation)
	}

	// And the next process answers with it, without connecting.
	connects := srv.Connects()
	m2 := newManager(t, &Options{Catalogs: st}, cfg("s", srv.URL))
	if got := toolNames(t, m2, "s"); !slices.Contains(got, "fresh_tool") {
		t.Errorf("the next process lists %v, without the new tool", got)
	}
	if srv.Connects() != connects {
		t.Error("the next process connected")
	}

	// Disconnected, this process answers from what it last listed.
	if err := m.Disconnect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m, "s"); !st.Cached || st.State != mcpgate.StateDisconnected {
		t.Errorf("after a disconnect: cached %v, state %s", st.Cached, st.State)
	}
	if got := toolNames(t, m, "s"); !slices.Contains(got, "fresh_tool") || srv.Connects() != connects {
		t.Errorf("after a disconnect: tools %v, %d new connects", got, srv.Connects()-connects)
	}
}

func storedHas(t *testing.T, st store.CatalogStore, id, tool string) bool {
	t.Helper()
	c, err := st.GetCatalog(context.Background(), "", id)
	if err != nil {
		return false
	}
	var tools []struct{ Name string }
	if err := json.Unmarshal(c.Tools, &tools); err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(tools, func(x struct{ Name string }) bool { return x.Name == tool })
}

func TestStoredCatalogRefreshedInBackground(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	st := catalogStore(t)
	listedOnce(t, st, cfg("s", srv.URL))
	srv.AddTool("since_stored", "added after the catalog was stored")

	var seen atomicStates
	m := newManager(t, &Options{Catalogs: st, RefreshCached: true, OnStateChange: seen.add}, cfg("s", srv.URL))
	if got := toolNames(t, m, "s"); slices.Contains(got, "since_stored") {
		t.Fatalf("the first answer %v is not the stored catalog", got)
	}
	eventually(t, "ready after the background connect", func() bool { return mustStatus(t, m, "s").State == mcpgate.StateReady })
	if got := toolNames(t, m, "s"); !slices.Contains(got, "since_stored") {
		t.Errorf("after the background connect: %v", got)
	}
	for _, s := range seen.all() {
		if s.State == mcpgate.StateReady && s.Cached {
			t.Errorf("a status said ready and cached at once: %+v", s)
		}
	}
}

func TestStoredCatalogBounds(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	st := catalogStore(t)
	ctx := ctxT(t, 10*time.Second)
	// A stored catalog that breaks the rules a live list keeps is not
	// trusted entry by entry: invalid entries are dropped on load.
	bad := &store.Catalog{Server: "s", URL: srv.URL, FetchedAt: time.Now(),
		Tools: json.RawMessage(`[{"name":"ok","inputSchema":{"type":"object"}},{"name":"has space","inputSchema":{"type":"object"}},{"name":"noschema"},null]`)}
	if err := st.PutCatalog(ctx, bad); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, &Options{Catalogs: st}, cfg("s", srv.URL))
	if got := toolNames(t, m, "s"); strings.Join(got, ",") != "ok" {
		t.Errorf("tools from a stored catalog with invalid entries: %v, want [ok]", got)
	}
	// One older than the maximum age is not used.
	bad.FetchedAt = time.Now().Add(-2 * time.Hour)
	if err := st.PutCatalog(ctx, bad); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, &Options{Catalogs: st, CatalogMaxAge: time.Hour}, cfg("s", srv.URL))
	if mustStatus(t, m2, "s").Cached {
		t.Error("a catalog older than CatalogMaxAge was used")
	}
}

// atomicStates collects the statuses OnStateChange reports.
type atomicStates struct {
	mu  sync.Mutex
	sts []Status
}

func (a *atomicStates) add(s Status) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sts = append(a.sts, s)
}

func (a *atomicStates) all() []Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.sts)
}

// A server added by Update (serve following the config file) answers from
// its stored catalog at once too.
func TestUpdateLoadsTheAddedServersStoredCatalog(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	st := catalogStore(t)
	listedOnce(t, st, cfg("s", srv.URL))
	m := newManager(t, &Options{Catalogs: st})
	connects := srv.Connects()
	if err := m.Update(ctxT(t, 10*time.Second), []mcpgate.ServerConfig{cfg("s", srv.URL)}); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m, "s"); !st.Cached || st.Tools == 0 {
		t.Errorf("an added server's status: cached %v, %d tools", st.Cached, st.Tools)
	}
	if got := toolNames(t, m, "s"); len(got) == 0 || srv.Connects() != connects {
		t.Errorf("an added server listed %v with %d connects", got, srv.Connects()-connects)
	}
}

// Background refreshes of held catalogs connect a bounded number of
// servers at a time: the rest wait for a slot.
func TestBackgroundRefreshesAreBounded(t *testing.T) {
	t.Parallel()
	st := catalogStore(t)
	const n = maxBackgroundRefreshes + 4
	var gates []*gate
	var servers []mcpgate.ServerConfig
	for i := range n {
		g := startGate(t, fake.Start(t, nil).URL)
		c := cfg(string(rune('a'+i)), g.URL)
		listedOnce(t, st, c)
		g.hold()
		gates = append(gates, g)
		servers = append(servers, c)
	}
	m := newManager(t, &Options{Catalogs: st, RefreshCached: true}, servers...)
	for _, c := range servers {
		if got := toolNames(t, m, c.ID); len(got) == 0 {
			t.Fatalf("%s: no tools from the stored catalog", c.ID)
		}
	}
	arrivals := make(chan struct{}, n)
	stop := make(chan struct{})
	defer close(stop)
	for _, g := range gates {
		go func() {
			select {
			case <-g.arrived:
				arrivals <- struct{}{}
			case <-stop:
			}
		}()
	}
	for range maxBackgroundRefreshes {
		select {
		case <-arrivals:
		case <-time.After(10 * time.Second):
			t.Fatal("the background connects did not start")
		}
	}
	// Every slot is held by a connect waiting at its gate, so the others
	// cannot have started.
	connecting := 0
	for _, st := range m.Statuses() {
		if st.State == mcpgate.StateConnecting {
			connecting++
		}
	}
	if connecting != maxBackgroundRefreshes {
		t.Errorf("%d servers connecting at once, want %d", connecting, maxBackgroundRefreshes)
	}
	for _, g := range gates {
		g.release()
	}
	eventually(t, "every server ready", func() bool {
		for _, st := range m.Statuses() {
			if st.State != mcpgate.StateReady {
				return false
			}
		}
		return true
	})
}

// TestStoredDigestSaysWhatReadsAnswerFrom: a server answering from its
// stored catalog has a digest, the same in every process over the same
// catalog and configuration, and the same before and after its tools
// were read (decoded); it changes with the disabled tools and the stored
// lists; a live session, a disabled server or no stored catalog has none.
func TestStoredDigestSaysWhatReadsAnswerFrom(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	st := catalogStore(t)
	c := cfg("s", srv.URL)
	if _, ok := newManager(t, &Options{Catalogs: st}, c).StoredDigest("s"); ok {
		t.Error("a digest without a stored catalog")
	}
	listedOnce(t, st, c)

	m := newManager(t, &Options{Catalogs: st}, c)
	first, ok := m.StoredDigest("s")
	if !ok {
		t.Fatal("no digest of the stored catalog")
	}
	toolNames(t, m, "s") // decodes the stored catalog
	if again, ok := m.StoredDigest("s"); !ok || again != first {
		t.Errorf("after reading the tools: digest %x (%v), want %x", again, ok, first)
	}
	if other, ok := newManager(t, &Options{Catalogs: st}, c).StoredDigest("s"); !ok || other != first {
		t.Errorf("another manager over the same catalog: %x (%v), want %x", other, ok, first)
	}

	// From the sum the store keeps, without reading the lists; from the
	// lists when the store has no sum (a catalog stored before it had).
	counted := &sumlessCatalogs{CatalogStore: st}
	if d, ok := newManager(t, &Options{Catalogs: counted}, c).StoredDigest("s"); !ok || d != first || counted.gets.Load() != 0 {
		t.Errorf("from the store's sum: digest %x (%v), want %x; %d catalogs read, want none", d, ok, first, counted.gets.Load())
	}
	counted.sumless = true
	if d, ok := newManager(t, &Options{Catalogs: counted}, c).StoredDigest("s"); !ok || d != first {
		t.Errorf("from a catalog without a sum: digest %x (%v), want %x", d, ok, first)
	}

	disabled := c
	disabled.DisabledTools = []string{"echo"}
	if d, ok := newManager(t, &Options{Catalogs: st}, disabled).StoredDigest("s"); !ok || d == first {
		t.Errorf("a tool disabled: digest %x (%v), want another than %x", d, ok, first)
	}
	off := c
	off.Enabled = false
	if _, ok := newManager(t, &Options{Catalogs: st}, off).StoredDigest("s"); ok {
		t.Error("a digest for a disabled server")
	}

	stored, err := st.GetCatalog(t.Context(), "", "s")
	if err != nil {
		t.Fatal(err)
	}
	stored.Tools = json.RawMessage(strings.Replace(string(stored.Tools), `"echo"`, `"echo2"`, 1))
	if err := st.PutCatalog(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	if d, ok := newManager(t, &Options{Catalogs: st}, c).StoredDigest("s"); !ok || d == first {
		t.Errorf("another stored tools list: digest %x (%v), want another than %x", d, ok, first)
	}

	// A catalog without its prompts has no digest once that is seen: a
	// read of its prompts would connect.
	stored.Prompts = nil
	if err := st.PutCatalog(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	partial := newManager(t, &Options{Catalogs: st}, c)
	toolNames(t, partial, "s")
	if _, ok := partial.StoredDigest("s"); ok {
		t.Error("a digest of a stored catalog without its prompts")
	}

	ctx := ctxT(t, 10*time.Second)
	if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"hi"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.StoredDigest("s"); ok {
		t.Error("a digest while the server has a live session")
	}
}

// sumlessCatalogs counts the catalogs read whole, and with sumless gives
// them without their sums, as a store whose rows predate them.
type sumlessCatalogs struct {
	store.CatalogStore
	sumless bool
	gets    atomic.Int32
}

func (c *sumlessCatalogs) GetCatalog(ctx context.Context, tenant, server string) (*store.Catalog, error) {
	c.gets.Add(1)
	cat, err := c.CatalogStore.GetCatalog(ctx, tenant, server)
	if err == nil && c.sumless {
		cat.Sum = [32]byte{}
	}
	return cat, err
}

func (c *sumlessCatalogs) Catalogs(ctx context.Context, tenant string) ([]*store.Catalog, error) {
	list, err := c.CatalogStore.Catalogs(ctx, tenant)
	for _, cat := range list {
		if c.sumless {
			cat.Sum = [32]byte{}
		}
	}
	return list, err
}
