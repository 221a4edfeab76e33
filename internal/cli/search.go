package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/spf13/cobra"
)

type searchOptions struct {
	Query string
	Limit int
	JSON  bool
}

func newSearchCmd(app *App) *cobra.Command {
	opts := &searchOptions{}
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Find tools across every enabled server, best match first",
		Long: strings.TrimSpace(`
Rank the enabled tools of every enabled server for QUERY (words or a whole
sentence) the way the gateway's search action does for a model. A server
whose catalog an earlier command stored (up to a week ago) is searched in
that catalog without connecting; status, connect, call and serve store a
fresh one. A server that cannot be reached is reported on stderr; the
exit code is then 1.`),
		Example: examples(`
  mcpgate search "open a bug report"
  mcpgate search "list my pull requests" --limit 3 --json`),
		Args: argsBetween(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Query = strings.Join(args, " ")
			return runSearch(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", 10, "at most this many results")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print JSON: {"results":[{"server","tool","score","description"}]}`)
	return cmd
}

func runSearch(ctx context.Context, app *App, opts *searchOptions) error {
	if strings.TrimSpace(opts.Query) == "" {
		return usageErrorf("search needs a query")
	}
	if opts.Limit <= 0 {
		return usageErrorf("--limit must be positive")
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	stop := startProgress(app.IO.ErrOut, app.IO.ErrTTY, func() string { return "Searching…" })
	var hits []gateway.SearchHit
	var failed []string
	search := func(g *gateway.Gateway) error {
		hits, failed, err = g.Search(ctx, opts.Query, "", opts.Limit)
		return err
	}
	if cache := app.indexCache(); cache == nil {
		err = search(gateway.New(&gateway.Options{Manager: m}))
	} else {
		err = cache.guard(func() error {
			return search(gateway.New(&gateway.Options{Manager: m, IndexCache: cache}))
		})
		if errors.Is(err, errKeptIndexCutShort) {
			// Another program cut the kept file short under the search:
			// search as if nothing were kept.
			err = search(gateway.New(&gateway.Options{Manager: m}))
		}
	}
	stop()
	if err != nil {
		return err
	}
	if hits == nil {
		hits = []gateway.SearchHit{}
	}
	if opts.JSON {
		if err := writeJSON(app.IO.Out, map[string]any{"results": hits}); err != nil {
			return err
		}
	} else {
		rows := make([][]string, len(hits))
		for i, h := range hits {
			rows[i] = []string{h.Server, firstLine(h.Tool, 80), fmt.Sprintf("%.2f", h.Score), firstLine(h.Description, 100)}
		}
		if len(rows) == 0 {
			fmt.Fprintln(app.IO.ErrOut, "No tool matches.")
		}
		if err := writeRows(app.IO.Out, rows); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(app.IO.ErrOut, "mcpgate: not searched (run mcpgate status): %s\n", strings.Join(failed, ", "))
		return &reportedError{Err: errors.New("some servers could not be searched")}
	}
	return nil
}
