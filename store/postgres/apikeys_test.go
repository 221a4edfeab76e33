package postgres_test

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/postgres"
	"github.com/mcpgate/mcpgate/store/postgres/pgtest"
)

func openKeys(t *testing.T, dsn string) *postgres.Keys {
	t.Helper()
	k, err := postgres.OpenKeys(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func TestAPIKeys(t *testing.T) {
	dsn := pgtest.DSN(t)
	// The CLI's handle, without a sealing key, and a replica's.
	cli, replica := openKeys(t, dsn), open(t, dsn, sealer(t, 1)).Keys()
	ctx := t.Context()
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	keys := []*store.APIKey{
		{ID: "k1", Tenant: "acme", Name: "ci", Hash: bytes.Repeat([]byte{1}, 32), CreatedAt: created},
		{ID: "k2", Tenant: "acme", User: "alice@acme.example", Name: "alice's laptop", Hash: bytes.Repeat([]byte{2}, 32), CreatedAt: created.Add(time.Minute)},
		{ID: "k3", Tenant: "globex", Name: "ci", Hash: bytes.Repeat([]byte{3}, 32), CreatedAt: created},
	}
	for _, k := range keys {
		if err := cli.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := cli.CreateAPIKey(ctx, &store.APIKey{ID: "k1", Tenant: "globex", Hash: []byte{9}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a second key k1: %v, want ErrExists", err)
	}

	// Another replica sees them at once.
	got, err := replica.APIKey(ctx, "k2")
	if err != nil {
		t.Fatal(err)
	}
	if got.Tenant != "acme" || got.User != "alice@acme.example" || got.Name != "alice's laptop" || !bytes.Equal(got.Hash, keys[1].Hash) ||
		!got.CreatedAt.Equal(keys[1].CreatedAt) || !got.LastUsedAt.IsZero() || got.Revoked() {
		t.Errorf("APIKey(k2) = %+v", got)
	}
	if _, err := replica.APIKey(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("APIKey(nope): %v, want ErrNotFound", err)
	}

	// Each tenant lists its own, oldest first.
	list, err := replica.APIKeys(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "k1" || list[1].ID != "k2" {
		t.Errorf("acme's keys = %+v", list)
	}
	if list, _ := replica.APIKeys(ctx, "initech"); len(list) != 0 {
		t.Errorf("a tenant without keys lists %+v", list)
	}

	// A tenant cannot revoke another's key.
	at := created.Add(time.Hour)
	if err := cli.RevokeAPIKey(ctx, "globex", "k1", at); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("globex revoking acme's key: %v, want ErrNotFound", err)
	}
	if k, _ := replica.APIKey(ctx, "k1"); k.Revoked() {
		t.Fatal("another tenant revoked the key")
	}
	if err := cli.RevokeAPIKey(ctx, "acme", "k1", at); err != nil {
		t.Fatal(err)
	}
	if err := cli.RevokeAPIKey(ctx, "acme", "k1", at.Add(time.Hour)); err != nil {
		t.Fatalf("revoking again: %v", err)
	}
	if k, _ := replica.APIKey(ctx, "k1"); !k.RevokedAt.Equal(at) {
		t.Errorf("revoked at %v, want the first revocation's %v", k.RevokedAt, at)
	}
	if err := cli.RevokeAPIKey(ctx, "acme", "nope", at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking an unknown key: %v", err)
	}

	// Use is recorded, and never moves back.
	used := created.Add(2 * time.Hour)
	if err := replica.TouchAPIKey(ctx, "k2", used); err != nil {
		t.Fatal(err)
	}
	if err := replica.TouchAPIKey(ctx, "k2", used.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if k, _ := cli.APIKey(ctx, "k2"); !k.LastUsedAt.Equal(used) {
		t.Errorf("last used %v, want %v", k.LastUsedAt, used)
	}
}

// A database of the first schema version is upgraded in place, and what
// it held is kept.
func TestAPIKeysMigrateAnExistingDatabase(t *testing.T) {
	dsn := pgtest.DSN(t)
	v1, err := os.ReadFile("migrations/001_schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for _, sql := range []string{string(v1),
		`CREATE TABLE mcpgate_schema (version integer NOT NULL)`, `INSERT INTO mcpgate_schema VALUES (1)`,
		`INSERT INTO registrations VALUES ('acme', 'https://as.example', 'https://gw.example/cb', 'client', '', NULL, 'none', NULL)`,
	} {
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, dsn, sealer(t, 1))
	if err := s.Keys().CreateAPIKey(t.Context(), &store.APIKey{ID: "k1", Tenant: "acme", Hash: []byte{1}}); err != nil {
		t.Fatalf("no api_keys table after the upgrade: %v", err)
	}
	var version, regs int
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT max(version) FROM mcpgate_schema), (SELECT count(*) FROM registrations)`).Scan(&version, &regs); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	if version != len(files) || regs != 1 {
		t.Errorf("version %d, %d registrations; want %d (the latest) and the one kept", version, regs, len(files))
	}
}
