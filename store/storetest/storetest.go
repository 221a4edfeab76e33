// Package storetest is the behavioural suite every [store.Store] backend
// passes. A backend's tests call [Run]:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mybackend.Open(...) // a new, empty store
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		}, nil)
//	}
//
// Backends may keep times to the microsecond only (PostgreSQL does), and
// need not tell a nil slice from an empty one; the suite allows both.
// Tests of how secrets look at rest read raw storage, so they live with
// each backend.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpgate/mcpgate/store"
)

// Options describe what a backend can do beyond the interface. nil means
// nothing more.
type Options struct {
	// Reopen returns a second handle on the data of s, as another process
	// would open it (a second SQLite handle on the same file, a second
	// PostgreSQL pool). It closes it in t.Cleanup. When set, the locking
	// tests also contend across the two handles.
	Reopen func(t *testing.T, s store.Store) store.Store
}

// Run runs the suite, its subtests in parallel. open returns a new, empty
// store and closes it in t.Cleanup; it is called once or more per subtest,
// from several subtests at once.
func Run(t *testing.T, open func(t *testing.T) store.Store, opts *Options) {
	var o Options
	if opts != nil {
		o = *opts
	}
	// handles returns the handles the locking tests contend through: a
	// new store and, if the backend can, a second handle on it.
	handles := func(t *testing.T) []store.Store {
		s := open(t)
		if o.Reopen == nil {
			return []store.Store{s}
		}
		return []store.Store{s, o.Reopen(t, s)}
	}

	// Each subtest has stores of its own, so they run side by side: most
	// of their time is waiting on the backend or on a lock's timeout.
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t)
		})
	}
	run("Credential", func(t *testing.T) { testCredential(t, open(t)) })
	run("CredentialNotFound", func(t *testing.T) { testCredentialNotFound(t, open(t)) })
	run("CredentialTenants", func(t *testing.T) { testCredentialTenants(t, open(t)) })
	run("CredentialCopies", func(t *testing.T) { testCredentialCopies(t, open(t)) })
	run("Registration", func(t *testing.T) { testRegistration(t, open(t)) })
	run("Flow", func(t *testing.T) { testFlow(t, open(t)) })
	run("FlowTakenOnce", func(t *testing.T) { testFlowTakenOnce(t, handles(t)) })
	run("Interactions", func(t *testing.T) { testInteractions(t, open(t)) })
	run("Update", func(t *testing.T) { testUpdate(t, open(t)) })
	run("UpdateErrors", func(t *testing.T) { testUpdateErrors(t, open(t)) })
	run("UpdateCommitsAfterCancel", func(t *testing.T) { testUpdateCommitsAfterCancel(t, open(t)) })
	run("UpdatePanic", func(t *testing.T) { testUpdatePanic(t, open(t)) })
	run("UpdateExcludes", func(t *testing.T) { testUpdateExcludes(t, handles(t)) })
	run("UpdateReadersProceed", func(t *testing.T) { testUpdateReadersProceed(t, handles(t)) })
	run("UpdateWaitHonoursContext", func(t *testing.T) { testUpdateWaitHonoursContext(t, handles(t)) })
	run("Lock", func(t *testing.T) { testLock(t, handles(t)) })
	run("Log", func(t *testing.T) { testLog(t, open(t)) })
	run("LogBound", func(t *testing.T) { testLogBound(t, open(t)) })
	run("LogAcrossHandles", func(t *testing.T) { testLogAcrossHandles(t, handles(t)) })
	catalogs := func(t *testing.T, hs []store.Store) []store.CatalogStore {
		var out []store.CatalogStore
		for _, h := range hs {
			cs, ok := h.(store.CatalogStore)
			if !ok {
				t.Skip("the backend keeps no catalogs")
			}
			out = append(out, cs)
		}
		return out
	}
	run("Catalog", func(t *testing.T) { testCatalog(t, catalogs(t, []store.Store{open(t)})[0]) })
	run("CatalogBound", func(t *testing.T) { testCatalogBound(t, catalogs(t, []store.Store{open(t)})[0]) })
	run("CatalogAcrossHandles", func(t *testing.T) { testCatalogAcrossHandles(t, catalogs(t, handles(t))) })
}

