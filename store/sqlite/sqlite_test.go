package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
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

func open(t testing.TB, path string, sl *seal.Sealer) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path, sl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	var paths sync.Map // *sqlite.Store → its file, for Reopen
	storetest.Run(t, func(t *testing.T) store.Store {
		path := filepath.Join(t.TempDir(), "mcpgate.db")
		s := open(t, path, sealer(t, 1))
		paths.Store(s, path)
		return s
	}, &storetest.Options{
		Reopen: func(t *testing.T, s store.Store) store.Store {
			path, _ := paths.Load(s)
			return open(t, path.(string), sealer(t, 1))
		},
	})
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "mcpgate.db")
	s := open(t, path, sealer(t, 1))
	if err := s.PutCredential(t.Context(), &store.Credential{Binding: store.Binding{Server: "files"}}); err != nil {
		t.Fatal(err)
	}
	assertMode(t, dir, os.ModeDir|0o700)
	for _, name := range []string{"mcpgate.db", "mcpgate.db-wal", "mcpgate.db-shm"} {
		assertMode(t, filepath.Join(dir, name), 0o600)
	}

	// An existing database that others may read is tightened.
	loose := filepath.Join(t.TempDir(), "loose.db")
	if err := os.WriteFile(loose, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(loose, 0o644)
	open(t, loose, sealer(t, 1))
	assertMode(t, loose, 0o600)
}

