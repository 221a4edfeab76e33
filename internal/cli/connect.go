package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

// sessionOp is what connect, disconnect and reconnect do to a session.
type sessionOp string

const (
	opConnect    sessionOp = "connect"
	opDisconnect sessionOp = "disconnect"
	opReconnect  sessionOp = "reconnect"
)

type connectOptions struct {
	ID   string
	Op   sessionOp
	JSON bool
}

func newConnectCmd(app *App, op sessionOp) *cobra.Command {
	opts := &connectOptions{Op: op}
	short := map[sessionOp]string{
		opConnect:    "Connect a server and load its catalogs",
		opDisconnect: "Close this process's session with a server",
		opReconnect:  "Replace the session with a server by a new one",
	}[op]
	cmd := &cobra.Command{
		Use:   string(op) + " NAME",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runConnect(cmd.Context(), app, opts)
		},
	}
	if op == opDisconnect {
		cmd.Long = strings.TrimSpace(`
Close this process's session with NAME. Each mcpgate process (serve for an
agent host, ui, a command) holds its own sessions; disconnect closes only
its own, so other processes keep theirs. To stop them using a server,
disable it: they follow the config file.`)
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the server's status as JSON, as one entry of status --json")
	return cmd
}

func runConnect(ctx context.Context, app *App, opts *connectOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	f, verb := m.Connect, "Connecting"
	switch opts.Op {
	case opDisconnect:
		f, verb = m.Disconnect, "Disconnecting"
	case opReconnect:
		f, verb = m.Reconnect, "Reconnecting"
	}
	before, err := m.Status(opts.ID)
	if err != nil {
		return err
	}
	ids := []string{opts.ID}
	errs := forEachServer(ctx, app, ids, verb, func(ctx context.Context, i int) error { return f(ctx, ids[i]) })
	if err := errs[0]; err != nil {
		return namedError(opts.ID, err)
	}
	st, err := m.Status(opts.ID)
	if err != nil {
		return err
	}
	if opts.JSON {
		st.URL = mcpgate.ShowURL(st.URL)
		return writeJSON(app.IO.Out, st)
	}
	if opts.Op != opDisconnect {
		fmt.Fprintln(app.IO.Out, statusLine(st))
		return nil
	}
	// A command's process starts without sessions, so there is usually
	// nothing of its own to close; say so rather than print a state that
	// reads as if every process let go of the server.
	what := "this process had no session with it, so none was closed"
	if before.ConnectionID != 0 {
		what = "closed this process's session with it"
	}
	fmt.Fprintf(app.IO.Out, "Disconnected %s: %s. Other mcpgate processes (serve, ui) keep their own sessions; to stop them using %s: mcpgate disable %s\n", opts.ID, what, opts.ID, opts.ID)
	return nil
}
