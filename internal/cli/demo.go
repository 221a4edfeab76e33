package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/store/seal"
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
and one that asks a question), prompts and resources. Then sign in to a
second server protected by OAuth (auth), call it, and sign out (logout).

The demo uses a temporary config and data directory, removed at the end; it
never reads or changes your own config or credentials, never uses your OS
keyring, and never opens a browser: it visits the sign-in page itself.`),
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

	servers, err := startDemoServers()
	if err != nil {
		return err
	}
	defer servers.close()
	srv, secure := servers.open, servers.secure
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
	fmt.Fprintf(out, "mcpgate demo: a small MCP server is running at %s, and one that needs a\n", srv.URL)
	fmt.Fprintf(out, "sign-in at %s with its authorization server at %s\n(all on this machine only).\n", secure.URL, servers.auth.Issuer)
	fmt.Fprintf(out, "Each step below runs a real mcpgate command against them, with a temporary\nconfig and data directory in %s. Your own config and credentials are not\nread or changed.\n", dir)

	const echoArgs = `{"text":"hello from mcpgate"}`
	steps := []demoStep{
		{say: `Adding the demo server as "demo"`, args: []string{"add", "demo", srv.URL, "--auth", "none"}},
		{say: "Listing the configured servers (this does not connect)", args: []string{"servers"}},
		{say: "Connecting and showing the server's true state", args: []string{"status", "demo"}},
		{say: "Listing its tools", args: []string{"list", "demo"}},
		{say: "Describing the echo tool", args: []string{"describe", "demo", "echo"}},
		{say: "Calling echo with JSON arguments", args: []string{"call", "demo", "echo", echoArgs}},
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
		{say: `Adding the server that needs a sign-in as "secure" (OAuth)`, args: []string{"add", "secure", secure.URL, "--auth", "oauth"}},
		{
			say: "Calling it before signing in", args: []string{"call", "secure", "echo", echoArgs}, wantCode: exitAuth,
			after: "Not signed in yet: mcpgate exited with code 4 (authorization needed) and said how to sign in.",
		},
		{
			say:   "Signing in. In real use your browser opens the URL below and you sign in there;\n  here the demo visits it for you, and the demo's authorization server approves at once",
			args:  []string{"auth", "secure"},
			after: "The browser came back to mcpgate on 127.0.0.1; the tokens are stored sealed in the data directory, never printed.",
		},
		{say: "Calling echo on secure, signed in", args: []string{"call", "secure", "echo", echoArgs}},
		{say: "Showing every server's state and where credentials are kept", args: []string{"status"}},
		{say: "Signing out: the credential is deleted and its tokens revoked", args: []string{"logout", "secure"}},
	}
	// The steps get no stdin and no terminal: nothing in them may wait for
	// a person, and a question would be declined, not hang. Their stderr is
	// part of the show, so it goes where the story is told. The key that
	// seals credentials goes to a key file in the temporary data directory,
	// never to the person's keyring, and no real browser is opened.
	streams := &IO{In: strings.NewReader(""), Out: out, ErrOut: out}
	getenv := func(k string) string {
		if k == seal.EnvKeyring {
			return "off"
		}
		return ""
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(out, "\n→ %s:\n  mcpgate %s\n\n", s.say, shellQuote(s.args))
		full := append([]string{"--config", cfgPath, "--data-dir", dataDir}, s.args...)
		step := &App{IO: streams, Getenv: getenv, openBrowser: visitLoopback(ctx)}
		if code := runApp(ctx, step, full); code != s.wantCode {
			return fmt.Errorf("demo step %q exited with code %d, want %d", "mcpgate "+shellQuote(s.args), code, s.wantCode)
		}
		if s.after != "" {
			fmt.Fprintf(out, "  (%s)\n", s.after)
		}
	}
	fmt.Fprintln(out, "\n✓ Demo finished. The demo servers are stopped and the temporary config, data and key removed.")
	fmt.Fprintln(out, "Next: mcpgate add NAME https://… to add a real server; mcpgate --help for every command.")
	return nil
}

// demoServers are what the demo runs against: an open server, and a
// protected one with its authorization server.
type demoServers struct {
	open, secure *fake.Server
	auth         *fake.AuthServer
}

func (d *demoServers) close() {
	for _, s := range []*fake.Server{d.open, d.secure} {
		if s != nil {
			s.Close()
		}
	}
	if d.auth != nil {
		d.auth.Close()
	}
}

// startDemoServers starts the fake servers, which panic only when no
// loopback port can be opened; the demo says so instead.
func startDemoServers() (d *demoServers, err error) {
	d = &demoServers{}
	defer func() {
		if r := recover(); r != nil {
			d.close()
			d, err = nil, fmt.Errorf("starting the demo servers on 127.0.0.1: %v", r)
		}
	}()
	d.open = fake.NewServer(nil)
	d.auth = fake.NewAuth(nil)
	d.secure = fake.NewServer(&fake.Options{Auth: d.auth})
	return d, nil
}

// visitLoopback stands in for the person's browser in the demo: it GETs
// the sign-in URL and follows redirects while they stay on loopback http,
// so the authorization server's redirect reaches mcpgate's callback, as a
// person's click would. It refuses anything else.
func visitLoopback(ctx context.Context) func(string) error {
	return func(raw string) error {
		loopback := func(u *url.URL) bool { return u.Scheme == "http" && mcpgate.IsLoopbackHost(u.Hostname()) }
		u, err := url.Parse(raw)
		if err != nil || !loopback(u) {
			return errors.New("the demo visits only http URLs on this machine")
		}
		client := &http.Client{
			Transport: &http.Transport{DisableKeepAlives: true},
			Timeout:   10 * time.Second,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 10 || !loopback(req.URL) {
					return errors.New("the demo follows redirects only on this machine")
				}
				return nil
			},
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("visiting the sign-in page: %w", err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode >= 400 {
			return fmt.Errorf("visiting the sign-in page: HTTP %d", resp.StatusCode)
		}
		return nil
	}
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
