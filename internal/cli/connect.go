package cli

import (
	"context"
	"fmt"

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
	ID string
	Op sessionOp
}

func newConnectCmd(app *App, op sessionOp) *cobra.Command {
	opts := &connectOptions{Op: op}
	short := map[sessionOp]string{
		opConnect:    "Connect a server and load its catalogs",
		opDisconnect: "Close this process's session with a server",
		opReconnect:  "Replace the session with a server by a new one",
	}[op]
	return &cobra.Command{
		Use:   string(op) + " NAME",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runConnect(cmd.Context(), app, opts)
		},
	}
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
	ids := []string{opts.ID}
	errs := forEachServer(ctx, app, ids, verb, func(ctx context.Context, i int) error { return f(ctx, ids[i]) })
	if err := errs[0]; err != nil {
		return err
	}
	st, err := m.Status(opts.ID)
	if err != nil {
		return err
	}
	fmt.Fprintln(app.IO.Out, statusLine(st))
	return nil
}
