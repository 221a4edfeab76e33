package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/store"
)

const (
	catalogCols = `tenant, server, url, protocol, counts, fetched_at, ttl, generation, sum, title, instructions, tools, prompts, resources, templates`
	// summaryCols are catalogCols without the lists: the columns of the
	// index catalogs_summary, all a listing reads.
	summaryCols = `tenant, server, url, protocol, counts, fetched_at, ttl, generation, sum, title, instructions, NULL, NULL, NULL, NULL`
)

// PutCatalog implements [store.CatalogStore].
func (s *Store) PutCatalog(ctx context.Context, c *store.Catalog) error {
	if c.Server == "" {
		return errors.New("putting catalog: no server ID")
	}
	if c.Size() > store.MaxCatalogBytes {
		return fmt.Errorf("putting catalog of server %q: %d bytes: %w", c.Server, c.Size(), store.ErrTooLarge)
	}
	sum := c.ContentSum()
	return s.write(ctx, func(t *tx) error {
		_, err := t.conn.ExecContext(t.ctx, `INSERT INTO catalogs (`+catalogCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, server) DO UPDATE SET
				url = excluded.url, protocol = excluded.protocol, tools = excluded.tools,
				prompts = excluded.prompts, resources = excluded.resources, templates = excluded.templates,
				counts = excluded.counts, fetched_at = excluded.fetched_at, ttl = excluded.ttl, generation = excluded.generation,
				sum = excluded.sum, title = excluded.title, instructions = excluded.instructions`,
			c.Tenant, c.Server, c.URL, c.Protocol, store.EncodeCounts(c.Counts), micros(c.FetchedAt), int64(c.TTL), int64(c.Generation),
			sum[:], c.Title, c.Instructions, list(c.Tools), list(c.Prompts), list(c.Resources), list(c.Templates))
		if err != nil {
			return fmt.Errorf("putting catalog: %w", err)
		}
		return nil
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
	var c *store.Catalog
	err := retry(ctx, func() error {
		row := s.db.QueryRowContext(ctx, `SELECT `+catalogCols+` FROM catalogs WHERE tenant = ? AND server = ?`, tenant, server)
		var err error
		c, err = scanCatalog(row)
		return err
	})
	if err != nil {
		return nil, notFound(err, fmt.Sprintf("catalog of server %q", server))
	}
	return c, nil
}

// Catalogs implements [store.CatalogStore].
func (s *Store) Catalogs(ctx context.Context, tenant string) ([]*store.Catalog, error) {
	var out []*store.Catalog
	err := retry(ctx, func() error {
		out = nil
		rows, err := s.db.QueryContext(ctx, `SELECT `+summaryCols+` FROM catalogs WHERE tenant = ? ORDER BY server`, tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanCatalog(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("listing catalogs: %w", err)
	}
	return out, nil
}

func scanCatalog(row interface{ Scan(...any) error }) (*store.Catalog, error) {
	var (
		c               store.Catalog
		t, p, r, tm     []byte
		sum             []byte
		cnt             string
		fetched         sql.Null[int64]
		ttl, generation int64
	)
	if err := row.Scan(&c.Tenant, &c.Server, &c.URL, &c.Protocol, &cnt, &fetched, &ttl, &generation, &sum, &c.Title, &c.Instructions, &t, &p, &r, &tm); err != nil {
		return nil, err
	}
	c.Sum = store.SumOf(sum)
	c.Tools, c.Prompts, c.Resources, c.Templates = raw(t), raw(p), raw(r), raw(tm)
	if err := store.DecodeCounts(cnt, &c.Counts); err != nil {
		return nil, err
	}
	c.FetchedAt, c.TTL, c.Generation = fromMicros(fetched), time.Duration(ttl), uint64(generation)
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
	return s.write(ctx, func(t *tx) error {
		if _, err := t.conn.ExecContext(t.ctx, `DELETE FROM catalogs WHERE tenant = ? AND server = ?`, tenant, server); err != nil {
			return fmt.Errorf("deleting catalog: %w", err)
		}
		return nil
	})
}