func sampleLogEntry(tenant string, i int) *store.LogEntry {
	return &store.LogEntry{
		Tenant: tenant, Time: at(time.Duration(i) * time.Second), Server: "docs", Method: "tools/call",
		Tool: "tool" + strconv.Itoa(i), Duration: time.Duration(i) * time.Millisecond, Outcome: "ok",
		HTTPStatus: 200, BytesIn: int64(100 + i), BytesOut: int64(10 + i),
	}
}

// testLog checks that entries come back whole, oldest first, the last N
// of them, and only the tenant's own.
func testLog(t *testing.T, s store.Store) {
	ctx := context.Background()
	got, err := s.RecentLog(ctx, "", 10)
	check(t, err)
	if len(got) != 0 {
		t.Fatalf("empty log: %d entries", len(got))
	}
	var want []*store.LogEntry
	for i := range 5 {
		e := sampleLogEntry("", i)
		want = append(want, e)
		check(t, s.AppendLog(ctx, []*store.LogEntry{e}))
	}
	check(t, s.AppendLog(ctx, []*store.LogEntry{sampleLogEntry("t2", 99)}))
	check(t, s.AppendLog(ctx, nil))

	got, err = s.RecentLog(ctx, "", 0)
	check(t, err)
	ignoreID := cmpopts.IgnoreFields(store.LogEntry{}, "ID")
	if d := cmp.Diff(want, got, ignoreID); d != "" {
		t.Fatalf("all entries (-want +got):\n%s", d)
	}
	for i := 1; i < len(got); i++ {
		if got[i].ID <= got[i-1].ID {
			t.Errorf("IDs not increasing: %d then %d", got[i-1].ID, got[i].ID)
		}
	}
	got, err = s.RecentLog(ctx, "", 2)
	check(t, err)
	if d := cmp.Diff(want[3:], got, ignoreID); d != "" {
		t.Errorf("last 2 (-want +got):\n%s", d)
	}
	got, err = s.RecentLog(ctx, "t2", 10)
	check(t, err)
	if len(got) != 1 || got[0].Tenant != "t2" || got[0].Tool != "tool99" {
		t.Errorf("tenant t2 sees %d entries, want only its own", len(got))
	}
	got, err = s.RecentLog(ctx, "t3", 10)
	check(t, err)
	if len(got) != 0 {
		t.Errorf("tenant t3 sees %d entries of others", len(got))
	}
}

// testLogBound checks that a tenant's log keeps only the newest
// MaxLogEntries, and that trimming one tenant leaves another alone.
func testLogBound(t *testing.T, s store.Store) {
	ctx := context.Background()
	check(t, s.AppendLog(ctx, []*store.LogEntry{sampleLogEntry("other", 0)}))
	n := store.MaxLogEntries + 25
	var batch []*store.LogEntry
	for i := range n {
		batch = append(batch, sampleLogEntry("", i))
		if len(batch) == 100 || i == n-1 {
			check(t, s.AppendLog(ctx, batch))
			batch = nil
		}
	}
	got, err := s.RecentLog(ctx, "", 0)
	check(t, err)
	if len(got) != store.MaxLogEntries {
		t.Fatalf("kept %d entries, want %d", len(got), store.MaxLogEntries)
	}
	// Every kept entry whole and in order: a batch of 100 is written in
	// more than one statement by a store that chunks its inserts.
	var want []*store.LogEntry
	for i := n - store.MaxLogEntries; i < n; i++ {
		want = append(want, sampleLogEntry("", i))
	}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(store.LogEntry{}, "ID")); d != "" {
		t.Errorf("kept entries, want tool%d..tool%d (the newest) (-want +got):\n%s", n-store.MaxLogEntries, n-1, d)
	}
	got, err = s.RecentLog(ctx, "", store.MaxLogEntries*2)
	check(t, err)
	if len(got) != store.MaxLogEntries {
		t.Errorf("asking for more than kept: %d entries", len(got))
	}
	got, err = s.RecentLog(ctx, "other", 0)
	check(t, err)
	if len(got) != 1 {
		t.Errorf("another tenant's log: %d entries, want 1", len(got))
	}
}

