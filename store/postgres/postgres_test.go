package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/postgres"
	"github.com/mcpgate/mcpgate/store/postgres/pgtest"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/storetest"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	goleak.VerifyTestMain(m)
}

func sealer(t testing.TB, b byte) *seal.Sealer {
	t.Helper()
	s, err := seal.New(bytes.Repeat([]byte{b}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func open(t testing.TB, dsn string, sl *seal.Sealer) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn, sl, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	pgtest.Server(t)  // skipped, or failed in CI, before any subtest
	var dsns sync.Map // *postgres.Store → its DSN, for Reopen
	storetest.Run(t, func(t *testing.T) store.Store {
		dsn := pgtest.DSN(t)
		s := open(t, dsn, sealer(t, 1))
		dsns.Store(s, dsn)
		return s
	}, &storetest.Options{
		// A second pool on the same schema, as another replica has.
		Reopen: func(t *testing.T, s store.Store) store.Store {
			dsn, _ := dsns.Load(s)
			return open(t, dsn.(string), sealer(t, 1))
		},
	})
}

// Secrets are sealed at rest, bound to their row: a sealed value copied
// to another row does not open.
func TestSecretsAreSealed(t *testing.T) {
	dsn := pgtest.DSN(t)
	s := open(t, dsn, sealer(t, 1))
	ctx := t.Context()
	for _, server := range []string{"files", "mail"} {
		err := s.PutCredential(ctx, &store.Credential{
			Binding:     store.Binding{Tenant: "acme", Server: server, Resource: "https://" + server + ".example/mcp"},
			Kind:        store.KindOAuth,
			AccessToken: "access-secret-" + server, RefreshToken: "refresh-secret-" + server,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var dump string
	if err := conn.QueryRow(ctx, `SELECT string_agg(c::text, ' ') FROM credentials c`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dump, "secret") {
		t.Fatalf("a secret is stored in the clear: %s", dump)
	}
	if _, err := conn.Exec(ctx, `UPDATE credentials SET access_token = (SELECT access_token FROM credentials WHERE server = 'mail') WHERE server = 'files'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetCredential(ctx, "acme", "files"); err == nil || !strings.Contains(err.Error(), store.ErrSealed.Error()) {
		t.Fatalf("a sealed value moved to another row opened: %v", err)
	}
}

// Replicas starting at once migrate the schema once, and a later start
// finds it done.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	dsn := pgtest.DSN(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dsn, sealer(t, 1), nil)
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	s := open(t, dsn, sealer(t, 1))
	if err := s.PutCredential(t.Context(), &store.Credential{Binding: store.Binding{Server: "x"}}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var rows, version int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version) FROM mcpgate_schema`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || version < 1 {
		t.Errorf("schema table: %d rows, version %d", rows, version)
	}
}

// Every replica hears of a credential another one changed, at once.
func TestWatchSeesOtherReplicas(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := open(t, dsn, sealer(t, 1)), open(t, dsn, sealer(t, 1))
	ctx, cancel := context.WithCancel(t.Context())
	changes := make(chan store.Change, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Watch(ctx, func(c store.Change) { changes <- c })
	}()
	defer func() { cancel(); <-done }()
	// Listening starts asynchronously: write until the first change arrives.
	cred := &store.Credential{Binding: store.Binding{Tenant: "acme", Server: "files"}, Kind: store.KindOAuth}
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		if err := b.PutCredential(t.Context(), cred); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-changes:
			if c != (store.Change{Kind: store.ChangeCredential, Tenant: "acme", Server: "files"}) {
				t.Fatalf("change %+v", c)
			}
			got = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no change seen")
		}
	}
	start := time.Now()
	if err := b.DeleteCredential(t.Context(), "acme", "files"); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case c := <-changes:
			if c.Kind != store.ChangeCredential {
				continue
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("the deletion was seen after %v", d)
			}
			return
		case <-deadline:
			t.Fatal("the deletion was not seen")
		}
	}
}

// A replica that dies holding a credential's lock does not block the
// others: PostgreSQL releases the lock with its connection.
func TestLockOfADeadReplicaIsReleased(t *testing.T) {
	dsn := pgtest.DSN(t)
	name := "mcpgate-dying-" + strings.ToLower(rand.Text()[:8])
	a, b := open(t, dsn+"&application_name="+name, sealer(t, 1)), open(t, dsn, sealer(t, 1))
	held, stuck := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		// The holder hangs with the lock: only its death can free it.
		a.UpdateCredential(context.Background(), "acme", "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
			close(held)
			<-stuck
			return cur, nil
		})
	})
	defer func() { close(stuck); wg.Wait() }()
	<-held
	// The replica "dies": its connections are terminated.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, name); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = b.UpdateCredential(ctx, "acme", "files", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		return cur, nil
	})
	if err != nil {
		t.Fatalf("the lock of a dead replica was not released: %v", err)
	}
}

