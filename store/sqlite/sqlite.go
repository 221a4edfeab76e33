// Package sqlite is the embedded [store.Store]: one SQLite database file in
// the data directory (pure Go, no cgo), shared safely by every mcpgate
// process that opens it.
//
// # Locking
//
// Every write runs in a BEGIN IMMEDIATE transaction, which takes SQLite's
// write lock: one writer at a time across all processes, while readers go
// on in WAL mode. [Store.UpdateCredential] holds that lock while its
// function decides. The lock covers the whole database: other writes, of
// any record, and a process opening the store wait for it, so nothing
// slow may run under it. A token refresh waits on the network under
// [Store.Lock] instead (a file lock per name, which blocks nothing else)
// and commits its outcome with UpdateCredential. Waiting honours the
// caller's context: the lock is tried with a short busy timeout, again
// and again, until the context is done.
//
// Because of that, the function given to UpdateCredential must not write
// to the same Store; it would wait for itself. Such a write fails at once.
//
// # Secrets
//
// Tokens, client secrets and PKCE verifiers are sealed with the
// [seal.Sealer] given to [Open], with the record's AAD as additional data.
// A value that does not open (another key, or copied from another record)
// is reported as an error wrapping [store.ErrSealed].
//
// # Files
//
// The database is created with mode 0600 (its -wal and -shm files inherit
// it) in a directory created with mode 0700. Times are kept as UTC unix
// microseconds, as PostgreSQL keeps them; lists as JSON.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
)

var (
	_ store.Store        = (*Store)(nil)
	_ store.CatalogStore = (*Store)(nil)
)

const (
	// busyTimeout is how long one attempt waits for a lock inside SQLite.
	// It is short so that a waiter notices its context is done; retry
	// makes as many attempts as the context allows.
	busyTimeout = 100 * time.Millisecond
	// retryPause keeps retry from spinning when SQLite reports busy
	// without waiting.
	retryPause = 5 * time.Millisecond
	// openTimeout bounds how long Open waits for other processes to let
	// it migrate the schema.
	openTimeout = 30 * time.Second
	// walSizeLimit is the size the WAL file is truncated to after a
	// checkpoint resets it.
	walSizeLimit = 1 << 20
)

// Store is a [store.Store] in one SQLite file. It is safe for concurrent
// use by many goroutines and many processes.
type Store struct {
	db     *sql.DB
	sealer *seal.Sealer
	// writer admits one writer of this handle at a time, so that writers
	// in this process queue here, honouring their contexts, instead of
	// polling SQLite's lock. Writers in other processes (or other handles)
	// still meet at the SQLite lock.
	writer chan struct{}
	// lockDir holds one file per named lock (see Lock).
	lockDir string
}

// Open opens (creating it if needed) the database at path and brings its
// schema up to date. The Sealer seals and opens the secret fields.
func Open(path string, sealer *seal.Sealer) (*Store, error) {
	if sealer == nil {
		return nil, errors.New("opening store: no sealer")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	placeEmpty(abs)
	return open(abs, sealer)
}

// open opens the database at abs, whose directory exists, creating it
// with the schema if it is not there.
func open(abs string, sealer *seal.Sealer) (*Store, error) {
	wal, err := createFile(abs)
	if err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	db := sql.OpenDB(persistentWAL{dsn: dsn(abs)})
	// database/sql opens a connection for each query running at once and
	// keeps two when they end: a command that reads twenty servers'
	// catalogs side by side opened fourteen SQLite connections (a file
	// open, its WAL, the pragmas and a statement's parse each). Reads
	// here are CPU, so more of them at once than cores gains nothing; the
	// ones beyond wait for a connection, honouring their contexts. One
	// write transaction holds a connection at a time and nothing holds
	// two, so the cap cannot wait on itself. Idle ones close after a
	// while in long-running processes.
	conns := max(4, runtime.GOMAXPROCS(0)+2)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(time.Minute)
	s := &Store{db: db, sealer: sealer, writer: make(chan struct{}, 1), lockDir: abs + ".locks"}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	if err := s.migrate(ctx, wal); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %s: %w", abs, err)
	}
	return s, nil
}