// testLogAcrossHandles checks that what one handle (process) appends,
// another reads, and that appends from both interleave without loss.
func testLogAcrossHandles(t *testing.T, handles []store.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for h, s := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if err := s.AppendLog(ctx, []*store.LogEntry{sampleLogEntry("", h*100+i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := handles[len(handles)-1].RecentLog(ctx, "", 0)
	check(t, err)
	if len(got) != 20*len(handles) {
		t.Errorf("%d entries after %d appends", len(got), 20*len(handles))
	}
}

// testLock checks that a named lock excludes holders on every handle,
// that waiting honours the context, that other names and other work are
// not blocked, and that unlock lets the next holder in.
func testLock(t *testing.T, handles []store.Store) {
	a, b := handles[0], handles[len(handles)-1]
	ctx := context.Background()
	unlock, err := a.Lock(ctx, "login/t/s")
	check(t, err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short, "login/t/s"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second holder of a held lock: %v, want the context's deadline", err)
	}
	other, err := b.Lock(ctx, "login/t/other")
	check(t, err)
	other()
	// A held named lock must not block credential updates.
	update(t, b, "s", keep)

	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(ctx, "login/t/s")
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("lock taken while held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		check(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("waiter did not get the lock after unlock")
	}
}

// equal compares records field by field, times as instants.
var equal = []cmp.Option{cmpopts.EquateEmpty()}

func diff(t *testing.T, what string, got, want any) {
	t.Helper()
	if d := cmp.Diff(want, got, equal...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: err = %v, want ErrNotFound", what, err)
	}
}

// allSet fails if a field of the sample record v is zero, so that a field
// added to a record type is added to the samples, and so compared.
func allSet(t *testing.T, v any) {
	t.Helper()
	var walk func(prefix string, rv reflect.Value)
	walk = func(prefix string, rv reflect.Value) {
		for i := range rv.NumField() {
			f, fv := rv.Type().Field(i), rv.Field(i)
			if f.Anonymous && fv.Kind() == reflect.Struct {
				walk(prefix+f.Name+".", fv)
				continue
			}
			if fv.IsZero() {
				t.Errorf("sample %s leaves %s%s unset: set it so that the suite compares it", rv.Type().Name(), prefix, f.Name)
			}
		}
	}
	walk("", reflect.ValueOf(v).Elem())
}

// at is a fixed instant, to the microsecond, in a zone other than UTC so
// that backends are seen to keep instants, not wall clocks.
func at(d time.Duration) time.Time {
	return time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.FixedZone("UTC+5:30", 5*3600+1800)).Add(d)
}

// later is an expiry that has not passed.
func later() time.Time { return time.Now().Add(time.Hour).Truncate(time.Microsecond) }

func sampleCredential(tenant, server string) *store.Credential {
	return &store.Credential{
		Binding: store.Binding{
			Tenant:      tenant,
			Server:      server,
			Resource:    "https://" + server + ".example/mcp",
			Issuer:      "https://auth.example",
			ClientID:    "client-" + server,
			RedirectURI: "http://127.0.0.1:33418/callback",
		},
		Kind:         store.KindOAuth,
		AccessToken:  "access-" + tenant + "-" + server,
		TokenType:    "Bearer",
		RefreshToken: "refresh-" + tenant + "-" + server,
		Expiry:       at(time.Hour),
		Scopes:       []string{"read", "write"},
		StepUpScopes: []string{"admin"},
		StepUpCount:  2,
		StepUpAt:     at(-time.Minute),
		UpdatedAt:    at(0),
		DPoPKey:      "dpop-key-" + tenant + "-" + server,
	}
}

func testCredential(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sampleCredential("acme", "files")
	allSet(t, c)
	check(t, s.PutCredential(ctx, c))
	got, err := s.GetCredential(ctx, "acme", "files")
	check(t, err)
	diff(t, "GetCredential", got, c)

	// Put replaces every field, including with zero values.
	c2 := &store.Credential{
		Binding:     store.Binding{Tenant: "acme", Server: "files", Resource: "https://files.example/v2"},
		Kind:        store.KindBearer,
		AccessToken: "static-token",
	}
	check(t, s.PutCredential(ctx, c2))
	got, err = s.GetCredential(ctx, "acme", "files")
	check(t, err)
	diff(t, "GetCredential after replacing", got, c2)
}

func testCredentialNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetCredential(ctx, "", "nothing")
	wantNotFound(t, "GetCredential of a missing credential", err)
	check(t, s.DeleteCredential(ctx, "", "nothing"))

	check(t, s.PutCredential(ctx, sampleCredential("", "files")))
	check(t, s.DeleteCredential(ctx, "", "files"))
	_, err = s.GetCredential(ctx, "", "files")
	wantNotFound(t, "GetCredential after DeleteCredential", err)
	check(t, s.DeleteCredential(ctx, "", "files"))
}

func testCredentialTenants(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenants := []string{"", "a", "b"}
	for _, tenant := range tenants {
		check(t, s.PutCredential(ctx, sampleCredential(tenant, "files")))
	}
	check(t, s.DeleteCredential(ctx, "a", "files"))
	_, err := s.GetCredential(ctx, "a", "files")
	wantNotFound(t, "GetCredential of a deleted tenant's credential", err)
	for _, tenant := range []string{"", "b"} {
		got, err := s.GetCredential(ctx, tenant, "files")
		check(t, err)
		diff(t, fmt.Sprintf("tenant %q's credential", tenant), got, sampleCredential(tenant, "files"))
	}
	_, err = s.GetCredential(ctx, "c", "files")
	wantNotFound(t, "GetCredential for a tenant that has none", err)
}

// testCredentialCopies checks that a store keeps no reference to what it
// is given or returns.
func testCredentialCopies(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sampleCredential("", "files")
	check(t, s.PutCredential(ctx, c))
	c.AccessToken, c.Scopes[0] = "changed after Put", "changed"
	got, err := s.GetCredential(ctx, "", "files")
	check(t, err)
	got.AccessToken, got.Scopes[0] = "changed after Get", "changed"
	again, err := s.GetCredential(ctx, "", "files")
	check(t, err)
	diff(t, "GetCredential after changing what was put and got", again, sampleCredential("", "files"))
}

func sampleRegistration(tenant, redirect string) *store.Registration {
	return &store.Registration{
		Tenant:                  tenant,
		Issuer:                  "https://auth.example",
		RedirectURI:             redirect,
		ClientID:                "client-" + tenant + redirect,
		ClientSecret:            "secret-" + tenant + redirect,
		ClientSecretExpiresAt:   at(24 * time.Hour),
		TokenEndpointAuthMethod: "client_secret_basic",
		CreatedAt:               at(0),
	}
}

func testRegistration(t *testing.T, s store.Store) {
	ctx := t.Context()
	const issuer = "https://auth.example"
	_, err := s.GetRegistration(ctx, "", issuer, "http://127.0.0.1/cb")
	wantNotFound(t, "GetRegistration of a missing registration", err)
	check(t, s.DeleteRegistration(ctx, "", issuer, "http://127.0.0.1/cb"))

	// The key is (tenant, issuer, redirect URI): each of these is its own.
	regs := []*store.Registration{
		sampleRegistration("", "http://127.0.0.1/cb"),
		sampleRegistration("", "https://gw.example/cb"),
		sampleRegistration("acme", "http://127.0.0.1/cb"),
		{Issuer: issuer, ClientID: "machine", TokenEndpointAuthMethod: "none"}, // no redirect URI: client_credentials
	}
	allSet(t, regs[2])
	for _, r := range regs {
		check(t, s.PutRegistration(ctx, r))
	}
	for _, r := range regs {
		got, err := s.GetRegistration(ctx, r.Tenant, r.Issuer, r.RedirectURI)
		check(t, err)
		diff(t, "GetRegistration", got, r)
	}
	_, err = s.GetRegistration(ctx, "", "https://other.example", "http://127.0.0.1/cb")
	wantNotFound(t, "GetRegistration with another issuer", err)

	replaced := sampleRegistration("", "http://127.0.0.1/cb")
	replaced.ClientID, replaced.ClientSecret = "client-2", ""
	check(t, s.PutRegistration(ctx, replaced))
	got, err := s.GetRegistration(ctx, "", issuer, "http://127.0.0.1/cb")
	check(t, err)
	diff(t, "GetRegistration after replacing", got, replaced)

	check(t, s.DeleteRegistration(ctx, "", issuer, "http://127.0.0.1/cb"))
	_, err = s.GetRegistration(ctx, "", issuer, "http://127.0.0.1/cb")
	wantNotFound(t, "GetRegistration after DeleteRegistration", err)
	got, err = s.GetRegistration(ctx, "acme", issuer, "http://127.0.0.1/cb")
	check(t, err)
	diff(t, "another tenant's registration after DeleteRegistration", got, regs[2])
	check(t, s.DeleteRegistration(ctx, "", issuer, "http://127.0.0.1/cb"))
}

func sampleFlow(state string) *store.Flow {
	return &store.Flow{
		State:       state,
		Tenant:      "acme",
		Server:      "files",
		Verifier:    "verifier-" + state,
		Issuer:      "https://auth.example",
		ClientID:    "client-1",
		RedirectURI: "http://127.0.0.1:33418/callback",
		Resource:    "https://files.example/mcp",
		Scopes:      []string{"read"},
		Expiry:      later(),
	}
}

func testFlow(t *testing.T, s store.Store) {
	ctx := t.Context()
	f := sampleFlow("state-1")
	allSet(t, f)
	check(t, s.PutFlow(ctx, f))
	check(t, s.PutFlow(ctx, sampleFlow("state-2")))

	got, err := s.TakeFlow(ctx, "state-1")
	check(t, err)
	diff(t, "TakeFlow", got, f)
	_, err = s.TakeFlow(ctx, "state-1")
	wantNotFound(t, "TakeFlow a second time", err)
	_, err = s.TakeFlow(ctx, "never-put")
	wantNotFound(t, "TakeFlow of a missing flow", err)
	if _, err := s.TakeFlow(ctx, "state-2"); err != nil {
		t.Errorf("TakeFlow of another flow after taking one: %v", err)
	}

	expired := sampleFlow("state-expired")
	expired.Expiry = time.Now().Add(-time.Second)
	check(t, s.PutFlow(ctx, expired))
	_, err = s.TakeFlow(ctx, "state-expired")
	wantNotFound(t, "TakeFlow of an expired flow", err)

	noExpiry := sampleFlow("state-no-expiry")
	noExpiry.Expiry = time.Time{}
	if err := s.PutFlow(ctx, noExpiry); err == nil {
		t.Errorf("PutFlow of a flow without expiry succeeded; such a flow would never go away")
	}
}

func testFlowTakenOnce(t *testing.T, handles []store.Store) {
	s := handles[0]
	ctx := t.Context()
	const n = 8
	check(t, s.PutFlow(ctx, sampleFlow("race")))
	var taken atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		h := handles[i%len(handles)]
		wg.Go(func() {
			_, err := h.TakeFlow(ctx, "race")
			switch {
			case err == nil:
				taken.Add(1)
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("TakeFlow: %v", err)
			}
		})
	}
	wg.Wait()
	if got := taken.Load(); got != 1 {
		t.Errorf("%d concurrent TakeFlow calls took the flow %d times, want once", n, got)
	}
}

