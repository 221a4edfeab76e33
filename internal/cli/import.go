package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/hosts"
	"github.com/spf13/cobra"
)

// maxImportBytes bounds an import file; agent configs are a few kilobytes,
// ~/.claude.json can hold long histories.
const maxImportBytes = 64 << 20

type importOptions struct {
	File     string
	From     string // a host ID, or importFromAll
	Scope    *enumFlag
	Format   string
	Replace  bool
	AllowEnv []string
	JSON     bool
	// scopeSet and formatSet say the flags were given, not defaulted.
	scopeSet, formatSet bool
}

func newImportCmd(app *App) *cobra.Command {
	opts := &importOptions{Scope: newEnumFlag("user", "user", "project")}
	cmd := &cobra.Command{
		Use:   "import FILE | import --from HOST|all [--scope user|project]",
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

--from HOST finds the host's config itself, where mcpgate install writes
it (--scope project: the working directory's), and reads it in that host's
format. --from all imports from every host whose config is on this
machine, each reported under the host's name; a server two hosts share is
imported once, and the other entry skipped with the reason. The mcpgate
entry that mcpgate install wrote is never imported: it is mcpgate itself.

Headers may read environment variables (${VAR}), whose values are then sent
to the server with every request. A project's config can name any variable,
so import refuses until you allow each one by name with --allow-env; the
output lists every server's headers and the variables they read. Servers
that say nothing of authentication are imported with auth none; one that
asks for a sign-in: mcpgate add NAME URL --auth oauth --replace.

FILE may be - to read standard input. --json prints the result as JSON:
the servers imported (header names, never their values), those skipped
and why, the notes, and the format each file was read as.`),
		Example: examples(`
  mcpgate import .mcp.json
  mcpgate import .mcp.json --allow-env GITHUB_TOKEN,SENTRY_TOKEN
  mcpgate import --from cursor
  mcpgate import --from vscode --scope project
  mcpgate import --from all
  mcpgate import ~/.claude.json --format claude-code
  mcpgate import ~/.codex/config.toml
  mcpgate import ~/.gemini/settings.json --format gemini
  mcpgate import .vscode/mcp.json --replace --json`),
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("from") {
				if len(args) > 0 {
					return usageErrorf("import takes FILE or --from HOST, not both (got %q and --from %s)", args[0], opts.From)
				}
				return nil
			}
			if cmd.Flags().Changed("scope") {
				return usageErrorf("--scope goes with --from HOST")
			}
			if len(args) == 0 {
				return usageErrorf("import needs a FILE (- for standard input), or --from HOST (one of %s, or all)", strings.Join(hosts.IDs(), ", "))
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.File = args[0]
			}
			opts.scopeSet, opts.formatSet = cmd.Flags().Changed("scope"), cmd.Flags().Changed("format")
			return runImport(app, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "auto", "the host that wrote FILE: "+formatList())
	cmd.Flags().StringVar(&opts.From, "from", "", "read the config of this `host` from where it keeps it (or all: every host found on this machine)")
	cmd.Flags().Var(opts.Scope, "scope", "with --from: whose config, user (every project) or project (the working directory's)")
	cmd.Flags().BoolVar(&opts.Replace, "replace", false, "replace servers that are already configured")
	cmd.Flags().StringSliceVar(&opts.AllowEnv, "allow-env", nil, "environment `variables` the imported headers may read and send to their servers (comma-separated or repeated)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
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

// importSource is one file an import reads and what was found in it.
type importSource struct {
	host hosts.Host // the zero Host for a FILE argument
	file string     // "-" for standard input
	res  *config.ImportResult
}

func runImport(app *App, opts *importOptions) error {
	format, err := config.ParseFormat(opts.Format)
	if err != nil {
		return usageErrorf("--format: %s", strings.TrimPrefix(err.Error(), "import format "))
	}
	var sources []importSource
	if opts.From != "" || opts.File == "" {
		sources, err = hostSources(app, opts, format)
	} else {
		sources, err = fileSource(app, opts.File, format)
	}
	if err != nil {
		return err
	}
	all := mergeSources(sources)
	for i, v := range opts.AllowEnv {
		opts.AllowEnv[i] = strings.TrimSpace(v)
	}
	if err := all.CheckEnv(opts.AllowEnv); err != nil {
		return usageErrorf("%s", strings.Replace(err.Error(), "allow each variable by name: ", "import again with --allow-env ", 1))
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	if len(all.Servers) > 0 {
		if err := cfg.Import(all, opts.Replace); err != nil {
			return err
		}
		if err := cfg.Save(); err != nil {
			return err
		}
	}
	switch {
	case opts.JSON:
		return writeJSON(app.IO.Out, importReport(cfg.Path, len(all.Servers) > 0, sources))
	case opts.From == importFromAll:
		writeHostsImport(app.IO.Out, cfg.Path, sources, len(all.Servers))
	default:
		writeImport(app.IO.Out, cfg.Path, sources[0])
	}
	return nil
}

// fileSource reads FILE (or standard input).
func fileSource(app *App, file string, format config.Format) ([]importSource, error) {
	data, err := readImport(app, file)
	if err != nil {
		return nil, err
	}
	name := file
	if name == "-" {
		name = ""
	}
	res, err := config.ParseImportFile(name, data, format)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	src := importSource{file: file, res: res}
	if h, err := hosts.Lookup(string(res.Format)); err == nil && name != "" {
		skipSelf(h, name, res)
	}
	return []importSource{src}, nil
}

// writeImport prints the result of importing one file.
func writeImport(out io.Writer, cfgPath string, src importSource) {
	res, file := src.res, src.file
	if src.host.ID != "" {
		fmt.Fprintf(out, "Read %s's config %s.\n", src.host.Name, file)
	}
	if res.Detected != "" {
		fmt.Fprintf(out, "Read %s as %s: detected from %s.\n", file, res.Format, res.Detected)
	}
	if len(res.Servers) > 0 {
		fmt.Fprintf(out, "Imported %d %s from %s (%s format) into %s:\n", len(res.Servers), plural(len(res.Servers), "server", "servers"), file, res.Format, cfgPath)
		tw := newTable(out)
		for _, s := range res.Servers {
			fmt.Fprintf(tw, "  %s\t%s\tauth %s%s\n", s.ID, mcpgate.ShowURL(s.URL), s.Auth, headerSummary(s, res.EnvUses()))
		}
		tw.Flush()
	} else {
		fmt.Fprintf(out, "Nothing to import from %s (%s format); the config is unchanged.\n", file, res.Format)
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
