package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/store"
)

const logCols = `id, tenant, time, server, method, tool, duration, outcome, http_status, bytes_in, bytes_out`

// AppendLog implements [store.Store]: the inserts and each tenant's trim
// are one short transaction. Replicas appending at once may each trim;
// the bound holds after the last of them.
func (s *Store) AppendLog(ctx context.Context, entries []*store.LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		tenants := make(map[string]bool)
		for _, e := range entries {
			batch.Queue(`INSERT INTO request_log (tenant, time, server, method, tool, duration, outcome, http_status, bytes_in, bytes_out)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				e.Tenant, e.Time.UTC(), e.Server, e.Method, e.Tool, int64(e.Duration), e.Outcome, e.HTTPStatus, e.BytesIn, e.BytesOut)
			tenants[e.Tenant] = true
		}
		for tenant := range tenants {
			batch.Queue(`DELETE FROM request_log WHERE tenant = $1 AND id <= (
				SELECT id FROM request_log WHERE tenant = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)`, tenant, store.MaxLogEntries)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("appending to the request log: %w", err)
		}
		return nil
	})
}

// RecentLog implements [store.Store].
func (s *Store) RecentLog(ctx context.Context, tenant string, last int) ([]*store.LogEntry, error) {
	if last <= 0 || last > store.MaxLogEntries {
		last = store.MaxLogEntries
	}
	rows, err := s.pool.Query(ctx, `SELECT `+logCols+` FROM (
		SELECT `+logCols+` FROM request_log WHERE tenant = $1 ORDER BY id DESC LIMIT $2) AS recent ORDER BY id`, tenant, last)
	if err != nil {
		return nil, fmt.Errorf("reading the request log: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.LogEntry, error) {
		var (
			e   store.LogEntry
			at  time.Time
			dur int64
		)
		if err := row.Scan(&e.ID, &e.Tenant, &at, &e.Server, &e.Method, &e.Tool, &dur, &e.Outcome,
			&e.HTTPStatus, &e.BytesIn, &e.BytesOut); err != nil {
			return nil, err
		}
		e.Time, e.Duration = at.UTC(), time.Duration(dur)
		return &e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the request log: %w", err)
	}
	return list, nil
}