func testInteractions(t *testing.T, s store.Store) {
	ctx := t.Context()
	list, err := s.Interactions(ctx, "acme")
	check(t, err)
	if len(list) != 0 {
		t.Errorf("Interactions of an empty store = %d items", len(list))
	}

	mk := func(tenant, id string, created time.Duration) *store.Interaction {
		return &store.Interaction{
			ID:        id,
			Tenant:    tenant,
			Server:    "files",
			Kind:      "elicitation",
			Message:   "files asks: which folder? (" + id + ")",
			Payload:   []byte(`{"schema":{"type":"object"}}`),
			CreatedAt: time.Now().Add(created).Truncate(time.Microsecond),
			Expiry:    later(),
		}
	}
	second, third, first := mk("acme", "b", -2*time.Minute), mk("acme", "a", -time.Minute), mk("acme", "c", -3*time.Minute)
	allSet(t, first)
	expired := mk("acme", "expired", -4*time.Minute)
	expired.Expiry = time.Now().Add(-time.Second)
	other := mk("other", "a", -5*time.Minute)
	for _, i := range []*store.Interaction{second, expired, third, other, first} {
		check(t, s.PutInteraction(ctx, i))
	}

	list, err = s.Interactions(ctx, "acme")
	check(t, err)
	diff(t, "Interactions (oldest first, unexpired, this tenant's)", list, []*store.Interaction{first, second, third})
	list, err = s.Interactions(ctx, "other")
	check(t, err)
	diff(t, "another tenant's Interactions", list, []*store.Interaction{other})

	// Put replaces an interaction with the same ID.
	third.Message = "answered elsewhere"
	check(t, s.PutInteraction(ctx, third))
	check(t, s.DeleteInteraction(ctx, "acme", "b"))
	check(t, s.DeleteInteraction(ctx, "acme", "b"))
	check(t, s.DeleteInteraction(ctx, "acme", "never-put"))
	list, err = s.Interactions(ctx, "acme")
	check(t, err)
	diff(t, "Interactions after replacing and deleting", list, []*store.Interaction{first, third})
	list, err = s.Interactions(ctx, "other")
	check(t, err)
	diff(t, "another tenant's Interactions after deleting acme's b", list, []*store.Interaction{other})

	// Found by ID alone, whoever's it is; not when expired, deleted, or
	// when two tenants' share the ID.
	got, err := s.Interaction(ctx, "c")
	check(t, err)
	diff(t, "Interaction by ID", got, first)
	_, err = s.Interaction(ctx, "expired")
	wantNotFound(t, "Interaction of an expired one", err)
	_, err = s.Interaction(ctx, "b")
	wantNotFound(t, "Interaction of a deleted one", err)
	_, err = s.Interaction(ctx, "a")
	wantNotFound(t, "Interaction of an ID two tenants use", err)

	noExpiry := mk("acme", "forever", 0)
	noExpiry.Expiry = time.Time{}
	if err := s.PutInteraction(ctx, noExpiry); err == nil {
		t.Errorf("PutInteraction of an interaction without expiry succeeded; it would never go away")
	}
}