// createFile creates the database file and its directory with owner-only
// modes before SQLite does, since SQLite would create the file with the
// umask's mode (often 0644), and its -wal and -shm files copy the mode of
// the database file. It reports whether the file is a database in WAL
// mode already (its header's read and write versions are 2), which
// every command's open would otherwise set again.
func createFile(path string) (wal bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	var header [20]byte
	_, rerr := io.ReadFull(f, header[:])
	wal = rerr == nil && string(header[:16]) == "SQLite format 3\x00" && header[18] == 2 && header[19] == 2
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return false, err
	}
	// An existing file that others may read is ours to tighten. Windows
	// has no such mode bits.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return wal, os.Chmod(path, 0o600)
	}
	return wal, nil
}

// persistentWAL opens connections that leave the -wal and -shm files in
// place when the last connection closes. SQLite otherwise deletes them
// then, and the next process, a command run a moment later, creates them
// again: a tenth of a warm search's time, allocating inodes. The WAL is
// still checkpointed on close, and journal_size_limit keeps what is left
// of it small.
type persistentWAL struct{ dsn string }

func (c persistentWAL) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.Driver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	if fc, ok := conn.(sqlitedrv.FileControl); ok {
		if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (persistentWAL) Driver() driver.Driver { return &sqlitedrv.Driver{} }

// dsn is a file: URI, so that a path holding '?', '#' or '%' names the
// file it says.
func dsn(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	q := url.Values{"_pragma": {
		fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"foreign_keys(1)",
		fmt.Sprintf("journal_size_limit(%d)", walSizeLimit),
	}}
	return (&url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}).String()
}

// migrations[i] brings the schema from user_version i to i+1. Append only,
// and change schema to match: TestSchemaIsTheMigrations holds the two
// equal.
var migrations = []string{
	`
CREATE TABLE credentials (
	tenant         TEXT NOT NULL,
	server         TEXT NOT NULL,
	resource       TEXT NOT NULL,
	issuer         TEXT NOT NULL,
	client_id      TEXT NOT NULL,
	redirect_uri   TEXT NOT NULL,
	kind           TEXT NOT NULL,
	access_token   TEXT NOT NULL, -- sealed
	token_type     TEXT NOT NULL,
	refresh_token  TEXT NOT NULL, -- sealed
	expiry         INTEGER,       -- unix microseconds; NULL for none
	scopes         TEXT NOT NULL, -- JSON
	step_up_scopes TEXT NOT NULL, -- JSON
	step_up_count  INTEGER NOT NULL,
	updated_at     INTEGER,
	PRIMARY KEY (tenant, server)
) STRICT;

CREATE TABLE registrations (
	tenant                     TEXT NOT NULL,
	issuer                     TEXT NOT NULL,
	redirect_uri               TEXT NOT NULL,
	client_id                  TEXT NOT NULL,
	client_secret              TEXT NOT NULL, -- sealed
	client_secret_expires_at   INTEGER,
	token_endpoint_auth_method TEXT NOT NULL,
	created_at                 INTEGER,
	PRIMARY KEY (tenant, issuer, redirect_uri)
) STRICT;

CREATE TABLE flows (
	state        TEXT NOT NULL PRIMARY KEY,
	tenant       TEXT NOT NULL,
	server       TEXT NOT NULL,
	verifier     TEXT NOT NULL, -- sealed
	issuer       TEXT NOT NULL,
	client_id    TEXT NOT NULL,
	redirect_uri TEXT NOT NULL,
	resource     TEXT NOT NULL,
	scopes       TEXT NOT NULL, -- JSON
	expiry       INTEGER NOT NULL
) STRICT;
CREATE INDEX flows_expiry ON flows (expiry);

CREATE TABLE interactions (
	tenant     TEXT NOT NULL,
	id         TEXT NOT NULL,
	server     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	message    TEXT NOT NULL,
	payload    BLOB,
	created_at INTEGER,
	expiry     INTEGER NOT NULL,
	PRIMARY KEY (tenant, id)
) STRICT;
CREATE INDEX interactions_expiry ON interactions (expiry);
`,
	`
CREATE TABLE request_log (
	id          INTEGER PRIMARY KEY, -- grows with each append; orders entries
	tenant      TEXT NOT NULL,
	time        INTEGER NOT NULL,    -- unix microseconds
	server      TEXT NOT NULL,
	method      TEXT NOT NULL,
	tool        TEXT NOT NULL,
	duration    INTEGER NOT NULL,    -- nanoseconds
	outcome     TEXT NOT NULL,
	http_status INTEGER NOT NULL,
	bytes_in    INTEGER NOT NULL,
	bytes_out   INTEGER NOT NULL
) STRICT;
CREATE INDEX request_log_tenant ON request_log (tenant, id);
`,
	// The DPoP key of a sender-constrained credential (RFC 9449), sealed;
	// '' in rows written before it existed, which have none.
	`
ALTER TABLE credentials ADD COLUMN dpop_key TEXT NOT NULL DEFAULT '';
`,
	// When the last sign-in for a step-up was made (unix microseconds);
	// NULL for none.
	`
ALTER TABLE credentials ADD COLUMN step_up_at INTEGER;
`,
	// Each server's last valid catalog (store.CatalogStore): remote
	// content, never secret, so unsealed; each list JSON, NULL for a kind
	// never loaded. The lists come last: SQLite reads a row's columns in
	// order, so listing catalogs without them then reads no overflow page.
	`
CREATE TABLE catalogs (
	tenant     TEXT NOT NULL,
	server     TEXT NOT NULL,
	url        TEXT NOT NULL,
	protocol   TEXT NOT NULL,
	counts     TEXT NOT NULL,    -- JSON [tools, prompts, resources, templates]
	fetched_at INTEGER,          -- unix microseconds
	ttl        INTEGER NOT NULL, -- nanoseconds
	generation INTEGER NOT NULL,
	tools      BLOB,
	prompts    BLOB,
	resources  BLOB,
	templates  BLOB,
	PRIMARY KEY (tenant, server)
) STRICT;
`,
	// Listing catalogs (every start of serve, search, list) reads only
	// this index: a row of the table holds its lists too, so a scan of
	// 1,000 rows read some 1,000 pages where the index needs a few dozen.
	`
CREATE INDEX catalogs_summary ON catalogs (tenant, server, url, protocol, counts, fetched_at, ttl, generation);
`,
	// The content sum of each catalog (store.Catalog.Sum), NULL in rows
	// written before it; listed with the rest, so the summary index
	// holds it too.
	`
ALTER TABLE catalogs ADD COLUMN sum BLOB;
DROP INDEX catalogs_summary;
CREATE INDEX catalogs_summary ON catalogs (tenant, server, url, protocol, counts, fetched_at, ttl, generation, sum);
`,
	// What the server said of itself to the listing session
	// (store.Catalog.Title and Instructions), '' in rows written before;
	// listed with the rest, so the summary index holds them too.
	`
ALTER TABLE catalogs ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE catalogs ADD COLUMN instructions TEXT NOT NULL DEFAULT '';
DROP INDEX catalogs_summary;
CREATE INDEX catalogs_summary ON catalogs (tenant, server, url, protocol, counts, fetched_at, ttl, generation, sum, title, instructions);
`,
}

