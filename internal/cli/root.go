// Package cli is the mcpgate command line: one file per command (or per
// small group of related commands), each with an options struct, a
// constructor newXxxCmd(app) and a run function, so flag parsing is tested
// apart from the work.
//
// [Main] builds an [App] for one invocation, runs the cobra command tree
// and turns the outcome into an exit code in one place (exitCode):
//
//	0  success
//	1  failure, including a tool result with isError
//	2  usage: unknown command, bad flag or argument, invalid input
//	4  authorization needed
//
// A process connects only the servers its command needs and closes every
// session before it exits. Text that came from a remote server is stripped
// of control characters before it is printed (see sanitize), so a hostile
// server cannot drive the terminal.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/spf13/cobra"
)

// Main runs mcpgate with args (without the program name) and returns the
// exit code. An interrupt or SIGTERM cancels the running command, which
// then closes its sessions cleanly (serve --http drains first).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runApp(ctx, &App{IO: NewIO(stdin, stdout, stderr), Getenv: os.Getenv, ownsProcess: true}, args)
}

// run is one invocation: a fresh App and command tree, the error printed
// once as "mcpgate: message", the manager closed before returning.
func run(ctx context.Context, args []string, streams *IO, getenv func(string) string) int {
	return runApp(ctx, &App{IO: streams, Getenv: getenv}, args)
}

// runApp is run with an App its caller prepared (the demo replaces its
// browser); app must be fresh, and is closed before runApp returns.
func runApp(ctx context.Context, app *App, args []string) int {
	defer app.Close()
	streams := app.IO

	root := newRootCmd(app)
	started := false
	eachCommand(root, func(c *cobra.Command) {
		if c.RunE == nil {
			return
		}
		runE := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			started = true
			app.collect(collectOneShot) // serve and ui choose otherwise
			return runE(cmd, args)
		}
	})
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !started {
		// Everything cobra rejects before a command runs (unknown command,
		// bad flag, wrong arguments) is a usage error.
		if _, ok := errors.AsType[*UsageError](err); !ok {
			err = &UsageError{Err: err}
		}
	}
	printError(streams.ErrOut, cmd, err)
	return exitCode(err)
}

func printError(w io.Writer, cmd *cobra.Command, err error) {
	if err == nil {
		return
	}
	if _, ok := errors.AsType[*reportedError](err); ok {
		return
	}
	fmt.Fprintf(w, "mcpgate: %s\n", sanitize(err.Error()))
	if _, ok := errors.AsType[*UsageError](err); ok && cmd != nil {
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}

func newRootCmd(app *App) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpgate",
		Short: "Connect AI agents to remote MCP servers",
		Long: strings.TrimSpace(`
mcpgate connects AI agents to remote MCP servers over Streamable HTTP.

Add a server, sign in to it, check its status, list and call its tools
from the terminal.
Try it without any setup:

  mcpgate demo`),
		Version:       versionLine(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without a subcommand, show the help; a stray argument is an
		// unknown command.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
				var known []string
				for _, c := range cmd.Commands() {
					if c.IsAvailableCommand() {
						known = append(known, c.Name())
					}
				}
				if s := names.Closest(args[0], known, 2); len(s) > 0 {
					msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
				}
				return &UsageError{Err: errors.New(msg)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	root.SetIn(app.IO.In)
	root.SetOut(app.IO.Out)
	root.SetErr(app.IO.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return flagError(err) })
	root.PersistentFlags().StringVar(&app.configFlag, "config", "", "config `file` (default $MCPGATE_CONFIG, else $XDG_CONFIG_HOME/mcpgate/config.json)")
	root.PersistentFlags().StringVar(&app.dataDirFlag, "data-dir", "", "data `directory` holding credentials, sealed (default $MCPGATE_DATA_DIR, else $XDG_DATA_HOME/mcpgate)")

	root.AddGroup(
		&cobra.Group{ID: "config", Title: "Configure servers:"},
		&cobra.Group{ID: "auth", Title: "Sign in:"},
		&cobra.Group{ID: "connect", Title: "Connect and inspect:"},
		&cobra.Group{ID: "use", Title: "Use tools, prompts and resources:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("config",
		newAddCmd(app), newRemoveCmd(app), newEnableCmd(app, true), newEnableCmd(app, false),
		newToolsCmd(app), newImportCmd(app), newServersCmd(app), newUICmd(app))
	add("auth", newAuthCmd(app), newLogoutCmd(app))
	add("connect",
		newStatusCmd(app), newConnectCmd(app, opConnect), newConnectCmd(app, opDisconnect), newConnectCmd(app, opReconnect), newLogCmd(app),
		newDoctorCmd(app))
	add("use",
		newSearchCmd(app), newListCmd(app), newDescribeCmd(app), newCallCmd(app),
		newPromptsCmd(app), newPromptCmd(app), newResourcesCmd(app), newReadCmd(app))
	root.AddGroup(&cobra.Group{ID: "agents", Title: "Serve agents:"})
	add("agents", newServeCmd(app), newKeysCmd(app), newInstallCmd(app), newUninstallCmd(app))
	root.AddCommand(newDemoCmd(app))
	addCompletion(root, app)
	addHelpCmd(root)
	return root
}

func eachCommand(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		eachCommand(sub, f)
	}
}

// examples keeps the indentation of the first example line, which
// strings.TrimSpace would eat.
func examples(s string) string { return strings.Trim(s, "\n") }
