package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpgate/mcpgate/store"
)

var _ store.APIKeyStore = (*Keys)(nil)

// Keys is the inbound API keys in the database: a [store.APIKeyStore].
// Every read goes to the database, so a key revoked through one replica
// is refused by the next request on any other.
//
// Keys are stored as hashes, not sealed, so they need no sealing key:
// `mcpgate keys` opens them with [OpenKeys] on a machine that has the
// database's address and nothing else. A gateway takes them from its
// store with [Store.Keys].
type Keys struct {
	pool *pgxpool.Pool
	own  bool // opened by OpenKeys: Close closes the pool
}

// Keys returns the API keys of the store's database, on its pool.
func (s *Store) Keys() *Keys { return &Keys{pool: s.pool} }

// OpenKeys connects to the database named by dsn, brings the schema up to
// date (as [Open] does) and returns its API keys alone.
func OpenKeys(ctx context.Context, dsn string, opts *Options) (*Keys, error) {
	s, err := connect(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return &Keys{pool: s.pool, own: true}, nil
}

// Close closes the pool of keys opened by [OpenKeys]; for those of a
// [Store], closing the store does.
func (k *Keys) Close() error {
	if k.own {
		k.pool.Close()
	}
	return nil
}

const apiKeyCols = `id, tenant, subject, name, hash, created_at, last_used_at, revoked_at`

// CreateAPIKey implements [store.APIKeyStore].
func (k *Keys) CreateAPIKey(ctx context.Context, key *store.APIKey) error {
	if key.ID == "" || key.Tenant == "" || len(key.Hash) == 0 {
		return errors.New("creating API key: ID, tenant and hash are required")
	}
	created := key.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	_, err := k.pool.Exec(ctx, `INSERT INTO api_keys (`+apiKeyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		key.ID, key.Tenant, key.User, key.Name, key.Hash, created.UTC(), ts(key.LastUsedAt), ts(key.RevokedAt))
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "23505" { // unique_violation
		return fmt.Errorf("creating API key %s: %w", key.ID, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("creating API key: %w", err)
	}
	return nil
}

func scanAPIKey(row pgx.Row) (*store.APIKey, error) {
	var (
		key              store.APIKey
		created          time.Time
		lastUsed, revoke *time.Time
	)
	if err := row.Scan(&key.ID, &key.Tenant, &key.User, &key.Name, &key.Hash, &created, &lastUsed, &revoke); err != nil {
		return nil, err
	}
	key.CreatedAt, key.LastUsedAt, key.RevokedAt = created.UTC(), fromTS(lastUsed), fromTS(revoke)
	return &key, nil
}

// APIKey implements [store.APIKeyStore].
func (k *Keys) APIKey(ctx context.Context, id string) (*store.APIKey, error) {
	key, err := scanAPIKey(k.pool.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE id = $1`, id))
	if err != nil {
		return nil, notFound(err, fmt.Sprintf("API key %s", id))
	}
	return key, nil
}

// APIKeys implements [store.APIKeyStore].
func (k *Keys) APIKeys(ctx context.Context, tenant string) ([]*store.APIKey, error) {
	rows, err := k.pool.Query(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE tenant = $1 ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("listing API keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.APIKey, error) { return scanAPIKey(row) })
	if err != nil {
		return nil, fmt.Errorf("listing API keys: %w", err)
	}
	return keys, nil
}

// RevokeAPIKey implements [store.APIKeyStore].
func (k *Keys) RevokeAPIKey(ctx context.Context, tenant, id string, at time.Time) error {
	tag, err := k.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3) WHERE tenant = $1 AND id = $2`,
		tenant, id, at.UTC())
	if err != nil {
		return fmt.Errorf("revoking API key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("API key %s of tenant %q: %w", id, tenant, store.ErrNotFound)
	}
	return nil
}

// TouchAPIKey implements [store.APIKeyStore].
func (k *Keys) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	_, err := k.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)`,
		id, at.UTC())
	if err != nil {
		return fmt.Errorf("recording the use of API key %s: %w", id, err)
	}
	return nil
}