// update runs UpdateCredential and fails the test on error.
func update(t *testing.T, s store.Store, server string, fn store.UpdateFunc) *store.Credential {
	t.Helper()
	got, err := s.UpdateCredential(t.Context(), "acme", server, fn)
	if err != nil {
		t.Fatalf("UpdateCredential: %v", err)
	}
	return got
}

func testUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := sampleCredential("acme", "files")

	// Nothing stored, nothing decided.
	got := update(t, s, "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		if cur != nil {
			t.Errorf("fn saw %+v in an empty store", cur)
		}
		return cur, nil
	})
	if got != nil {
		t.Errorf("UpdateCredential keeping nothing returned %+v", got)
	}
	_, err := s.GetCredential(ctx, "acme", "files")
	wantNotFound(t, "GetCredential after keeping nothing", err)

	// Create.
	got = update(t, s, "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		return sampleCredential("acme", "files"), nil
	})
	diff(t, "UpdateCredential's result after creating", got, want)
	stored, err := s.GetCredential(ctx, "acme", "files")
	check(t, err)
	diff(t, "GetCredential after creating", stored, want)

	// Keep: returning cur changes nothing, even if fn changed it.
	got = update(t, s, "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		diff(t, "cur", cur, want)
		cur.AccessToken = "changed in place but kept"
		return cur, nil
	})
	if got == nil || got.RefreshToken != want.RefreshToken {
		t.Errorf("UpdateCredential keeping returned %+v, want the current credential", got)
	}
	stored, err = s.GetCredential(ctx, "acme", "files")
	check(t, err)
	diff(t, "GetCredential after keeping", stored, want)

	// Replace, seeing the value committed before.
	next := sampleCredential("acme", "files")
	next.AccessToken, next.RefreshToken, next.Expiry = "access-2", "refresh-2", at(2*time.Hour)
	got = update(t, s, "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		diff(t, "cur", cur, want)
		return next, nil
	})
	diff(t, "UpdateCredential's result after replacing", got, next)
	stored, err = s.GetCredential(ctx, "acme", "files")
	check(t, err)
	diff(t, "GetCredential after replacing", stored, next)

	// Delete.
	got = update(t, s, "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		diff(t, "cur", cur, next)
		return nil, nil
	})
	if got != nil {
		t.Errorf("UpdateCredential deleting returned %+v", got)
	}
	_, err = s.GetCredential(ctx, "acme", "files")
	wantNotFound(t, "GetCredential after deleting", err)

	// fn gets the caller's context (its values, at least).
	type key struct{}
	_, err = s.UpdateCredential(context.WithValue(ctx, key{}, "mark"), "acme", "files",
		func(ctx context.Context, cur *store.Credential) (*store.Credential, error) {
			if ctx.Value(key{}) != "mark" {
				t.Errorf("fn's context lacks the caller's values")
			}
			return cur, nil
		})
	check(t, err)

	// A decision for another credential is refused.
	_, err = s.UpdateCredential(ctx, "acme", "files", func(context.Context, *store.Credential) (*store.Credential, error) {
		return sampleCredential("acme", "other"), nil
	})
	if err == nil {
		t.Errorf("UpdateCredential of files accepted a credential for another server")
	}
	for _, server := range []string{"files", "other"} {
		_, err = s.GetCredential(ctx, "acme", server)
		wantNotFound(t, "GetCredential after a refused update", err)
	}
}

func testUpdateErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	errReason := errors.New("invalid_grant")
	check(t, s.PutCredential(ctx, sampleCredential("acme", "files")))

	tests := []struct {
		name   string
		decide func(cur *store.Credential) *store.Credential
		want   *store.Credential // stored afterwards; nil for none
	}{
		{"keep", func(cur *store.Credential) *store.Credential { return cur }, sampleCredential("acme", "files")},
		{"replace", func(*store.Credential) *store.Credential {
			c := sampleCredential("acme", "files")
			c.StepUpCount = 3
			return c
		}, func() *store.Credential { c := sampleCredential("acme", "files"); c.StepUpCount = 3; return c }()},
		{"delete", func(*store.Credential) *store.Credential { return nil }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.UpdateCredential(ctx, "acme", "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
				return tt.decide(cur), fmt.Errorf("refreshing: %w", errReason)
			})
			if !errors.Is(err, errReason) {
				t.Errorf("UpdateCredential = %v, want fn's error", err)
			}
			got, err := s.GetCredential(ctx, "acme", "files")
			if tt.want == nil {
				wantNotFound(t, "GetCredential after deleting with an error", err)
				return
			}
			check(t, err)
			diff(t, "GetCredential after deciding with an error", got, tt.want)
		})
	}
}

// testUpdateCommitsAfterCancel: a refresh that succeeded must be stored
// even if the caller gave up meanwhile, or a rotated refresh token is lost.
func testUpdateCommitsAfterCancel(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	want := sampleCredential("acme", "files")
	_, err := s.UpdateCredential(ctx, "acme", "files", func(context.Context, *store.Credential) (*store.Credential, error) {
		cancel()
		return sampleCredential("acme", "files"), nil
	})
	if err != nil {
		t.Errorf("UpdateCredential whose context ended during fn: %v", err)
	}
	got, err := s.GetCredential(t.Context(), "acme", "files")
	check(t, err)
	diff(t, "GetCredential", got, want)
}

