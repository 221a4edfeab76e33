package sqlite

import (
	"context"
	"fmt"
	"strings"
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
		for _, e := range entries {
			tenants[e.Tenant] = true
		}
		if err := insertLog(t, entries); err != nil {
			return fmt.Errorf("appending to the request log: %w", err)
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

// logRowsPerInsert is how many entries one INSERT writes. Statements, not
// rows, are most of what an insert costs (BenchmarkAppendLog: one
// statement per row cost about 16 µs a row), and 64 rows of 10 values
// stay far under SQLite's limit of 32,766 values a statement.
const logRowsPerInsert = 64

// insertLog writes entries in INSERTs of up to logRowsPerInsert rows: one
// statement prepared for the full ones and one for the rest.
func insertLog(t *tx, entries []*store.LogEntry) error {
	full := len(entries) / logRowsPerInsert * logRowsPerInsert
	if full > 0 {
		ins, err := t.conn.PrepareContext(t.ctx, logInsert(logRowsPerInsert))
		if err != nil {
			return err
		}
		defer ins.Close()
		args := make([]any, 0, 10*logRowsPerInsert)
		for i := 0; i < full; i += logRowsPerInsert {
			if _, err := ins.ExecContext(t.ctx, logArgs(args[:0], entries[i:i+logRowsPerInsert])...); err != nil {
				return err
			}
		}
	}
	if rest := entries[full:]; len(rest) > 0 {
		_, err := t.conn.ExecContext(t.ctx, logInsert(len(rest)), logArgs(make([]any, 0, 10*len(rest)), rest)...)
		return err
	}
	return nil
}

// logInsert is an INSERT of rows entries.
func logInsert(rows int) string {
	const row = `(NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	var b strings.Builder
	b.Grow(len(`INSERT INTO request_log () VALUES `) + len(logCols) + rows*(len(row)+2))
	b.WriteString(`INSERT INTO request_log (` + logCols + `) VALUES `)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// logArgs appends the values of entries, in logCols' order after id.
func logArgs(args []any, entries []*store.LogEntry) []any {
	for _, e := range entries {
		args = append(args, e.Tenant, e.Time.UnixMicro(), e.Server, e.Method, e.Tool, int64(e.Duration), e.Outcome,
			e.HTTPStatus, e.BytesIn, e.BytesOut)
	}
	return args
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
