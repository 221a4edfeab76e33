package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/web"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

type uiOptions struct {
	Addr      string
	NoBrowser bool
}

func newUICmd(app *App) *cobra.Command {
	opts := &uiOptions{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the settings page in your browser",
		Long: strings.TrimSpace(`
Serve a settings page on this machine and open it in your browser: every
server with its state (and what to do when it is not ready), its tools with
a switch for each, sign-in and sign-out, add, import, connect, disconnect
and remove. Changes are saved to the config file and take effect at once.

The page listens on a loopback address only. The address it prints carries a
random token that opens the page once, within 10 minutes (the browser is
started with an address of its own); after that the browser holds a session
cookie no address carries, and other programs and web pages cannot use the
page. For another browser, run mcpgate ui again. It runs until you press
Ctrl-C.`),
		Example: examples(`
  mcpgate ui
  mcpgate ui --addr 127.0.0.1:8765 --no-browser`),
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUI(cmd.Context(), app, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Addr, "addr", "127.0.0.1:0", "loopback `address` to listen on (port 0: any free port)")
	f.BoolVar(&opts.NoBrowser, "no-browser", false, "print the address instead of opening a browser")
	return cmd
}

// uiListenAddr checks --addr: an IP loopback address or localhost, with a
// port. Anything else would put the page on the network.
func uiListenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageErrorf("--addr %q: want 127.0.0.1:PORT", addr)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return "", usageErrorf("--addr %q: the settings page listens on a loopback address only (127.0.0.1 or [::1])", addr)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

func runUI(ctx context.Context, app *App, opts *uiOptions) error {
	app.collect(collectLongLived)
	addr, err := uiListenAddr(opts.Addr)
	if err != nil {
		return err
	}
	// The manager reports state changes from its own goroutines, possibly
	// before the page exists.
	var page atomic.Pointer[web.Server]
	app.onStateChange = func(st manager.Status) {
		if p := page.Load(); p != nil {
			p.StateChanged(st)
		}
	}
	// A server's question during a call made in this process is a card on
	// the page; none can come before the page exists, since nothing calls.
	app.elicit = func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
		if p := page.Load(); p != nil {
			return p.Elicit(ctx, r)
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	app.logger = slog.New(slog.NewTextHandler(app.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	app.refreshCached = true
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
	path, err := app.ConfigPath()
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	// While the page runs, other processes (serve) may leave it questions
	// their host cannot show; the lock tells them someone is here.
	// (A second page on the same data directory finds it held and runs
	// without it: the first already answers for both.)
	lockCtx, cancelLock := context.WithTimeout(ctx, 100*time.Millisecond)
	if unlockUI, err := st.Lock(lockCtx, store.UILockName("")); err == nil {
		defer unlockUI()
	}
	cancelLock()
	srv, err := web.New(&web.Options{
		Manager:   m,
		OAuth:     oc,
		Questions: st,
		Config:    func() (*config.File, error) { return config.Load(path) },
		// What other processes change there appears on the page.
		ConfigPath: path,
		Addr:       ln.Addr().String(),
		Logger:     app.logger,
		// The store's log: what every mcpgate process sent, serve's too.
		Log: func(ctx context.Context, n int) ([]manager.RequestLogEntry, error) {
			entries, err := st.RecentLog(ctx, "", n)
			if err != nil {
				return nil, err
			}
			out := make([]manager.RequestLogEntry, 0, len(entries))
			for _, e := range entries {
				out = append(out, manager.RequestLogEntry{
					Time: e.Time, Server: e.Server, Method: e.Method, Tool: e.Tool, Duration: e.Duration,
					Outcome: e.Outcome, HTTPStatus: e.HTTPStatus, BytesIn: e.BytesIn, BytesOut: e.BytesOut,
				})
			}
			return out, nil
		},
	})
	if err != nil {
		ln.Close()
		return err
	}
	page.Store(srv)

	w := app.IO.ErrOut
	fmt.Fprintf(app.IO.Out, "%s\n", srv.URL())
	fmt.Fprintln(w, "mcpgate settings page: open the address above (it opens the page once, within 10 minutes). Press Ctrl-C to stop.")
	if !opts.NoBrowser {
		// An address of its own: a command line is visible to every user
		// of the machine, and this one is spent once the browser opens it.
		if err := app.browser(srv.URL()); err != nil {
			fmt.Fprintf(w, "mcpgate: could not open a browser (%s); open the address yourself.\n", sanitize(err.Error()))
		}
	}
	m.Start(ctx)
	return srv.Serve(ctx, ln)
}