// TestWALOutlivesTheStore: closing the last handle checkpoints the WAL
// but leaves the -wal file (emptied) and the -shm file, 0600, for the
// next process, which would otherwise create them again; what the first
// wrote is there for the next.
func TestWALOutlivesTheStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgate.db")
	s, err := sqlite.Open(path, sealer(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutCredential(t.Context(), &store.Credential{Binding: store.Binding{Server: "wal"}, Kind: store.KindBearer, AccessToken: "at"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, name := range []string{"mcpgate.db-wal", "mcpgate.db-shm"} {
		assertMode(t, filepath.Join(dir, name), 0o600)
	}
	if fi, err := os.Stat(filepath.Join(dir, "mcpgate.db-wal")); err != nil || fi.Size() != 0 {
		t.Errorf("the WAL after the last close: %v, %v; want it checkpointed, empty", fi.Size(), err)
	}
	if got, err := open(t, path, sealer(t, 1)).GetCredential(t.Context(), "", "wal"); err != nil || got.AccessToken != "at" {
		t.Errorf("the next handle reads %v, %v", got, err)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("%s has mode %v, want %v", filepath.Base(path), got, want)
	}
}

func TestPathWithURIMetacharacters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a dir?x=1#frag%20", "mcp gate.db")
	open(t, path, sealer(t, 1))
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at the path given: %v", err)
	}
}

// secrets puts one record of each kind whose secret fields hold
// recognisable plaintext, and returns that plaintext.
func secrets(t *testing.T, s store.Store) []string {
	t.Helper()
	ctx := t.Context()
	for _, server := range []string{"a", "b"} {
		err := s.PutCredential(ctx, &store.Credential{
			Binding:      store.Binding{Server: server, Resource: "https://" + server + ".example/mcp", Issuer: "https://auth.example", ClientID: "c"},
			Kind:         store.KindOAuth,
			AccessToken:  "PLAINTEXT-ACCESS-" + server,
			RefreshToken: "PLAINTEXT-REFRESH-" + server,
			DPoPKey:      "PLAINTEXT-DPOP-KEY-" + server,
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.PutRegistration(ctx, &store.Registration{Issuer: "https://auth.example", RedirectURI: "http://127.0.0.1/" + server, ClientID: "c", ClientSecret: "PLAINTEXT-SECRET-" + server})
		if err != nil {
			t.Fatal(err)
		}
		err = s.PutFlow(ctx, &store.Flow{State: "state-" + server, Server: server, Verifier: "PLAINTEXT-VERIFIER-" + server, Expiry: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
	}
	return []string{"PLAINTEXT-ACCESS-", "PLAINTEXT-REFRESH-", "PLAINTEXT-SECRET-", "PLAINTEXT-VERIFIER-", "PLAINTEXT-DPOP-KEY-"}
}

// raw opens the database without the store, as someone who has the file
// but not the key would.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSecretsSealedAtRest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgate.db")
	s, err := sqlite.Open(path, sealer(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	plain := secrets(t, s)
	checkFiles := func(when string) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range plain {
				if bytes.Contains(b, []byte(p)) {
					t.Errorf("%s: %s holds plaintext %s…", when, e.Name(), p)
				}
			}
		}
	}
	checkFiles("while open") // the values are still in the WAL
	s.Close()
	checkFiles("after close") // the WAL was checkpointed into the database
}

func TestMovedSealedValueDoesNotOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	s := open(t, path, sealer(t, 1))
	secrets(t, s)
	db := raw(t, path)
	ctx := t.Context()

	tests := []struct {
		name   string
		tamper string
		read   func() error
	}{
		{"access token", `UPDATE credentials SET access_token = (SELECT access_token FROM credentials WHERE server = 'a') WHERE server = 'b'`,
			func() error { _, err := s.GetCredential(ctx, "", "b"); return err }},
		{"refresh token", `UPDATE credentials SET refresh_token = (SELECT refresh_token FROM credentials WHERE server = 'b') WHERE server = 'a'`,
			func() error { _, err := s.GetCredential(ctx, "", "a"); return err }},
		{"rebound credential", `UPDATE credentials SET resource = 'https://evil.example/mcp' WHERE server = 'b'`,
			func() error { _, err := s.GetCredential(ctx, "", "b"); return err }},
		{"client secret", `UPDATE registrations SET client_secret = (SELECT client_secret FROM registrations WHERE redirect_uri LIKE '%/a') WHERE redirect_uri LIKE '%/b'`,
			func() error {
				_, err := s.GetRegistration(ctx, "", "https://auth.example", "http://127.0.0.1/b")
				return err
			}},
		{"verifier", `UPDATE flows SET verifier = (SELECT verifier FROM flows WHERE server = 'a') WHERE server = 'b'`,
			func() error { _, err := s.TakeFlow(ctx, "state-b"); return err }},
		{"blanked token", `UPDATE credentials SET access_token = '' WHERE server = 'a'`,
			func() error { _, err := s.GetCredential(ctx, "", "a"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.ExecContext(ctx, tt.tamper); err != nil {
				t.Fatal(err)
			}
			err := tt.read()
			if !errors.Is(err, store.ErrSealed) {
				t.Fatalf("reading a tampered record = %v, want ErrSealed", err)
			}
			if strings.Contains(err.Error(), "PLAINTEXT") {
				t.Errorf("error %q reveals a secret", err)
			}
		})
	}

	// A flow that does not open is used up all the same.
	if _, err := s.TakeFlow(ctx, "state-b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TakeFlow after a failed take = %v, want ErrNotFound", err)
	}
}

func TestOtherKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	s := open(t, path, sealer(t, 1))
	secrets(t, s)
	s.Close()

	ctx := t.Context()
	other := open(t, path, sealer(t, 2))
	if _, err := other.GetCredential(ctx, "", "a"); !errors.Is(err, store.ErrSealed) {
		t.Errorf("GetCredential with another key = %v, want ErrSealed", err)
	}
	if _, err := other.GetRegistration(ctx, "", "https://auth.example", "http://127.0.0.1/a"); !errors.Is(err, store.ErrSealed) {
		t.Errorf("GetRegistration with another key = %v, want ErrSealed", err)
	}
	if _, err := other.TakeFlow(ctx, "state-a"); !errors.Is(err, store.ErrSealed) {
		t.Errorf("TakeFlow with another key = %v, want ErrSealed", err)
	}
	_, err := other.UpdateCredential(ctx, "", "a", func(context.Context, *store.Credential) (*store.Credential, error) {
		t.Error("fn ran on a credential that does not open")
		return nil, nil
	})
	if !errors.Is(err, store.ErrSealed) {
		t.Errorf("UpdateCredential with another key = %v, want ErrSealed", err)
	}
	// What does not open can still be deleted.
	if err := other.DeleteCredential(ctx, "", "a"); err != nil {
		t.Errorf("DeleteCredential with another key: %v", err)
	}
	other.Close()

	// After rotating, the old key still opens what it sealed.
	rotated, err := seal.New(bytes.Repeat([]byte{3}, seal.KeySize), bytes.Repeat([]byte{1}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	r := open(t, path, rotated)
	c, err := r.GetCredential(ctx, "", "b")
	if err != nil || c.RefreshToken != "PLAINTEXT-REFRESH-b" {
		t.Errorf("GetCredential after rotating = %+v, %v", c, err)
	}
}

func TestWriteInsideUpdateFailsFast(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "mcpgate.db"), sealer(t, 1))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := s.UpdateCredential(ctx, "", "files", func(ctx context.Context, cur *store.Credential) (*store.Credential, error) {
		if _, err := s.GetCredential(ctx, "", "other"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a read inside fn = %v, want ErrNotFound", err)
		}
		return cur, s.PutInteraction(ctx, &store.Interaction{ID: "x", Expiry: time.Now().Add(time.Hour)})
	})
	if err == nil || !strings.Contains(err.Error(), "deadlock") {
		t.Errorf("a write inside fn = %v, want an error saying it would deadlock", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the write inside fn took %v to fail", d)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	open(t, path, sealer(t, 1)).Close()
	if _, err := raw(t, path).Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.Open(path, sealer(t, 1)); err == nil {
		s.Close()
		t.Fatal("Open of a database from a newer mcpgate succeeded")
	} else if !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("Open error %q does not say to upgrade", err)
	}
}

// TestOpenDoesNotWaitForAWriter: opening a store whose schema is current
// only reads, so a command starts while another process holds the write
// lock (deciding inside UpdateCredential, say), and commits nothing of
// its own.
func TestOpenDoesNotWaitForAWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	open(t, path, sealer(t, 1)).Close()
	conn, err := raw(t, path).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		s, err := sqlite.Open(path, sealer(t, 1))
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		// Before: Open waited for the lock (up to 30 s) to rewrite the
		// schema version it had just read.
		_, _ = conn.ExecContext(t.Context(), "ROLLBACK")
		<-opened
		t.Fatal("Open of a current store waited for another writer")
	}
	_, _ = conn.ExecContext(t.Context(), "ROLLBACK")
}

// TestCredentialsFromOlderSchemas: a database whose credentials were
// written before the later credential columns existed (the DPoP key, then
// the time of the last step-up) opens, migrated, with those credentials
// readable, keyless and without a step-up time.
func TestCredentialsFromOlderSchemas(t *testing.T) {
	// What each schema version added, newest first, and how to take it
	// away again.
	added := []string{"catalogs_about", "catalogs_sum", "catalogs_summary", "catalogs", "step_up_at", "dpop_key"}
	undo := map[string]string{
		"catalogs_about": undoCatalogsAbout,
		"catalogs_sum": "DROP INDEX catalogs_summary; CREATE INDEX catalogs_summary ON catalogs (tenant, server, url, protocol, counts, fetched_at, ttl, generation); " +
			"ALTER TABLE catalogs DROP COLUMN sum",
		"catalogs_summary": "DROP INDEX catalogs_summary", "catalogs": "DROP TABLE catalogs"}
	for back := 4; back <= len(added); back++ {
		t.Run(strings.Join(added[:back], "+"), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcpgate.db")
			s := open(t, path, sealer(t, 1))
			cred := &store.Credential{Binding: store.Binding{Server: "a", Resource: "https://a.example/mcp"}, Kind: store.KindOAuth, AccessToken: "at"}
			if err := s.PutCredential(t.Context(), cred); err != nil {
				t.Fatal(err)
			}
			s.Close()
			// What the schema back versions ago had.
			var qs []string
			for _, what := range added[:back] {
				q, ok := undo[what]
				if !ok {
					q = "ALTER TABLE credentials DROP COLUMN " + what
				}
				qs = append(qs, q)
			}
			rollBack(t, path, back, qs...)
			got, err := open(t, path, sealer(t, 1)).GetCredential(t.Context(), "", "a")
			if err != nil {
				t.Fatal(err)
			}
			if got.AccessToken != "at" || got.DPoPKey != "" || !got.StepUpAt.IsZero() {
				t.Errorf("credential from before the migration: DPoP key %q, step-up at %v", got.DPoPKey, got.StepUpAt)
			}
		})
	}
}

