package cli

import (
	"fmt"

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
			return runRemove(app, opts)
		},
	}
}

func runRemove(app *App, opts *removeOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	if err := cfg.Remove(opts.ID); err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(app.IO.Out, "Removed server %q from %s\n", opts.ID, cfg.Path)
	return nil
}
