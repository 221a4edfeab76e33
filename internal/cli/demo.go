package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/spf13/cobra"
)

// demoTimeout bounds the whole demo; against a loopback server it takes
// well under a second.
const demoTimeout = 2 * time.Minute

type demoOptions struct{}

func newDemoCmd(app *App) *cobra.Command {
	opts := &demoOptions{}
	return &cobra.Command{
		Use:   "demo",
		Short: "Try mcpgate against a built-in server, offline, changing nothing",
		Long: strings.TrimSpace(`
Start a small MCP server on 127.0.0.1 and run the real mcpgate commands
against it: add, status, list, describe, call (including a tool that fails
and one that asks a question), prompts and resources.

The demo uses a temporary config and data directory, removed at the end; it
never reads or changes your own config.`),
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), app, opts)
		},
	}
}

// demoStep is one command of the demo: what it shows, in plain words, and
// the exit code that means it worked.
type demoStep struct {
	say      string
	args     []string
	wantCode int
	after    string // said after the step, when it needs explaining
}

func runDemo(ctx context.Context, app *App, _ *demoOptions) (err error) {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()

	srv, err := startDemoServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "mcpgate-demo-")
	if err != nil {
		return fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
			err = fmt.Errorf("removing the demo's temporary directory: %w", rmErr)
		}
	}()
	cfgPath := filepath.Join(dir, "config.json")
	dataDir := filepath.Join(dir, "data")

	out := app.IO.Out
	fmt.Fprintf(out, "mcpgate demo: a small MCP server is running at %s (on this machine only).\n", srv.URL)
	fmt.Fprintf(out, "Each step below runs a real mcpgate command against it, with a temporary\nconfig in %s. Your own config is not read or changed.\n", dir)

	steps := []demoStep{
		{say: `Adding the demo server as "demo"`, args: []string{"add", "demo", srv.URL, "--auth", "none"}},
		{say: "Listing the configured servers (this does not connect)", args: []string{"servers"}},
		{say: "Connecting and showing the server's true state", args: []string{"status", "demo"}},
		{say: "Listing its tools", args: []string{"list", "demo"}},
		{say: "Describing the echo tool", args: []string{"describe", "demo", "echo"}},
		{say: "Calling echo with JSON arguments", args: []string{"call", "demo", "echo", `{"text":"hello from mcpgate"}`}},
		{say: "Calling add, then printing the raw MCP result", args: []string{"call", "demo", "add", `{"a":2,"b":3}`, "--json"}},
		{
			say: "Calling a tool that fails", args: []string{"call", "demo", "fail"}, wantCode: exitFail,
			after: "The tool reported an error, so mcpgate showed its text on stderr and exited with code 1.",
		},
		{
			say: "Calling a tool that asks a question, answering with the form's defaults", args: []string{"call", "demo", "ask", "--elicit", "accept-defaults"},
			after: "On a terminal, mcpgate asks you instead; that is --elicit ask, the default there.",
		},
		{say: "Listing its prompts", args: []string{"prompts", "demo"}},
		{say: "Rendering the greet prompt", args: []string{"prompt", "demo", "greet", "name=Ada"}},
		{say: "Listing its resources", args: []string{"resources", "demo"}},
		{say: "Reading a resource", args: []string{"read", "demo", "fake://readme"}},
	}
	// The steps get no stdin and no terminal: nothing in them may wait for
	// a person, and a question would be declined, not hang. Their stderr is
	// part of the show, so it goes where the story is told.
	streams := &IO{In: strings.NewReader(""), Out: out, ErrOut: out}
	getenv := func(string) string { return "" }
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(out, "\n→ %s:\n  mcpgate %s\n\n", s.say, shellQuote(s.args))
		full := append([]string{"--config", cfgPath, "--data-dir", dataDir}, s.args...)
		if code := run(ctx, full, streams, getenv); code != s.wantCode {
			return fmt.Errorf("demo step %q exited with code %d, want %d", "mcpgate "+shellQuote(s.args), code, s.wantCode)
		}
		if s.after != "" {
			fmt.Fprintf(out, "  (%s)\n", s.after)
		}
	}
	fmt.Fprintln(out, "\n✓ Demo finished. The demo server is stopped and its temporary config removed.")
	fmt.Fprintln(out, "Next: mcpgate add NAME https://… to add a real server; mcpgate --help for every command.")
	return nil
}

// startDemoServer starts the fake server, which panics only when no
// loopback port can be opened; the demo says so instead.
func startDemoServer() (srv *fake.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("starting the demo server on 127.0.0.1: %v", r)
		}
	}()
	return fake.NewServer(nil), nil
}

// shellQuote joins args as a person would type them in a POSIX shell.
func shellQuote(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
		}) < 0 {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
