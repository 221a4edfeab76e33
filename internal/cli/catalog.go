package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
)

// serverCatalog is one server's entries of one catalog, or why there are
// none.
type serverCatalog[T any] struct {
	ID    string
	Items []T
	Err   error
}

// catalogs fetches one catalog (tools, prompts or resources) from the server
// named id, or, with id empty, from every enabled server concurrently. With
// a name, its error is the command's error. Without, a server that fails
// is reported on stderr in one line, the others are still returned, and
// failed says to exit 1 once they are printed.
func catalogs[T any](ctx context.Context, app *App, id, what string,
	fetch func(m *manager.Manager, ctx context.Context, id string) ([]T, error),
) (list []serverCatalog[T], failed error, err error) {
	if id != "" {
		if err := mcpgate.ValidateID(id); err != nil {
			return nil, nil, err
		}
	}
	m, err := app.Manager()
	if err != nil {
		return nil, nil, err
	}
	ids := []string{id}
	if id == "" {
		ids = nil
		for _, st := range m.Statuses() {
			if st.Enabled {
				ids = append(ids, st.ID)
			}
		}
		if len(ids) == 0 {
			fmt.Fprintln(app.IO.ErrOut, "No enabled servers. Add one with: mcpgate add NAME URL")
		}
	}
	list = make([]serverCatalog[T], len(ids))
	errs := forEachServer(ctx, app, ids, "Listing "+what+" of", func(ctx context.Context, i int) error {
		var err error
		list[i].Items, err = fetch(m, ctx, ids[i])
		return err
	})
	if id != "" {
		if errs[0] != nil {
			return nil, nil, namedError(id, errs[0])
		}
		list[0].ID = id
		return list, nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for i, id := range ids {
		list[i].ID, list[i].Err = id, errs[i]
		if errs[i] != nil {
			fmt.Fprintf(app.IO.ErrOut, "mcpgate: %s: could not list %s: %s\n", id, what, describeError(errorInfo(errs[i])))
			failed = &reportedError{Err: errors.New("a server failed")}
		}
	}
	return list, failed, nil
}

// writeCatalogJSON prints {"servers":[{"id":..., key:[...]} or
// {"id":..., "error":{...}}]}.
func writeCatalogJSON[T any](w io.Writer, key string, list []serverCatalog[T]) error {
	servers := make([]map[string]any, 0, len(list))
	for _, c := range list {
		entry := map[string]any{"id": c.ID}
		if c.Err != nil {
			entry["error"] = errorInfo(c.Err)
		} else {
			items := c.Items
			if items == nil {
				items = []T{}
			}
			entry[key] = items
		}
		servers = append(servers, entry)
	}
	return writeJSON(w, map[string]any{"servers": servers})
}

// writeCatalogLines prints one line per entry: server, then the columns
// line returns, aligned.
func writeCatalogLines[T any](w io.Writer, list []serverCatalog[T], line func(T) []string) error {
	var rows [][]string
	for _, c := range list {
		for _, item := range c.Items {
			rows = append(rows, append([]string{c.ID}, line(item)...))
		}
	}
	return writeRows(w, rows)
}

// writeRows prints rows as aligned columns.
func writeRows(w io.Writer, rows [][]string) error {
	tw := newTable(w)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
