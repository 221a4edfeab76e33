package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/spf13/cobra"
)

// statusWait bounds how long status waits for servers to connect; a server
// still connecting after it is shown as connecting.
const statusWait = 30 * time.Second

type statusOptions struct {
	ID     string
	JSON   bool
	Cached bool
}

func newStatusCmd(app *App) *cobra.Command {
	opts := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Connect and show the true state of each server",
		Long: strings.TrimSpace(`
Connect every enabled server (or just NAME) and show its state: ready,
needs-auth or error, with the reason and the number of tools, prompts and
resources (- in the table, -1 in JSON, when that list was never loaded:
unknown, not none). With --cached, a server whose catalog an earlier command
stored is not connected: it is shown as cached, with the counts of that
catalog, which list, search and describe answer from without connecting.
Disabled servers are listed without connecting. It also says where
credentials are stored and where the key sealing them comes from:
$MCPGATE_SECRET_KEY (env), the OS keyring, or the key file (file).

Exits 1 if a server is in error, 4 if one needs authorization.`),
		Args: argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.ID = args[0]
			}
			return runStatus(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print JSON: {"secretKey":"env|keyring|file","servers":[{"id","state","cached","error",...}]}`)
	cmd.Flags().BoolVar(&opts.Cached, "cached", false, "answer at once: do not connect servers whose catalog is stored, show them as cached")
	return cmd
}

func runStatus(ctx context.Context, app *App, opts *statusOptions) error {
	if opts.ID != "" {
		if err := mcpgate.ValidateID(opts.ID); err != nil {
			return err
		}
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	var ids []string
	if opts.ID != "" {
		st, err := m.Status(opts.ID)
		if err != nil {
			return err
		}
		if st.Enabled && (!opts.Cached || !st.Cached) {
			ids = []string{opts.ID}
		}
	} else {
		for _, st := range m.Statuses() {
			if st.Enabled && (!opts.Cached || !st.Cached) {
				ids = append(ids, st.ID)
			}
		}
	}

	waitCtx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	// The errors are in each server's state, which is what we print.
	forEachServer(waitCtx, app, ids, "Connecting", func(ctx context.Context, i int) error {
		return m.Connect(ctx, ids[i])
	})
	if err := ctx.Err(); err != nil {
		return err
	}

	var statuses []manager.Status
	if opts.ID != "" {
		st, err := m.Status(opts.ID)
		if err != nil {
			return err
		}
		statuses = []manager.Status{st}
	} else {
		statuses = m.Statuses()
	}
	if opts.JSON {
		if statuses == nil {
			statuses = []manager.Status{}
		}
		for i := range statuses {
			statuses[i].URL = mcpgate.ShowURL(statuses[i].URL)
		}
		if err := writeJSON(app.IO.Out, map[string]any{"secretKey": app.keySource, "servers": statuses}); err != nil {
			return err
		}
	} else {
		if len(statuses) == 0 {
			fmt.Fprintln(app.IO.ErrOut, "No servers configured. Add one with: mcpgate add NAME URL")
			return nil
		}
		if err := writeStatusTable(app.IO.Out, statuses); err != nil {
			return err
		}
		fmt.Fprintf(app.IO.Out, "Credentials are stored in %s, sealed with the key from %s.\n", app.storePath(), app.keySourceText())
	}
	return statusesError(statuses)
}

// statusesError decides the outcome of showing statuses that are already
// printed: a server in error (or still not ready, unless it was not
// connected because its catalog is cached) fails, one that needs
// authorization asks for it.
func statusesError(statuses []manager.Status) error {
	var needsAuth, failed bool
	for _, st := range statuses {
		switch {
		case !st.Enabled:
		case st.Cached && st.State == mcpgate.StateDisconnected:
		case st.State == mcpgate.StateNeedsAuth:
			needsAuth = true
		case st.State != mcpgate.StateReady:
			failed = true
		}
	}
	switch {
	case failed:
		return &reportedError{Err: errors.New("a server is not ready")}
	case needsAuth:
		return &reportedError{Err: mcpgate.ErrAuthRequired}
	}
	return nil
}

func writeStatusTable(w io.Writer, statuses []manager.Status) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tMCP\tAUTH\tTOOLS\tPROMPTS\tRESOURCES\tURL")
	for _, st := range statuses {
		state := stateText(st)
		version := st.ProtocolVersion
		if version == "" {
			version = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			st.ID, state, version, st.Auth, count(st.Tools), count(st.Prompts), count(st.Resources), mcpgate.ShowURL(st.URL))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range statuses {
		if st.Error != nil {
			fmt.Fprintf(w, "%s: %s: %s\n", st.ID, st.State, describeError(st.Error))
		}
		for _, d := range st.Diagnostics {
			fmt.Fprintf(w, "%s: note: %s\n", st.ID, firstLine(d, 300))
		}
	}
	return nil
}

// stateText is the STATE column: the state, with what its catalog is.
// A server not connected whose stored catalog answers is "cached", never
// ready: only a live session is.
func stateText(st manager.Status) string {
	state := string(st.State)
	switch {
	case !st.Enabled:
		state = "disabled"
	case st.Cached && st.State == mcpgate.StateDisconnected:
		state = "cached"
	case st.Cached:
		state += " (cached)"
	case st.Stale:
		state += " (stale)"
	}
	return state
}

// statusLine is one server's state in a sentence.
func statusLine(st manager.Status) string {
	s := fmt.Sprintf("%s: %s", st.ID, st.State)
	switch {
	case st.State == mcpgate.StateReady:
		s += fmt.Sprintf(" (%s, %s, %s; MCP %s)", manager.Counted(st.Tools, "tool"), manager.Counted(st.Prompts, "prompt"), manager.Counted(st.Resources, "resource"), st.ProtocolVersion)
	case st.Cached:
		s += fmt.Sprintf(" (cached, %s, %s, %s)", manager.Counted(st.Tools, "tool"), manager.Counted(st.Prompts, "prompt"), manager.Counted(st.Resources, "resource"))
	}
	if st.Error != nil {
		s += ": " + describeError(st.Error)
	}
	return s
}

// count shows a catalog size in a column; -1 means never loaded.
func count(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// forEachServer runs f for each index of ids concurrently and returns the
// errors by index. While it waits, a spinner on a terminal's stderr says what is
// happening.
func forEachServer(ctx context.Context, app *App, ids []string, verb string, f func(ctx context.Context, i int) error) []error {
	errs := make([]error, len(ids))
	if len(ids) == 0 {
		return errs
	}
	var done atomic.Int32
	stop := startProgress(app.IO.ErrOut, app.IO.ErrTTY, func() string {
		if len(ids) == 1 {
			return fmt.Sprintf("%s %s…", verb, ids[0])
		}
		return fmt.Sprintf("%s %d servers (%d done)…", verb, len(ids), done.Load())
	})
	defer stop()
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			errs[i] = f(ctx, i)
			done.Add(1)
		})
	}
	wg.Wait()
	return errs
}