// schema is what migrations build, written as it stands, for a new
// database: its columns in place rather than added by ALTER TABLE, each of
// which has SQLite parse the whole schema again. A new store is created
// in half the time the migrations took: under the race detector, where
// the test suite creates some 400 stores, 37 ms instead of 72. A process's
// second and later new stores are copies of an empty store it makes
// once (empty.go).
const schema = `
CREATE TABLE credentials (
	tenant         TEXT NOT NULL,
	server         TEXT NOT NULL,
	resource       TEXT NOT NULL,
	issuer         TEXT NOT NULL,
	client_id      TEXT NOT NULL,
	redirect_uri   TEXT NOT NULL,
	kind           TEXT NOT NULL,
	access_token   TEXT NOT NULL, -- sealed
	token_type     TEXT NOT NULL,
	refresh_token  TEXT NOT NULL, -- sealed
	expiry         INTEGER,       -- unix microseconds; NULL for none
	scopes         TEXT NOT NULL, -- JSON
	step_up_scopes TEXT NOT NULL, -- JSON
	step_up_count  INTEGER NOT NULL,
	updated_at     INTEGER,
	dpop_key       TEXT NOT NULL DEFAULT '', -- sealed; '' for none
	step_up_at     INTEGER,       -- unix microseconds; NULL for none
	PRIMARY KEY (tenant, server)
) STRICT;

CREATE TABLE registrations (
	tenant                     TEXT NOT NULL,
	issuer                     TEXT NOT NULL,
	redirect_uri               TEXT NOT NULL,
	client_id                  TEXT NOT NULL,
	client_secret              TEXT NOT NULL, -- sealed
	client_secret_expires_at   INTEGER,
	token_endpoint_auth_method TEXT NOT NULL,
	created_at                 INTEGER,
	PRIMARY KEY (tenant, issuer, redirect_uri)
) STRICT;

CREATE TABLE flows (
	state        TEXT NOT NULL PRIMARY KEY,
	tenant       TEXT NOT NULL,
	server       TEXT NOT NULL,
	verifier     TEXT NOT NULL, -- sealed
	issuer       TEXT NOT NULL,
	client_id    TEXT NOT NULL,
	redirect_uri TEXT NOT NULL,
	resource     TEXT NOT NULL,
	scopes       TEXT NOT NULL, -- JSON
	expiry       INTEGER NOT NULL
) STRICT;
CREATE INDEX flows_expiry ON flows (expiry);

CREATE TABLE interactions (
	tenant     TEXT NOT NULL,
	id         TEXT NOT NULL,
	server     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	message    TEXT NOT NULL,
	payload    BLOB,
	created_at INTEGER,
	expiry     INTEGER NOT NULL,
	PRIMARY KEY (tenant, id)
) STRICT;
CREATE INDEX interactions_expiry ON interactions (expiry);

CREATE TABLE request_log (
	id          INTEGER PRIMARY KEY, -- grows with each append; orders entries
	tenant      TEXT NOT NULL,
	time        INTEGER NOT NULL,    -- unix microseconds
	server      TEXT NOT NULL,
	method      TEXT NOT NULL,
	tool        TEXT NOT NULL,
	duration    INTEGER NOT NULL,    -- nanoseconds
	outcome     TEXT NOT NULL,
	http_status INTEGER NOT NULL,
	bytes_in    INTEGER NOT NULL,
	bytes_out   INTEGER NOT NULL
) STRICT;
CREATE INDEX request_log_tenant ON request_log (tenant, id);

CREATE TABLE catalogs (
	tenant     TEXT NOT NULL,
	server     TEXT NOT NULL,
	url        TEXT NOT NULL,
	protocol   TEXT NOT NULL,
	counts     TEXT NOT NULL,    -- JSON [tools, prompts, resources, templates]
	fetched_at INTEGER,          -- unix microseconds
	ttl        INTEGER NOT NULL, -- nanoseconds
	generation INTEGER NOT NULL,
	tools      BLOB,
	prompts    BLOB,
	resources  BLOB,
	templates  BLOB,
	sum        BLOB,             -- store.Catalog.Sum
	title        TEXT NOT NULL DEFAULT '',
	instructions TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (tenant, server)
) STRICT;
CREATE INDEX catalogs_summary ON catalogs (tenant, server, url, protocol, counts, fetched_at, ttl, generation, sum, title, instructions);
`

