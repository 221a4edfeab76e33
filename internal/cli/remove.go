package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

type removeOptions struct {
	ID string
}

func newRemoveCmd(app *App) *cobra.Command {
	opts := &removeOptions{}
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a server from the config",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runRemove(cmd.Context(), app, opts)
		},
	}
}

func runRemove(ctx context.Context, app *App, opts *removeOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	server, _ := cfg.Server(opts.ID)
	if err := cfg.Remove(opts.ID); err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(app.IO.Out, "Removed server %q from %s\n", opts.ID, cfg.Path)
	forgetCredential(ctx, app, server)
	return nil
}

// forgetCredential signs out of a removed server, so re-adding the name
// later starts without the old sign-in. Only an existing store is opened:
// removing a server never creates a data directory or key.
func forgetCredential(ctx context.Context, app *App, server mcpgate.ServerConfig) {
	if _, err := os.Stat(app.storePath()); err != nil {
		return
	}
	oc, err := app.OAuth()
	if err != nil {
		fmt.Fprintf(app.IO.ErrOut, "mcpgate: could not open the credential store to forget %s's sign-in: %s\n", server.ID, sanitize(err.Error()))
		return
	}
	if res, err := oc.Logout(ctx, server); err == nil && res.Removed {
		fmt.Fprintf(app.IO.Out, "Its stored sign-in was deleted too.\n")
	}
}
