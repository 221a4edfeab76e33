package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/store"
)

var _ store.CatalogStore = (*Store)(nil)

const (
	catalogCols = `tenant, server, url, protocol, tools, prompts, resources, templates, counts, fetched_at, ttl, generation, sum, title, instructions`
	// summaryCols are catalogCols without the lists.
	summaryCols = `tenant, server, url, protocol, NULL::bytea, NULL::bytea, NULL::bytea, NULL::bytea, counts, fetched_at, ttl, generation, sum, title, instructions`
)

// PutCatalog implements [store.CatalogStore]; the write is announced as a
// [store.ChangeCatalog], so other replicas can take the new catalog.
func (s *Store) PutCatalog(ctx context.Context, c *store.Catalog) error {
	if c.Server == "" {
		return errors.New("putting catalog: no server ID")
	}
	if c.Size() > store.MaxCatalogBytes {
		return fmt.Errorf("putting catalog of server %q: %d bytes: %w", c.Server, c.Size(), store.ErrTooLarge)
	}
	sum := c.ContentSum()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO catalogs (`+catalogCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (tenant, server) DO UPDATE SET
				url = EXCLUDED.url, protocol = EXCLUDED.protocol, tools = EXCLUDED.tools,
				prompts = EXCLUDED.prompts, resources = EXCLUDED.resources, templates = EXCLUDED.templates,
				counts = EXCLUDED.counts, fetched_at = EXCLUDED.fetched_at, ttl = EXCLUDED.ttl, generation = EXCLUDED.generation,
				sum = EXCLUDED.sum, title = EXCLUDED.title, instructions = EXCLUDED.instructions`,
			c.Tenant, c.Server, c.URL, c.Protocol, list(c.Tools), list(c.Prompts), list(c.Resources), list(c.Templates), store.EncodeCounts(c.Counts),
			ts(c.FetchedAt), int64(c.TTL), int64(c.Generation), sum[:], c.Title, c.Instructions)
		if err != nil {
			return fmt.Errorf("putting catalog: %w", err)
		}
		return notify(ctx, tx, store.Change{Kind: store.ChangeCatalog, Tenant: c.Tenant, Server: c.Server})
	})
}

// list stores a JSON list; nil (never loaded) as NULL.
func list(v json.RawMessage) []byte {
	if v == nil {
		return nil
	}
	return []byte(v)
}

// GetCatalog implements [store.CatalogStore].
func (s *Store) GetCatalog(ctx context.Context, tenant, server string) (*store.Catalog, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+catalogCols+` FROM catalogs WHERE tenant = $1 AND server = $2`, tenant, server)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanCatalog)
	if err != nil {
		return nil, notFound(err, fmt.Sprintf("catalog of server %q", server))
	}
	return c, nil
}

// Catalogs implements [store.CatalogStore].
func (s *Store) Catalogs(ctx context.Context, tenant string) ([]*store.Catalog, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+summaryCols+` FROM catalogs WHERE tenant = $1 ORDER BY server`, tenant)
	if err != nil {
		return nil, fmt.Errorf("listing catalogs: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanCatalog)
	if err != nil {
		return nil, fmt.Errorf("listing catalogs: %w", err)
	}
	return list, nil
}

func scanCatalog(row pgx.CollectableRow) (*store.Catalog, error) {
	var (
		c               store.Catalog
		t, p, r, tm     []byte
		sum             []byte
		cnt             string
		fetched         *time.Time
		ttl, generation int64
	)
	if err := row.Scan(&c.Tenant, &c.Server, &c.URL, &c.Protocol, &t, &p, &r, &tm, &cnt, &fetched, &ttl, &generation, &sum, &c.Title, &c.Instructions); err != nil {
		return nil, err
	}
	c.Sum = store.SumOf(sum)
	c.Tools, c.Prompts, c.Resources, c.Templates = raw(t), raw(p), raw(r), raw(tm)
	if err := store.DecodeCounts(cnt, &c.Counts); err != nil {
		return nil, err
	}
	c.FetchedAt, c.TTL, c.Generation = fromTS(fetched), time.Duration(ttl), uint64(generation)
	return &c, nil
}

func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// DeleteCatalog implements [store.CatalogStore].
func (s *Store) DeleteCatalog(ctx context.Context, tenant, server string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM catalogs WHERE tenant = $1 AND server = $2`, tenant, server)
		if err != nil {
			return fmt.Errorf("deleting catalog: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		return notify(ctx, tx, store.Change{Kind: store.ChangeCatalog, Tenant: tenant, Server: server})
	})
}
