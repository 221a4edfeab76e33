package cli

import (
	"fmt"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

type enableOptions struct {
	ID      string
	Enabled bool
}

// newEnableCmd builds "enable" or, with enabled false, "disable".
func newEnableCmd(app *App, enabled bool) *cobra.Command {
	opts := &enableOptions{Enabled: enabled}
	cmd := &cobra.Command{
		Use:   "enable NAME",
		Short: "Enable a server, so it connects when needed",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runEnable(app, opts)
		},
	}
	if !enabled {
		cmd.Use = "disable NAME"
		cmd.Short = "Disable a server: it is kept in the config but never connected"
	}
	return cmd
}

func runEnable(app *App, opts *enableOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	if err := cfg.SetEnabled(opts.ID, opts.Enabled); err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(app.IO.Out, "Server %q is now %s\n", opts.ID, enabledWord(opts.Enabled))
	return nil
}

func enabledWord(enabled bool) string {
	if enabled {
		return "enabled"
	}
	return "disabled"
}
