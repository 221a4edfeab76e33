package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/spf13/cobra"
)

// maxImportBytes bounds an import file; agent configs are a few kilobytes,
// ~/.claude.json can hold long histories.
const maxImportBytes = 64 << 20

type importOptions struct {
	File     string
	Format   string
	Replace  bool
	AllowEnv []string
}

func newImportCmd(app *App) *cobra.Command {
	opts := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import servers from another agent host's MCP config (Claude Code, Cursor, VS Code, Codex, goose, ...)",
		Long: strings.TrimSpace(`
Import the remote (HTTP) servers of another tool's MCP config. Local (stdio)
servers and anything else mcpgate cannot connect to are listed as skipped,
with the reason; mcp-remote wrappers are imported as the server they reach.
A server whose name is already configured is refused unless --replace is
given; either everything is imported or nothing is.

The format is told from the file (JSON, TOML or YAML, and its shape), and
said in the output; --format names the host when that guess is wrong:
` + formatList() + `.

Headers may read environment variables (${VAR}), whose values are then sent
to the server with every request. A project's config can name any variable,
so import refuses until you allow each one by name with --allow-env; the
output lists every server's headers and the variables they read. Servers
that say nothing of authentication are imported with auth none; one that
asks for a sign-in: mcpgate add NAME URL --auth oauth --replace.

FILE may be - to read standard input.`),
		Example: examples(`
  mcpgate import .mcp.json
  mcpgate import .mcp.json --allow-env GITHUB_TOKEN,SENTRY_TOKEN
  mcpgate import ~/.claude.json --format claude-code
  mcpgate import ~/.cursor/mcp.json
  mcpgate import ~/.codex/config.toml
  mcpgate import ~/.gemini/settings.json --format gemini
  mcpgate import .vscode/mcp.json --replace`),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			return runImport(app, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "auto", "the host that wrote FILE: "+formatList())
	cmd.Flags().BoolVar(&opts.Replace, "replace", false, "replace servers that are already configured")
	cmd.Flags().StringSliceVar(&opts.AllowEnv, "allow-env", nil, "environment `variables` the imported headers may read and send to their servers (comma-separated or repeated)")
	return cmd
}

// formatList names every --format value, for help.
func formatList() string {
	var names []string
	for _, f := range config.Formats() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

func runImport(app *App, opts *importOptions) error {
	format, err := config.ParseFormat(opts.Format)
	if err != nil {
		return usageErrorf("--format: %s", strings.TrimPrefix(err.Error(), "import format "))
	}
	data, err := readImport(app, opts.File)
	if err != nil {
		return err
	}
	name := opts.File
	if name == "-" {
		name = ""
	}
	res, err := config.ParseImportFile(name, data, format)
	if err != nil {
		return fmt.Errorf("reading %s: %w", opts.File, err)
	}
	for i, v := range opts.AllowEnv {
		opts.AllowEnv[i] = strings.TrimSpace(v)
	}
	if err := res.CheckEnv(opts.AllowEnv); err != nil {
		return usageErrorf("%s", strings.Replace(err.Error(), "allow each variable by name: ", "import again with --allow-env ", 1))
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	out := app.IO.Out
	if res.Detected != "" {
		fmt.Fprintf(out, "Read %s as %s: detected from %s.\n", opts.File, res.Format, res.Detected)
	}
	if len(res.Servers) > 0 {
		if err := cfg.Import(res, opts.Replace); err != nil {
			return err
		}
		if err := cfg.Save(); err != nil {
			return err
		}
		fmt.Fprintf(out, "Imported %d server(s) from %s (%s format) into %s:\n", len(res.Servers), opts.File, res.Format, cfg.Path)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, s := range res.Servers {
			fmt.Fprintf(tw, "  %s\t%s\tauth %s%s\n", s.ID, mcpgate.ShowURL(s.URL), s.Auth, headerSummary(s, res.EnvUses()))
		}
		tw.Flush()
	} else {
		fmt.Fprintf(out, "Nothing to import from %s (%s format); the config is unchanged.\n", opts.File, res.Format)
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(out, "Before using them:")
		for _, n := range res.Notes {
			fmt.Fprintf(out, "  %s: %s\n", n.Name, firstLine(n.Text, 300))
		}
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintf(out, "Skipped %d:\n", len(res.Skipped))
		for _, s := range res.Skipped {
			fmt.Fprintf(out, "  %s: %s\n", firstLine(s.Name, 80), firstLine(s.Reason, 300))
		}
	}
	return nil
}

func readImport(app *App, file string) ([]byte, error) {
	var r io.Reader
	if file == "-" {
		r = app.IO.In
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, err // *PathError names the file and the reason
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if len(data) > maxImportBytes {
		return nil, fmt.Errorf("reading %s: larger than %d MiB", file, maxImportBytes>>20)
	}
	return data, nil
}

// headerSummary says which headers an imported server sends and which
// environment variables they read: "; headers A, B; reads $X".
func headerSummary(s mcpgate.ServerConfig, uses []config.EnvUse) string {
	if len(s.Headers) == 0 {
		return ""
	}
	out := "; headers " + strings.Join(slices.Sorted(maps.Keys(s.Headers)), ", ")
	var vars []string
	for _, u := range uses {
		if u.Server == s.ID && !slices.Contains(vars, "$"+u.Variable) {
			vars = append(vars, "$"+u.Variable)
		}
	}
	if len(vars) > 0 {
		slices.Sort(vars)
		out += "; reads " + strings.Join(vars, ", ")
	}
	return out
}