// testUpdatePanic: a panicking fn must not leave the credential locked.
func testUpdatePanic(t *testing.T, s store.Store) {
	func() {
		defer func() {
			if recover() == nil {
				t.Error("UpdateCredential swallowed fn's panic")
			}
		}()
		s.UpdateCredential(t.Context(), "acme", "files", func(context.Context, *store.Credential) (*store.Credential, error) {
			panic("boom")
		})
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := s.UpdateCredential(ctx, "acme", "files", keep); err != nil {
		t.Errorf("UpdateCredential after a panicking one: %v", err)
	}
}

func keep(_ context.Context, cur *store.Credential) (*store.Credential, error) { return cur, nil }

// testUpdateExcludes: concurrent read-modify-write cycles through every
// handle lose no update, and no two run at once.
func testUpdateExcludes(t *testing.T, handles []store.Store) {
	const workers, rounds = 6, 4
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		h := handles[w%len(handles)]
		wg.Go(func() {
			for range rounds {
				_, err := h.UpdateCredential(t.Context(), "acme", "counter", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					defer inside.Add(-1)
					n := 0
					if cur != nil {
						var err error
						if n, err = strconv.Atoi(cur.AccessToken); err != nil {
							return cur, err
						}
					}
					time.Sleep(2 * time.Millisecond) // widen the window a lost update needs
					next := sampleCredential("acme", "counter")
					next.AccessToken = strconv.Itoa(n + 1)
					return next, nil
				})
				if err != nil {
					t.Errorf("UpdateCredential: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("fn ran concurrently with another fn for the same credential %d times", n)
	}
	got, err := handles[0].GetCredential(t.Context(), "acme", "counter")
	check(t, err)
	if want := strconv.Itoa(workers * rounds); got.AccessToken != want {
		t.Errorf("counter = %s after %d increments: updates were lost", got.AccessToken, workers*rounds)
	}
}

// holdLock runs an UpdateCredential on s whose fn waits until the
// returned release is called; it returns once fn is running.
func holdLock(t *testing.T, s store.Store, server string) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := s.UpdateCredential(context.Background(), "acme", server, func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
			close(held)
			<-done
			return cur, nil
		})
		if err != nil {
			t.Errorf("holding UpdateCredential: %v", err)
		}
	})
	<-held
	var once sync.Once
	release = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(release)
	return release
}

