package cli

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

type serveOptions struct {
	Direct bool
	HTTP   httpOptions
}

func newServeCmd(app *App) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the gateway to an agent host over stdio, or to many people over HTTP",
		Long: strings.TrimSpace(`
Run an MCP server on stdin and stdout for an agent host (Claude Code,
Claude Desktop, Cursor, VS Code). It exposes one tool, mcp, that finds,
describes and calls the tools of every enabled server on demand, and finds
and uses their prompts and resources; with --direct it exposes every
enabled tool as mcp__SERVER__TOOL instead, with prompts, resources and
resource templates, and tells the host when a catalog changes.

Hosts speaking MCP 2025-06-18, 2025-11-25 and 2026-07-28 are served. A
call's progress and the servers' log messages reach the host; a question a
server asks is shown by a host that can, else on an open mcpgate ui page,
else declined. Changes other processes make to the config (mcpgate tools
disable, the settings page) apply at once.

Nothing but protocol messages is written to stdout; diagnostics go to
stderr. Servers connect when first used (or at start with
connectOnStartup).

With --http ADDR it is instead one gateway for many people: the tenants,
servers and inbound credentials of a deployment file (--deploy, else
$MCPGATE_DEPLOY), state in its PostgreSQL database, served over Streamable
HTTP at /mcp by as many replicas as you run. Every request carries an API
key (mcpgate keys create) or a JWT of the deployment's OIDC issuer; people
sign in to their servers through the gateway's own pages. Every replica
needs the same $MCPGATE_SECRET_KEY. SIGTERM drains: /readyz fails, then the
listener closes after --drain-delay, and calls in flight get up to
--drain-timeout. See docs/deploy.md.`),
		Example: examples(`
  claude mcp add mcpgate -- mcpgate serve
  MCPGATE_SECRET_KEY=... mcpgate serve --http 127.0.0.1:8080 --deploy deploy.json --audit-log -`),
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.HTTP.Addr != "" {
				return runServeHTTP(cmd.Context(), app, opts)
			}
			for _, name := range []string{"deploy", "ops-addr", "drain-delay", "drain-timeout", "audit-log"} {
				if cmd.Flags().Changed(name) {
					return usageErrorf("--%s is for serving over HTTP: add --http ADDR", name)
				}
			}
			return runServe(cmd.Context(), app, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Direct, "direct", false, "expose every enabled tool, prompt and resource instead of the mcp gateway tool")
	f.StringVar(&opts.HTTP.Addr, "http", "", "serve many people over Streamable HTTP on `ADDR` (host:port) instead of one host on stdio")
	f.StringVar(&opts.HTTP.Deploy, "deploy", "", "with --http: the deployment `file` (default $"+config.EnvDeploy+")")
	f.StringVar(&opts.HTTP.OpsAddr, "ops-addr", "", "with --http: also serve /metrics, /healthz and /readyz on `ADDR`, and /metrics only there")
	f.DurationVar(&opts.HTTP.DrainDelay, "drain-delay", 0, "with --http: on SIGTERM, how long /readyz fails before the listener closes")
	f.DurationVar(&opts.HTTP.DrainTimeout, "drain-timeout", 25*time.Second, "with --http: on SIGTERM, how long requests in flight may still run")
	f.StringVar(&opts.HTTP.AuditLog, "audit-log", "", "with --http: append the audit log to `PATH` (created 0600), or - for stderr")
	return cmd
}

func runServe(ctx context.Context, app *App, opts *serveOptions) error {
	var front *serve.Front
	app.elicit = func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
		return front.Elicit(ctx, r)
	}
	app.onStateChange = func(st manager.Status) {
		if front != nil {
			front.StateChanged(st)
		}
	}
	//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
	app.onLog = func(server string, msg *mcp.LoggingMessageParams) {
		if front != nil {
			front.Log(server, msg)
		}
	}
	app.logger = slog.New(slog.NewTextHandler(app.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	app.refreshCached = true
	app.collect(collectLongLived)
	m, err := app.Manager()
	if err != nil {
		return err
	}
	oc, err := app.OAuth()
	if err != nil {
		return err
	}
	st, err := app.Store()
	if err != nil {
		return err
	}
	questions := &serve.StoredQuestions{Store: st}
	logins := &serve.Logins{OAuth: oc, Open: app.browser}
	defer logins.Close()
	gopts := &gateway.Options{Manager: m, Auth: logins}
	front = serve.New(&serve.Options{
		Gateway:   gateway.New(gopts),
		Bridge:    gateway.NewBridge(gopts),
		Direct:    opts.Direct,
		Version:   Version(),
		Logger:    app.logger,
		Questions: questions.Ask,
		Burst:     app.oneProcessor(),
	})
	path, err := app.ConfigPath()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Another process may change the config while this one serves (mcpgate
	// tools disable, the settings page): follow it, so a tool switched off
	// there is refused here and leaves the host's list.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		err := serve.WatchConfig(ctx, path, app.logger, func(servers []mcpgate.ServerConfig) {
			if err := m.Update(ctx, servers); err != nil {
				app.logger.Warn("the changed config was not applied", "error", mcpgate.Sanitize(err.Error(), 300))
				return
			}
			front.ConfigChanged()
		})
		if err != nil {
			app.logger.Warn("config changes made by other processes will not be seen until restart", "error", mcpgate.Sanitize(err.Error(), 300))
		}
	}()
	defer func() { cancel(); <-watched }()
	m.Start(ctx)
	in, out := app.IO.In, app.IO.Out
	if app.ownsProcess {
		// The process's own stdin and stdout: read and written on the
		// runtime's poller when they are pipes (pollable).
		pin, doneIn := pollable(in)
		defer doneIn()
		pout, doneOut := pollable(out)
		defer doneOut()
		in, out = pin.(io.Reader), pout.(io.Writer)
	}
	return front.Run(ctx, serve.StdioTransport(in, out))
}
