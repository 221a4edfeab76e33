package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/internal/hosts"
	"github.com/spf13/cobra"
)

type installOptions struct {
	Host   string
	Scope  *enumFlag
	DryRun bool
	List   bool
	JSON   bool
}

func newInstallCmd(app *App) *cobra.Command {
	opts := &installOptions{Scope: newEnumFlag("user", "user", "project")}
	cmd := &cobra.Command{
		Use:   "install HOST [--scope user|project] [--dry-run] | install --list",
		Short: "Add mcpgate serve to an agent host's MCP config",
		Long: strings.TrimSpace(`
Add an entry named mcpgate that runs "mcpgate serve" (this binary, by its
absolute path) to the MCP config of an agent host:

` + hostNames() + `

Only that entry changes: comments, other servers and every other setting
of the file stay as they are, byte for byte. The previous file is saved
beside it as FILE` + hosts.BackupSuffix + `; the new one is written atomically.
Installing again changes nothing; an entry that runs another mcpgate binary
is updated. --dry-run prints the change as a diff and writes nothing.

--scope project writes the project's file (in the working directory),
for the hosts that read one. --list shows every host, where its config is
on this machine, and whether it runs mcpgate.`),
		Example: examples(`
  mcpgate install claude-code
  mcpgate install cursor --dry-run
  mcpgate install vscode --scope project
  mcpgate install --list`),
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.List {
				if len(args) > 0 {
					return usageErrorf("install --list takes no host (got %q)", args[0])
				}
				return nil
			}
			if opts.JSON {
				return usageErrorf("--json goes with --list")
			}
			if len(args) == 0 {
				return usageErrorf("install needs a host (one of %s), or --list", strings.Join(hosts.IDs(), ", "))
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.List {
				return runInstallList(app, opts)
			}
			opts.Host = args[0]
			return runInstall(app, opts)
		},
	}
	cmd.Flags().Var(opts.Scope, "scope", "whose config: user (every project) or project (the working directory's)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the change as a diff; write nothing")
	cmd.Flags().BoolVar(&opts.List, "list", false, "list the hosts, where their configs are and whether they run mcpgate")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "with --list, print JSON")
	return cmd
}

func newUninstallCmd(app *App) *cobra.Command {
	opts := &installOptions{Scope: newEnumFlag("user", "user", "project")}
	cmd := &cobra.Command{
		Use:   "uninstall HOST [--scope user|project] [--dry-run]",
		Short: "Remove mcpgate from an agent host's MCP config",
		Long: strings.TrimSpace(`
Remove the entry named mcpgate from the host's MCP config, and nothing
else: a file mcpgate install changed is again what it was before. The
previous file is saved beside it as FILE` + hosts.BackupSuffix + `.`),
		Example: examples(`
  mcpgate uninstall cursor
  mcpgate uninstall vscode --scope project --dry-run`),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Host = args[0]
			return runUninstall(app, opts)
		},
	}
	cmd.Flags().Var(opts.Scope, "scope", "whose config: user (every project) or project (the working directory's)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the change as a diff; write nothing")
	return cmd
}

// hostNames lists the hosts for the help text, two to a line.
func hostNames() string {
	var b strings.Builder
	for i, h := range hosts.All() {
		cell := fmt.Sprintf("%-15s %s", h.ID, h.Name)
		if i%2 == 0 {
			fmt.Fprintf(&b, "  %-36s", cell)
		} else {
			fmt.Fprintf(&b, "%s\n", cell)
		}
	}
	return strings.TrimRight(b.String(), " \n")
}

// hostsEnv is this machine for package hosts: the OS, the home directory
// (from the environment mcpgate was given, so tests use their own), the
// working directory as the project.
func (a *App) hostsEnv() (hosts.Env, error) {
	home := a.Getenv("HOME")
	if runtime.GOOS == "windows" {
		home = a.Getenv("USERPROFILE")
	}
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return hosts.Env{}, fmt.Errorf("finding the home directory (set HOME): %w", err)
		}
		home = h
	}
	dir, err := os.Getwd()
	if err != nil {
		return hosts.Env{}, fmt.Errorf("finding the working directory: %w", err)
	}
	return hosts.Env{GOOS: runtime.GOOS, Home: home, Dir: dir, Getenv: a.Getenv}, nil
}

// thisBinary is the absolute path of the running mcpgate, symlinks
// resolved, so the host runs this build even if a link moves.
func thisBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the mcpgate binary: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return filepath.Abs(exe)
}

// hostFile looks up the host and its file for the scope; every mistake
// here is a usage error.
func hostFile(app *App, opts *installOptions) (hosts.Host, string, error) {
	h, err := hosts.Lookup(opts.Host)
	if err != nil {
		return hosts.Host{}, "", &UsageError{Err: err}
	}
	env, err := app.hostsEnv()
	if err != nil {
		return hosts.Host{}, "", err
	}
	path, err := h.Path(env, hosts.Scope(opts.Scope.value))
	if errors.Is(err, hosts.ErrNoScope) {
		return hosts.Host{}, "", usageErrorf("%s has no project config; install it with --scope user", h.Name)
	}
	return h, path, err
}

