package cli

import (
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

type toolsOptions struct {
	ID, Tool string
	Enabled  bool
}

func newToolsCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools enable|disable NAME TOOL",
		Short: "Enable or disable one tool of a server",
		Long: strings.TrimSpace(`
A disabled tool is hidden from every listing and refused by calls. It stays
disabled if the server removes and later re-adds it.`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown subcommand %q: use 'mcpgate tools enable NAME TOOL' or 'mcpgate tools disable NAME TOOL'", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	for _, enabled := range []bool{true, false} {
		opts := &toolsOptions{Enabled: enabled}
		verb := map[bool]string{true: "enable", false: "disable"}[enabled]
		cmd.AddCommand(&cobra.Command{
			Use:   verb + " NAME TOOL",
			Short: strings.ToUpper(verb[:1]) + verb[1:] + " one tool of a server",
			Args:  exactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.ID, opts.Tool = args[0], args[1]
				return runTools(app, opts)
			},
		})
	}
	return cmd
}

func runTools(app *App, opts *toolsOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	if strings.TrimSpace(opts.Tool) == "" {
		return usageErrorf("TOOL must not be empty")
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	if err := cfg.SetToolEnabled(opts.ID, opts.Tool, opts.Enabled); err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(app.IO.Out, "Tool %q of server %q is now %s\n", opts.Tool, opts.ID, enabledWord(opts.Enabled))
	return nil
}