// A wrong DSN never echoes its password.
func TestOpenErrorsHideThePassword(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=1&sslmode=disable", sealer(t, 1), nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("open with a wrong DSN: %v", err)
	}
	_, err = postgres.Open(t.Context(), "postgres://u:hunter2@%zz", sealer(t, 1), nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("open with a broken DSN: %v", err)
	}
}

// A catalog one replica stores or deletes is announced to the others, so
// they can take it instead of listing the server themselves.
func TestWatchSeesCatalogs(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := open(t, dsn, sealer(t, 1)), open(t, dsn, sealer(t, 1))
	ctx, cancel := context.WithCancel(t.Context())
	changes := make(chan store.Change, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Watch(ctx, func(c store.Change) { changes <- c })
	}()
	defer func() { cancel(); <-done }()
	cat := &store.Catalog{Tenant: "acme", Server: "files", URL: "https://files.example/mcp", Tools: []byte(`[]`)}
	want := store.Change{Kind: store.ChangeCatalog, Tenant: "acme", Server: "files"}
	// Listening starts asynchronously: write until the first change arrives.
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		if err := b.PutCatalog(t.Context(), cat); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-changes:
			if c != want {
				t.Fatalf("change %+v, want %+v", c, want)
			}
			got = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no change seen")
		}
	}
	// A put and a deletion of another server's catalog: two changes of it,
	// in order.
	gone := *cat
	gone.Server = "gone"
	if err := b.PutCatalog(t.Context(), &gone); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteCatalog(t.Context(), "acme", "gone"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteCatalog(t.Context(), "acme", "gone"); err != nil { // nothing to delete: no change
		t.Fatal(err)
	}
	seen := 0
	for seen < 2 {
		select {
		case c := <-changes:
			if c.Server == "gone" {
				if c.Kind != store.ChangeCatalog {
					t.Fatalf("change %+v", c)
				}
				seen++
			}
		case <-deadline:
			t.Fatalf("saw %d of the put and deletion of a catalog", seen)
		}
	}
}

// TestWatchSeesOnlyItsOwnSchema: stores in two schemas of one database
// (two deployments, or two tests) share no channel, so a watcher hears
// the changes of its own schema and none of the other's.
func TestWatchSeesOnlyItsOwnSchema(t *testing.T) {
	mine, other := open(t, pgtest.DSN(t), sealer(t, 1)), open(t, pgtest.DSN(t), sealer(t, 1))
	ctx, cancel := context.WithCancel(t.Context())
	changes := make(chan store.Change, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		mine.Watch(ctx, func(c store.Change) { changes <- c })
	}()
	defer func() { cancel(); <-done }()
	theirs := &store.Catalog{Tenant: "acme", Server: "theirs", URL: "https://theirs.example/mcp", Tools: []byte(`[]`)}
	ours := &store.Catalog{Tenant: "acme", Server: "ours", URL: "https://ours.example/mcp", Tools: []byte(`[]`)}
	// Listening starts asynchronously: the other schema writes, then ours,
	// until ours is heard; nothing of theirs may come before or with it.
	deadline := time.After(10 * time.Second)
	for heard := false; !heard; {
		if err := other.PutCatalog(t.Context(), theirs); err != nil {
			t.Fatal(err)
		}
		if err := mine.PutCatalog(t.Context(), ours); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-changes:
			if c.Server != "ours" {
				t.Fatalf("heard %+v from the other schema", c)
			}
			heard = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no change of its own schema heard")
		}
	}
}