func runInstall(app *App, opts *installOptions) error {
	h, path, err := hostFile(app, opts)
	if err != nil {
		return err
	}
	bin, err := thisBinary()
	if err != nil {
		return err
	}
	c, err := hosts.Install(h, path, bin)
	if err != nil {
		return err
	}
	out := app.IO.Out
	if !c.Changed() {
		fmt.Fprintf(out, "%s already runs mcpgate: %s has %s serve; nothing changed.\n", h.Name, path, bin)
		return nil
	}
	if opts.DryRun {
		fmt.Fprint(out, sanitize(c.Diff()))
		fmt.Fprintf(out, "Dry run: %s not written.\n", path)
		return nil
	}
	if err := c.Apply(); err != nil {
		return err
	}
	switch c.Action {
	case hosts.Updated:
		fmt.Fprintf(out, "Updated mcpgate in %s (%s): it ran %s, now %s serve.\n", h.Name, path, strings.Join(c.Previous, " "), bin)
	default:
		fmt.Fprintf(out, "Added mcpgate to %s (%s): it runs %s serve.\n", h.Name, path, bin)
	}
	writeBackupLine(app, c)
	fmt.Fprintf(out, "Restart %s (or reload its MCP servers) to use it; undo with: mcpgate uninstall %s%s\n", h.Name, h.ID, scopeFlag(opts))
	if tmp := os.TempDir(); strings.HasPrefix(bin, filepath.Clean(tmp)+string(filepath.Separator)) {
		fmt.Fprintf(app.IO.ErrOut, "mcpgate: warning: %s is in the temporary folder (go run?); install a built binary so the entry keeps working\n", bin)
	}
	return nil
}

func runUninstall(app *App, opts *installOptions) error {
	h, path, err := hostFile(app, opts)
	if err != nil {
		return err
	}
	c, err := hosts.Uninstall(h, path)
	if err != nil {
		return err
	}
	out := app.IO.Out
	if !c.Changed() {
		fmt.Fprintf(out, "%s has no mcpgate entry in %s; nothing changed.\n", h.Name, path)
		return nil
	}
	if opts.DryRun {
		fmt.Fprint(out, sanitize(c.Diff()))
		fmt.Fprintf(out, "Dry run: %s not written.\n", path)
		return nil
	}
	if err := c.Apply(); err != nil {
		return err
	}
	fmt.Fprintf(out, "Removed mcpgate from %s (%s); it ran %s.\n", h.Name, path, strings.Join(c.Previous, " "))
	writeBackupLine(app, c)
	return nil
}

func writeBackupLine(app *App, c *hosts.Change) {
	if c.Backup != "" {
		fmt.Fprintf(app.IO.Out, "The previous file is saved as %s.\n", c.Backup)
	}
}

func scopeFlag(opts *installOptions) string {
	if opts.Scope.value == string(hosts.ScopeProject) {
		return " --scope project"
	}
	return ""
}

// hostJSON is one host as `install --list --json` prints it.
type hostJSON struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Format string   `json:"format"`
	Path   string   `json:"path"`
	Found  bool     `json:"found"`
	Wired  bool     `json:"wired"`
	Runs   []string `json:"command,omitempty"`
	// Current is set when the entry runs this binary; Stale when it runs
	// another path (a moved or removed install).
	Current bool   `json:"current"`
	Stale   bool   `json:"stale"`
	Missing bool   `json:"missing,omitempty"` // the binary it runs is not there
	Error   string `json:"error,omitempty"`
}

func runInstallList(app *App, opts *installOptions) error {
	env, err := app.hostsEnv()
	if err != nil {
		return err
	}
	bin, err := thisBinary()
	if err != nil {
		return err
	}
	list := make([]hostJSON, 0, len(hosts.All()))
	for _, h := range hosts.All() {
		path, err := h.Path(env, hosts.ScopeUser)
		if err != nil {
			return err
		}
		row := hostJSON{ID: h.ID, Name: h.Name, Format: string(h.Format), Path: path, Found: h.Found(env)}
		argv, wired, err := hosts.Entry(h, path)
		if err != nil {
			row.Error = err.Error()
		}
		if wired {
			row.Wired, row.Runs = true, argv
			row.Current = len(argv) > 0 && argv[0] == bin && slices.Equal(argv[1:], []string{"serve"})
			row.Stale = !row.Current
			if len(argv) > 0 {
				if _, err := os.Stat(argv[0]); err != nil {
					row.Missing = true
				}
			}
		}
		list = append(list, row)
	}
	if opts.JSON {
		return writeJSON(app.IO.Out, list)
	}
	tw := newTable(app.IO.Out)
	fmt.Fprintln(tw, "HOST\tFOUND\tMCPGATE\tCONFIG")
	for _, r := range list {
		found := "no"
		if r.Found {
			found = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, found, wiredText(r), r.Path)
	}
	tw.Flush()
	fmt.Fprintf(app.IO.Out, "This binary: %s\n", bin)
	for _, r := range list {
		if r.Error != "" {
			fmt.Fprintf(app.IO.Out, "%s: %s\n", r.ID, sanitize(r.Error))
		}
	}
	return nil
}

func wiredText(r hostJSON) string {
	switch {
	case r.Error != "":
		return "unreadable (see below)"
	case !r.Wired:
		return "-"
	case r.Current:
		return "yes"
	case r.Missing:
		return "stale: runs " + sanitize(strings.Join(r.Runs, " ")) + ", which is gone (mcpgate install " + r.ID + ")"
	}
	return "other: runs " + sanitize(strings.Join(r.Runs, " ")) + " (mcpgate install " + r.ID + " to use this binary)"
}