// testUpdateReadersProceed: Get is not blocked by an update in progress,
// and sees the last committed value.
func testUpdateReadersProceed(t *testing.T, handles []store.Store) {
	s := handles[0]
	want := sampleCredential("acme", "files")
	check(t, s.PutCredential(t.Context(), want))
	release := holdLock(t, s, "files")
	defer release()
	for i, h := range handles {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		got, err := h.GetCredential(ctx, "acme", "files")
		cancel()
		if err != nil {
			t.Errorf("GetCredential through handle %d during an update: %v", i, err)
			continue
		}
		diff(t, "GetCredential during an update", got, want)
	}
}

// testUpdateWaitHonoursContext: a caller waiting for the lock gives up
// when its context ends, without running fn.
func testUpdateWaitHonoursContext(t *testing.T, handles []store.Store) {
	s := handles[0]
	release := holdLock(t, s, "files")
	defer release()
	for i, h := range handles {
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		start := time.Now()
		_, err := h.UpdateCredential(ctx, "acme", "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
			t.Errorf("fn ran through handle %d while another update held the lock", i)
			return cur, nil
		})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("UpdateCredential through handle %d waiting past its deadline = %v, want context.DeadlineExceeded", i, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("UpdateCredential through handle %d returned %v after its deadline", i, d)
		}
	}
	release()
	// The lock is usable again.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for i, h := range handles {
		if _, err := h.UpdateCredential(ctx, "acme", "files", keep); err != nil {
			t.Errorf("UpdateCredential through handle %d after the holder finished: %v", i, err)
		}
	}
}
