package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/store"
)

const logCols = `id, tenant, time, server, method, tool, duration, outcome, http_status, bytes_in, bytes_out`

// AppendLog implements [store.Store]. The inserts and the trimming are one
// transaction of a few statements, so it holds the write lock briefly; it
// does wait, like every write, for an UpdateCredential in progress.
func (s *Store) AppendLog(ctx context.Context, entries []*store.LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return s.write(ctx, func(t *tx) error {
		tenants := make(map[string]bool)
		// One statement for the batch: preparing it is most of an insert's cost.
		ins, err := t.conn.PrepareContext(t.ctx, `INSERT INTO request_log (`+logCols+`)
			VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return fmt.Errorf("appending to the request log: %w", err)
		}
		defer ins.Close()
		for _, e := range entries {
			_, err := ins.ExecContext(t.ctx,
				e.Tenant, e.Time.UnixMicro(), e.Server, e.Method, e.Tool, int64(e.Duration), e.Outcome,
				e.HTTPStatus, e.BytesIn, e.BytesOut)
			if err != nil {
				return fmt.Errorf("appending to the request log: %w", err)
			}
			tenants[e.Tenant] = true
		}
		for tenant := range tenants {
			_, err := t.conn.ExecContext(t.ctx, `DELETE FROM request_log WHERE tenant = ? AND id <= (
				SELECT id FROM request_log WHERE tenant = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
				tenant, tenant, store.MaxLogEntries)
			if err != nil {
				return fmt.Errorf("trimming the request log: %w", err)
			}
		}
		return nil
	})
}

// RecentLog implements [store.Store].
func (s *Store) RecentLog(ctx context.Context, tenant string, last int) ([]*store.LogEntry, error) {
	if last <= 0 || last > store.MaxLogEntries {
		last = store.MaxLogEntries
	}
	var list []*store.LogEntry
	err := retry(ctx, func() error {
		list = nil
		rows, err := s.db.QueryContext(ctx, `SELECT `+logCols+` FROM (
			SELECT `+logCols+` FROM request_log WHERE tenant = ? ORDER BY id DESC LIMIT ?) ORDER BY id`, tenant, last)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e       store.LogEntry
				at, dur int64
			)
			if err := rows.Scan(&e.ID, &e.Tenant, &at, &e.Server, &e.Method, &e.Tool, &dur, &e.Outcome,
				&e.HTTPStatus, &e.BytesIn, &e.BytesOut); err != nil {
				return err
			}
			e.Time, e.Duration = time.UnixMicro(at).UTC(), time.Duration(dur)
			list = append(list, &e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("reading the request log: %w", err)
	}
	return list, nil
}