// migrate switches the database to WAL and applies the migrations it has
// not seen, under the write lock, so that processes opening a new database
// at once migrate it once.
func (s *Store) migrate(ctx context.Context, wal bool) error {
	// WAL is a property of the file, set once for every connection, and
	// not again when the file's header says it is set (the pragma was
	// half of an open's work). On a file system without shared memory
	// SQLite keeps its rollback journal; locking works the same, readers
	// just wait for commits.
	if !wal {
		err := retry(ctx, func() error {
			_, err := s.db.ExecContext(ctx, "PRAGMA journal_mode = WAL")
			return err
		})
		if err != nil {
			return fmt.Errorf("enabling WAL: %w", err)
		}
	}
	// A schema already current is the common case: every command opens
	// the store. Seeing so is a read, which neither waits for a writer nor
	// commits (and syncs) a write of its own; only a schema behind takes
	// the write lock, and looks again under it.
	var v int
	err := retry(ctx, func() error { return s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v) })
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if err := knownVersion(v); err != nil || v == len(migrations) {
		return err
	}
	return s.write(ctx, func(t *tx) error {
		var v int
		if err := t.conn.QueryRowContext(t.ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		if err := knownVersion(v); err != nil {
			return err
		}
		if v == 0 {
			if _, err := t.conn.ExecContext(t.ctx, schema); err != nil {
				return fmt.Errorf("creating the schema: %w", err)
			}
		} else {
			for i := v; i < len(migrations); i++ {
				if _, err := t.conn.ExecContext(t.ctx, migrations[i]); err != nil {
					return fmt.Errorf("migrating schema to version %d: %w", i+1, err)
				}
			}
		}
		// A PRAGMA cannot take a bound parameter.
		_, err := t.conn.ExecContext(t.ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations)))
		return err
	})
}