// rollBack makes the closed database at path as it was back schema
// versions ago: it runs undo, then sets the version.
func rollBack(t *testing.T, path string, back int, undo ...string) {
	t.Helper()
	db := raw(t, path)
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	for _, q := range append(undo, fmt.Sprintf("PRAGMA user_version = %d", v-back)) {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// undoCatalogsAbout takes the catalogs' title and instructions away, as
// the schema was before them.
const undoCatalogsAbout = "DROP INDEX catalogs_summary; " +
	"CREATE INDEX catalogs_summary ON catalogs (tenant, server, url, protocol, counts, fetched_at, ttl, generation, sum); " +
	"ALTER TABLE catalogs DROP COLUMN title; ALTER TABLE catalogs DROP COLUMN instructions"

// TestCatalogFromBeforeTitles: a catalog stored before catalogs kept the
// server's title and instructions opens, migrated, with both empty and
// the rest as stored, and is listed so too.
func TestCatalogFromBeforeTitles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	s := open(t, path, sealer(t, 1))
	c := &store.Catalog{Server: "a", URL: "https://a.example/mcp", Protocol: "2025-11-25", Title: "A", Instructions: "About a.",
		Tools: json.RawMessage(`[{"name":"t","inputSchema":{"type":"object"}}]`), Counts: [4]int{1, 0, 0, 0}}
	if err := s.PutCatalog(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rollBack(t, path, 1, undoCatalogsAbout)
	s = open(t, path, sealer(t, 1))
	got, err := s.GetCatalog(t.Context(), "", "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "" || got.Instructions != "" || string(got.Tools) != string(c.Tools) || got.URL != c.URL {
		t.Errorf("catalog from before: title %q, instructions %q, tools %s, URL %s", got.Title, got.Instructions, got.Tools, got.URL)
	}
	list, err := s.Catalogs(t.Context(), "")
	if err != nil || len(list) != 1 || list[0].Title != "" {
		t.Errorf("listed: %v, %v", list, err)
	}
}

func TestExpiredRowsPurged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	s := open(t, path, sealer(t, 1))
	ctx := t.Context()
	past, future := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	for _, err := range []error{
		s.PutFlow(ctx, &store.Flow{State: "old", Expiry: past}),
		s.PutInteraction(ctx, &store.Interaction{ID: "old", Expiry: past}),
		s.PutFlow(ctx, &store.Flow{State: "new", Expiry: future}),
		s.PutInteraction(ctx, &store.Interaction{ID: "new", Expiry: future}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	db := raw(t, path)
	for _, table := range []string{"flows", "interactions"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s holds %d rows, want only the unexpired one", table, n)
		}
	}
}

// The cross-process test runs this test binary twice more as children.
const (
	childEnv    = "MCPGATE_SQLITE_TEST_CHILD_DB"
	childRounds = 20
)

func TestCrossProcessUpdate(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		child(t, path)
		return
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	s := open(t, path, sealer(t, 1))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	type proc struct {
		cmd    *exec.Cmd
		stdin  io.Closer
		stdout *bufio.Reader
		stderr bytes.Buffer // written by exec's goroutine until Wait
	}
	procs := make([]*proc, 2)
	for i := range procs {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrossProcessUpdate$", "-test.count=1", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), childEnv+"="+path)
		p := &proc{cmd: cmd}
		cmd.Stderr = &p.stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p.stdin, p.stdout = stdin, bufio.NewReader(stdout)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
	}
	// Both children have opened the database before either starts, so
	// that their updates overlap.
	for _, p := range procs {
		for {
			line, err := p.stdout.ReadString('\n')
			if err != nil || line == "ready\n" {
				break // a child that ended early is reported below
			}
		}
	}
	for _, p := range procs {
		p.stdin.Close()
	}
	for i, p := range procs {
		out, _ := io.ReadAll(p.stdout)
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s%s", i, err, out, p.stderr.Bytes())
		}
	}

	c, err := s.GetCredential(t.Context(), "", "counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(len(procs) * childRounds); c.AccessToken != want {
		t.Errorf("counter = %s after %s increments by two processes: updates were lost", c.AccessToken, want)
	}
}

// child increments the counter childRounds times, once its parent says go
// by closing stdin.
func child(t *testing.T, path string) {
	s := open(t, path, sealer(t, 1))
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for range childRounds {
		_, err := s.UpdateCredential(ctx, "", "counter", func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
			n := 0
			if cur != nil {
				n, _ = strconv.Atoi(cur.AccessToken)
			}
			time.Sleep(time.Millisecond) // widen the window a lost update needs
			return &store.Credential{Binding: store.Binding{Server: "counter"}, AccessToken: strconv.Itoa(n + 1)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenKeepsWAL: an open switches a database to WAL unless its header
// says it is in WAL already; one switched back to a rollback journal by
// someone else is switched to WAL again.
func TestOpenKeepsWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgate.db")
	versions := func() string {
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 20 {
			t.Fatalf("reading the header: %v (%d bytes)", err, len(b))
		}
		return fmt.Sprint(b[18], b[19])
	}
	open(t, path, sealer(t, 1)).Close()
	if v := versions(); v != "2 2" {
		t.Fatalf("a new store's header versions %s, want 2 2 (WAL)", v)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA journal_mode = DELETE"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if v := versions(); v != "1 1" {
		t.Fatalf("after journal_mode = DELETE the header versions %s, want 1 1", v)
	}
	s := open(t, path, sealer(t, 1))
	if err := s.PutCredential(t.Context(), &store.Credential{Binding: store.Binding{Server: "wal"}, Kind: store.KindBearer, AccessToken: "at"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if v := versions(); v != "2 2" {
		t.Errorf("reopened, the header versions %s, want 2 2 (WAL again)", v)
	}
}
