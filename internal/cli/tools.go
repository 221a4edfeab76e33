package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// toolsCheckWait bounds how long tools enable|disable waits for the
// server's tool list to check the name; past it the change is saved
// unchecked, with a note.
const toolsCheckWait = 20 * time.Second

type toolsOptions struct {
	ID, Tool string
	Enabled  bool
}

type toolsListOptions struct {
	ID   string
	JSON bool
}

func newToolsCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools list|enable|disable NAME [TOOL]",
		Short: "List a server's tools with the disabled ones, or enable or disable one",
		Long: strings.TrimSpace(`
A disabled tool is hidden from every listing and refused by calls. It stays
disabled if the server removes and later re-adds it. 'tools list NAME'
shows every tool of NAME, disabled ones included; enable and disable check
the name against the server's tools and suggest the closest.`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown subcommand %q: use 'mcpgate tools list NAME', 'mcpgate tools enable NAME TOOL' or 'mcpgate tools disable NAME TOOL'", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	listOpts := &toolsListOptions{}
	list := &cobra.Command{
		Use:   "list NAME",
		Short: "List every tool of a server, disabled ones included",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			listOpts.ID = args[0]
			return runToolsList(cmd.Context(), app, listOpts)
		},
	}
	list.Flags().BoolVar(&listOpts.JSON, "json", false, `print JSON: {"server","tools":[{"name","enabled","offered","description"}]}`)
	cmd.AddCommand(list)
	for _, enabled := range []bool{true, false} {
		opts := &toolsOptions{Enabled: enabled}
		verb := map[bool]string{true: "enable", false: "disable"}[enabled]
		cmd.AddCommand(&cobra.Command{
			Use:   verb + " NAME TOOL",
			Short: strings.ToUpper(verb[:1]) + verb[1:] + " one tool of a server",
			Args:  exactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.ID, opts.Tool = args[0], args[1]
				return runTools(cmd.Context(), app, opts)
			},
		})
	}
	return cmd
}

// toolRow is one line of tools list: a tool the server offers, or a
// disabled name it does not offer (any more).
type toolRow struct {
	Name        string `json:"name"`
	Enabled     bool   `json:"enabled"`
	Offered     bool   `json:"offered"`
	Description string `json:"description,omitempty"`
}

func runToolsList(ctx context.Context, app *App, opts *toolsListOptions) error {
	s, err := app.Server(opts.ID)
	if err != nil {
		return err
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	var tools []*mcp.Tool
	err = forEachServer(ctx, app, []string{opts.ID}, "Listing tools of", func(ctx context.Context, _ int) error {
		var err error
		tools, err = m.AllTools(ctx, opts.ID)
		return err
	})[0]
	if err != nil {
		return namedError(opts.ID, err)
	}
	rows := make([]toolRow, 0, len(tools)+len(s.DisabledTools))
	for _, t := range tools {
		rows = append(rows, toolRow{Name: sanitize(t.Name), Enabled: s.ToolEnabled(t.Name), Offered: true, Description: firstLine(t.Description, 120)})
	}
	for _, name := range s.DisabledTools {
		if !slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == name }) {
			rows = append(rows, toolRow{Name: sanitize(name)})
		}
	}
	if opts.JSON {
		return writeJSON(app.IO.Out, map[string]any{"server": opts.ID, "tools": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintf(app.IO.ErrOut, "Server %q offers no tools.\n", opts.ID)
		return nil
	}
	lines := [][]string{{"TOOL", "STATE", "DESCRIPTION"}}
	for _, r := range rows {
		state, desc := enabledWord(r.Enabled), r.Description
		if !r.Offered {
			desc = "(not offered by the server now)"
		}
		lines = append(lines, []string{firstLine(r.Name, 80), state, desc})
	}
	return writeRows(app.IO.Out, lines)
}

func runTools(ctx context.Context, app *App, opts *toolsOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	if strings.TrimSpace(opts.Tool) == "" {
		return usageErrorf("TOOL must not be empty")
	}
	s, err := app.Server(opts.ID)
	if err != nil {
		return err
	}
	// Enabling a name that is disabled needs no check: it only removes it.
	if !opts.Enabled || s.ToolEnabled(opts.Tool) {
		if err := checkToolName(ctx, app, opts); err != nil {
			return err
		}
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

// checkToolName refuses a tool the server does not offer, naming the
// closest it does. When its tools cannot be listed (the server is down,
// disabled or needs a sign-in), the name cannot be checked: the change is
// still made, with a note saying so. Without a store no mcpgate process
// has listed the server yet; the config is changed without creating one
// (and a key), as the other config commands do.
func checkToolName(ctx context.Context, app *App, opts *toolsOptions) error {
	dir, err := app.DataDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, storeFileName)); err != nil {
		fmt.Fprintf(app.IO.ErrOut, "mcpgate: note: %s has not been connected yet, so %q is not checked against its tools (mcpgate tools list %s shows them)\n",
			opts.ID, opts.Tool, opts.ID)
		return nil
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, toolsCheckWait)
	defer cancel()
	var tools []*mcp.Tool
	err = forEachServer(ctx, app, []string{opts.ID}, "Checking the tools of", func(ctx context.Context, _ int) error {
		var err error
		tools, err = m.AllTools(ctx, opts.ID)
		return err
	})[0]
	if err != nil {
		fmt.Fprintf(app.IO.ErrOut, "mcpgate: note: could not check that %s offers a tool %q (%s); changing the config anyway\n",
			opts.ID, opts.Tool, describeError(errorInfo(err)))
		return nil
	}
	known := make([]string, 0, len(tools))
	for _, t := range tools {
		if t.Name == opts.Tool {
			return nil
		}
		known = append(known, t.Name)
	}
	msg := fmt.Sprintf("server %q has no tool %q", opts.ID, opts.Tool)
	if c := names.Closest(opts.Tool, known, 3); len(c) > 0 {
		msg += "; did you mean " + strings.Join(c, ", ") + "?"
	}
	msg += " (mcpgate tools list " + opts.ID + " shows them all)"
	return &mcpgate.Error{Category: mcpgate.CategoryNotFound, Message: sanitize(msg)}
}
