package store

import (
	"context"
	"errors"
	"time"
)

// ErrExists is returned when a record that must be new already exists.
var ErrExists = errors.New("already exists")

// APIKey is an inbound API key of a gateway many people share: what a
// caller presents to `mcpgate serve --http` to prove its tenant. Only a
// hash of the key's secret is stored; the key itself is shown once, when
// it is made, and never again.
type APIKey struct {
	// ID is public: it is part of the key, shown in lists and logs, and
	// names the key to revoke.
	ID     string
	Tenant string
	// User is who the key acts for; empty means the key is its own user.
	User string
	// Name is the operator's label ("ci", "alice's laptop").
	Name string
	// Hash is the SHA-256 of the key's secret, bound to the ID (see
	// serve/inbound). Never shown.
	Hash       []byte
	CreatedAt  time.Time
	LastUsedAt time.Time // zero: never used
	RevokedAt  time.Time // zero: not revoked
}

// Revoked reports whether the key was revoked.
func (k *APIKey) Revoked() bool { return !k.RevokedAt.IsZero() }

// APIKeyStore holds inbound API keys. It is implemented by the backends a
// gateway of several replicas shares (store/postgres). All methods are
// safe for concurrent use, and a change made by one replica is seen by
// the next read of every other: a revoked key is refused everywhere at
// once.
type APIKeyStore interface {
	// CreateAPIKey stores a new key; an ID already used, even by a
	// revoked key, is ErrExists.
	CreateAPIKey(ctx context.Context, k *APIKey) error
	// APIKey returns the key id, revoked or not; ErrNotFound when there
	// is none.
	APIKey(ctx context.Context, id string) (*APIKey, error)
	// APIKeys lists a tenant's keys, revoked ones included, oldest first.
	APIKeys(ctx context.Context, tenant string) ([]*APIKey, error)
	// RevokeAPIKey revokes the tenant's key id at the given time. A key
	// of another tenant, or none, is ErrNotFound; revoking a revoked key
	// keeps the first time and succeeds.
	RevokeAPIKey(ctx context.Context, tenant, id string, at time.Time) error
	// TouchAPIKey records that the key was used at the given time; it
	// never moves LastUsedAt back.
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
}
