package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/store"
	"github.com/spf13/cobra"
)

type logOptions struct {
	JSON bool
	Last int
}

func newLogCmd(app *App) *cobra.Command {
	opts := &logOptions{}
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Show the last requests sent to remote servers (metadata only)",
		Long: strings.TrimSpace(`
Show the last requests mcpgate sent to remote servers, from every mcpgate
process sharing the data directory (serve, call, ui...): time, server,
JSON-RPC method, tool, duration, outcome, HTTP status and bytes in and out.
Payloads, headers and tokens are never logged. The data directory keeps the
last ` + fmt.Sprint(store.MaxLogEntries) + ` requests.`),
		Example: examples(`
  mcpgate log
  mcpgate log --last 10 --json`),
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLog(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&opts.Last, "last", 50, "show the last `N` requests")
	return cmd
}

func runLog(ctx context.Context, app *App, opts *logOptions) error {
	if opts.Last < 1 {
		return usageErrorf("--last must be at least 1")
	}
	entries, err := readLog(ctx, app, opts.Last)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(app.IO.Out, map[string]any{"entries": serve.LogJSON(entries)})
	}
	if len(entries) == 0 {
		fmt.Fprintln(app.IO.ErrOut, "No requests logged yet. They appear here once a command or an agent uses a server.")
		return nil
	}
	tw := newTable(app.IO.Out)
	fmt.Fprintln(tw, "TIME\tSERVER\tMETHOD\tTOOL\tMS\tOUTCOME\tSTATUS\tIN\tOUT")
	for _, e := range entries {
		status := "-"
		if e.HTTPStatus != 0 {
			status = fmt.Sprint(e.HTTPStatus)
		}
		tool := e.Tool
		if tool == "" {
			tool = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\n",
			e.Time.Local().Format("2006-01-02 15:04:05"), sanitize(e.Server), sanitize(e.Method), sanitize(tool),
			e.Duration.Milliseconds(), sanitize(e.Outcome), status, e.BytesIn, e.BytesOut)
	}
	return tw.Flush()
}

// readLog reads the store's log without creating a store (or a key) that
// does not exist yet: then nothing was logged.
func readLog(ctx context.Context, app *App, last int) ([]*store.LogEntry, error) {
	if app.store == nil {
		if _, err := app.DataDir(); err != nil {
			return nil, err
		}
		if _, err := os.Stat(app.storePath()); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	st, err := app.Store()
	if err != nil {
		return nil, err
	}
	return st.RecentLog(ctx, "", last)
}
