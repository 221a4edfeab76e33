// Package postgres is the [store.Store] for several mcpgate processes on
// several machines: one PostgreSQL database shared by every replica of
// `mcpgate serve --http`.
//
// # Locking
//
// [Store.UpdateCredential] holds a session-level advisory lock named by
// the credential, on a connection of its own, while its function decides,
// and re-reads the credential after taking it. Unlike SQLite's write lock
// it covers that one credential only; everything else goes on.
// [Store.Lock] is the same kind of lock, under another name space: a
// token refresh runs under one (oauth's renewal lock) and commits with
// UpdateCredential, so two replicas needing a refresh at once make one
// refresh, and a rotating refresh token is spent once. PostgreSQL releases a lock
// whose connection is gone, so a replica that dies holding one does not
// block the others. Advisory locks are database-wide; their keys name the
// schema, so stores in two schemas of one database do not contend.
//
// # Changes
//
// Every write of a credential, an interaction or a catalog also sends a
// NOTIFY (in the same transaction, so it is seen only once committed),
// which [Store.Watch] delivers to every replica listening: a sign-out on
// one replica is seen on all of them at once.
//
// # API keys
//
// [Keys] holds the inbound API keys of `mcpgate serve --http` as hashes,
// so it needs no sealing key: `mcpgate keys` opens it alone with
// [OpenKeys], a gateway takes it from its store with [Store.Keys].
//
// # Schema
//
// The schema is created and upgraded by [Open] from migrations embedded in
// the binary, each applied once, in order, under an advisory lock, so
// replicas starting together migrate once. Secrets are sealed as with
// every backend (see package store).
package postgres

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
)

var (
	_ store.Store   = (*Store)(nil)
	_ store.Watcher = (*Store)(nil)
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// changesChannel is the NOTIFY channel of changes in the schema "public".
// A channel belongs to the database, not a schema, so stores in other
// schemas (another deployment, or a test) each have their own,
// changesChannel_ and 16 hex digits of the MD5 of the schema's name: their
// replicas must not follow each other's changes.
const changesChannel = "mcpgate_changes"

// channelOf is the NOTIFY channel of the stores in schema.
func channelOf(schema string) string {
	if schema == "public" {
		return changesChannel
	}
	sum := md5.Sum([]byte(schema))
	return changesChannel + "_" + hex.EncodeToString(sum[:8])
}

// channelSQL is channelOf in SQL, for the transaction that notifies.
const channelSQL = `CASE current_schema() WHEN 'public' THEN '` + changesChannel + `' ELSE '` + changesChannel + `_' || left(md5(current_schema()), 16) END`

// Options configure [Open]. A nil *Options means defaults; the struct is
// copied.
type Options struct {
	// MaxConns bounds the pool; zero means 32. Every UpdateCredential and
	// Lock in progress holds a connection, and so does Watch.
	MaxConns int32
}

// Store is a [store.Store] in a PostgreSQL database. It is safe for
// concurrent use by many goroutines, processes and machines.
type Store struct {
	pool   *pgxpool.Pool
	sealer *seal.Sealer
	schema string // the schema the tables are in, for lock keys
}

// Open connects to the database named by dsn (a PostgreSQL URL or
// key=value string; search_path chooses the schema), brings the schema up
// to date, and returns the store. The Sealer seals and opens the secret
// fields.
func Open(ctx context.Context, dsn string, sealer *seal.Sealer, opts *Options) (*Store, error) {
	if sealer == nil {
		return nil, errors.New("opening store: no sealer")
	}
	s, err := connect(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	s.sealer = sealer
	return s, nil
}

// connect opens the pool and brings the schema up to date: a Store
// without a sealer, for [Open] and [OpenKeys].
func connect(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 32
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The DSN may hold a password: say only that it does not parse.
		return nil, errors.New("opening store: the PostgreSQL connection string does not parse")
	}
	cfg.MaxConns = o.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening store: %w", err)
	}
	s := &Store{pool: pool}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&s.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening store: connecting to PostgreSQL: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening store: %w", err)
	}
	return s, nil
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping checks that the database answers (for readiness checks).
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s is not named NNN_what.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: versions must run 1, 2, 3… without gaps", m.name)
		}
	}
	return out, nil
}

// migrate applies the migrations this database has not seen, in one
// transaction under an advisory lock.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.key("migrate", "")); err != nil {
			return fmt.Errorf("waiting for another replica's migration: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS mcpgate_schema (version integer NOT NULL)`); err != nil {
			return fmt.Errorf("creating the schema table: %w", err)
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM mcpgate_schema`).Scan(&v); err != nil {
			return err
		}
		if v > len(ms) {
			return fmt.Errorf("schema version %d is newer than this mcpgate knows (%d): upgrade mcpgate", v, len(ms))
		}
		for _, m := range ms[v:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migrating schema to version %d (%s): %w", m.version, m.name, err)
			}
		}
		if v < len(ms) {
			if _, err := tx.Exec(ctx, `DELETE FROM mcpgate_schema`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO mcpgate_schema (version) VALUES ($1)`, len(ms)); err != nil {
				return err
			}
		}
		return nil
	})
}

// key is the advisory lock key of a name in a name space, in this schema.
func (s *Store) key(space, name string) int64 {
	sum := sha256.Sum256([]byte("mcpgate\x00" + s.schema + "\x00" + space + "\x00" + name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// unlockTimeout bounds the release of a lock; a connection that cannot
// release it in time is closed, which releases it too.
const unlockTimeout = 10 * time.Second

// lock takes an advisory lock on a connection of its own, waiting until it
// is free or ctx is done.
func (s *Store) lock(ctx context.Context, key int64) (release func(), err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, waitError(ctx, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		// A wait cut short by ctx leaves the connection in an unknown state.
		conn.Hijack().Close(context.Background())
		return nil, waitError(ctx, err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			conn.Hijack().Close(context.Background())
			return
		}
		conn.Release()
	}, nil
}

// waitError says a wait ended because ctx did, when it did.
func waitError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("waiting for the lock: %w", ctx.Err())
	}
	return err
}

// Lock implements [store.Store].
func (s *Store) Lock(ctx context.Context, name string) (func(), error) {
	release, err := s.lock(ctx, s.key("lock", name))
	if err != nil {
		return nil, fmt.Errorf("taking lock: %w", err)
	}
	return release, nil
}

// Watch implements [store.Watcher]: it listens on a connection of its own
// and reconnects when that connection is lost, reporting the gap as a
// Change with an empty Kind.
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) error {
	lost := false
	for {
		err := s.listen(ctx, fn, lost)
		if ctx.Err() != nil {
			return nil
		}
		lost = true
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		_ = err // the connection went away; listen again
	}
}

func (s *Store) listen(ctx context.Context, fn func(store.Change), after bool) error {
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A listening connection is never given back to the pool.
	conn := pooled.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+channelOf(s.schema)); err != nil {
		return err
	}
	if after {
		fn(store.Change{})
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var c store.Change
		if json.Unmarshal([]byte(n.Payload), &c) == nil {
			fn(c)
		}
	}
}

// notify sends a change within tx.
func notify(ctx context.Context, tx pgx.Tx, c store.Change) error {
	b, _ := json.Marshal(c) // a struct of strings always marshals
	_, err := tx.Exec(ctx, `SELECT pg_notify(`+channelSQL+`, $1)`, string(b))
	return err
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

// ts stores a time; the zero time is NULL.
func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func fromTS(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return err
}