// knownVersion refuses a schema that a newer mcpgate migrated.
func knownVersion(v int) error {
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this mcpgate knows (%d): upgrade mcpgate", v, len(migrations))
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// inUpdateKey marks the context UpdateCredential gives its function, with
// the Store whose lock is held.
type inUpdateKey struct{}

// errWriteInUpdate is returned by a write made from inside
// UpdateCredential's function, which would otherwise wait for the lock its
// own caller holds.
var errWriteInUpdate = errors.New("writing to the store from inside UpdateCredential would deadlock: return the decision instead")

// tx is a write transaction on a connection of its own.
type tx struct {
	s    *Store
	conn *sql.Conn
	// ctx is never cancelled: once the lock is held, the decision is
	// written whatever the caller's context does meanwhile, so that a
	// refreshed token is not lost to a cancellation.
	ctx context.Context
}

// begin takes this handle's writer slot, then SQLite's write lock,
// honouring ctx while it waits for either.
func (s *Store) begin(ctx context.Context) (*tx, error) {
	if ctx.Value(inUpdateKey{}) == s {
		return nil, errWriteInUpdate
	}
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the store's write lock: %w", ctx.Err())
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		<-s.writer
		return nil, err
	}
	err = retry(ctx, func() error {
		_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		return err
	})
	if err != nil {
		discard(conn)
		<-s.writer
		return nil, fmt.Errorf("taking the store's write lock: %w", err)
	}
	return &tx{s: s, conn: conn, ctx: context.WithoutCancel(ctx)}, nil
}

// end commits or rolls back, and releases the connection and the lock.
func (t *tx) end(commit bool) error {
	defer func() { <-t.s.writer }()
	stmt := "ROLLBACK"
	if commit {
		stmt = "COMMIT"
	}
	if _, err := t.conn.ExecContext(t.ctx, stmt); err != nil {
		// Closing the connection rolls back whatever is left.
		discard(t.conn)
		return fmt.Errorf("%s: %w", strings.ToLower(stmt), err)
	}
	return t.conn.Close()
}

// discard closes a connection whose transaction state is unknown instead
// of returning it to the pool.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// write runs fn in a write transaction and commits if fn succeeds. A
// panic in fn rolls back and goes on.
func (s *Store) write(ctx context.Context, fn func(t *tx) error) error {
	t, err := s.begin(ctx)
	if err != nil {
		return err
	}
	ended := false
	defer func() {
		if !ended {
			t.end(false)
		}
	}()
	err = fn(t)
	ended = true
	if err != nil {
		t.end(false)
		return err
	}
	return t.end(true)
}

// retry calls f again while SQLite reports a lock held elsewhere, until
// ctx is done. Each attempt waits up to busyTimeout inside SQLite.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !isBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryPause):
		}
	}
}

func isBusy(err error) bool {
	var e *sqlitedrv.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

// querier is the pool, or a transaction's connection.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// seal and open convert secret fields. Empty values are sealed too, so
// that a blanked column is noticed rather than read as "no token".
func (s *Store) seal(v string, aad []byte) (string, error) {
	return s.sealer.Seal([]byte(v), aad)
}

func (s *Store) open(what, sealed string, aad []byte) (string, error) {
	b, err := s.sealer.Open(sealed, aad)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", what, store.ErrSealed, err)
	}
	return string(b), nil
}

// micros stores a time as UTC unix microseconds, the zero time as NULL.
func micros(t time.Time) sql.Null[int64] {
	if t.IsZero() {
		return sql.Null[int64]{}
	}
	return sql.Null[int64]{V: t.UnixMicro(), Valid: true}
}

func fromMicros(n sql.Null[int64]) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.V).UTC()
}

// strs stores a list as JSON; nil and empty stay apart.
func strs(v []string) string {
	b, _ := json.Marshal(v) // cannot fail for []string
	return string(b)
}

func fromStrs(s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("decoding stored list: %w", err)
	}
	return v, nil
}

func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return err
}
