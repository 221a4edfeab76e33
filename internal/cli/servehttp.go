package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/serve/hosted"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/mcpgate/mcpgate/store/postgres"
	"github.com/mcpgate/mcpgate/store/seal"
)

// httpOptions are serve's flags for serving many people over HTTP.
type httpOptions struct {
	Addr         string        // --http
	Deploy       string        // --deploy
	OpsAddr      string        // --ops-addr
	DrainDelay   time.Duration // --drain-delay
	DrainTimeout time.Duration // --drain-timeout
	AuditLog     string        // --audit-log
}

// runServeHTTP is `mcpgate serve --http ADDR`: the deployment's tenants
// served over Streamable HTTP from this replica until ctx ends (SIGTERM),
// then drained.
func runServeHTTP(ctx context.Context, app *App, opts *serveOptions) error {
	app.collect(collectShared)
	h := &opts.HTTP
	d, err := loadDeployment(app, h.Deploy)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(app.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sealer, err := seal.FromEnv(app.Getenv)
	if err != nil {
		return &UsageError{Err: err}
	}
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		return mcpgate.Errorf(mcpgate.CategoryInvalid, "--http %s: %w", h.Addr, err)
	}
	defer ln.Close()
	var opsLn net.Listener
	if h.OpsAddr != "" {
		if opsLn, err = net.Listen("tcp", h.OpsAddr); err != nil {
			return mcpgate.Errorf(mcpgate.CategoryInvalid, "--ops-addr %s: %w", h.OpsAddr, err)
		}
		defer opsLn.Close()
	}

	st, err := postgres.Open(ctx, d.Database, sealer, nil)
	if err != nil {
		return err // never holds the connection string's password
	}
	defer st.Close()

	metrics := ops.NewMetrics(&ops.MetricsOptions{Version: Version(), Who: hosted.Who})
	metrics.SetDeployment(d)
	tracing, err := ops.NewTracing(&ops.TracingOptions{ServiceVersion: Version(), Who: hosted.Who})
	if err != nil {
		return &UsageError{Err: err}
	}
	defer shutdown(tracing.Shutdown)
	audit, err := openAudit(h.AuditLog, app, metrics, logger)
	if err != nil {
		return err
	}
	defer shutdown(audit.Close)
	limits := ops.NewLimiter(&ops.LimiterOptions{Tenants: ops.DeploymentLimits(d), Who: hosted.Who, Metrics: metrics, Audit: audit})
	health := ops.NewHealth(&ops.HealthOptions{Ready: st.Ping, Logger: logger})

	network, err := netpolicy.New(&netpolicy.Options{
		Getenv: app.Getenv,
		Strict: true,
		Allow:  allowed(d),
		OnRefused: func(ctx context.Context, e *netpolicy.RefusedError) {
			tenant, user := hosted.Who(ctx)
			audit.Record(ops.AuditEntry{Event: ops.EventPolicyRefused, Tenant: tenant, User: user, Server: e.Server,
				Reason: ops.ReasonNetwork, Target: e.Host, TraceID: ops.TraceID(ctx)})
		},
	})
	if err != nil {
		return mcpgate.Errorf(mcpgate.CategoryInvalid, "setting up the network: %w", err)
	}
	defer network.CloseIdleConnections()
	auth, err := inbound.New(&inbound.Options{Deployment: d, Keys: st.Keys(), Audit: audit.Inbound})
	if err != nil {
		return err
	}
	defer auth.Close()

	g, err := hosted.New(&hosted.Options{
		Deployment: d, Store: st, Auth: auth, Network: network, Getenv: app.Getenv,
		Direct: opts.Direct, Version: Version(), Logger: logger,
		Metrics: metrics, Tracing: tracing, Audit: audit, Limiter: limits, Health: health,
	})
	if err != nil {
		return err
	}
	defer g.Close()

	mux := http.NewServeMux()
	mux.Handle("/", g.Handler())
	if opsLn == nil {
		mux.Handle("/metrics", metrics.Handler()) // refuse it at the proxy
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	drain := &ops.DrainOptions{Health: health, Delay: h.DrainDelay, Timeout: h.DrainTimeout, Logger: logger}

	opsDone := make(chan error, 1)
	if opsLn != nil {
		opsMux := http.NewServeMux()
		opsMux.Handle("/metrics", metrics.Handler())
		opsMux.Handle("/healthz", health.Healthz())
		opsMux.Handle("/readyz", health.Readyz())
		opsSrv := &http.Server{Handler: opsMux, ReadHeaderTimeout: 10 * time.Second}
		go func() { opsDone <- opsSrv.Serve(opsLn) }()
		defer func() { opsSrv.Close(); <-opsDone }()
	}
	tenants := "tenants"
	if len(d.TenantIDs()) == 1 {
		tenants = "tenant"
	}
	fmt.Fprintf(app.IO.ErrOut, "mcpgate: serving %d %s at %s; listening on %s\n", len(d.TenantIDs()), tenants, d.PublicURL, ln.Addr())
	if opsLn != nil {
		fmt.Fprintf(app.IO.ErrOut, "mcpgate: metrics and probes on %s\n", opsLn.Addr())
	}
	stopDraining := context.AfterFunc(ctx, func() {
		fmt.Fprintf(app.IO.ErrOut, "mcpgate: stopping: /readyz fails now; requests in flight have %v to finish\n", h.DrainDelay+h.DrainTimeout)
	})
	defer stopDraining()
	err = ops.Serve(ctx, srv, ln, drain)
	switch {
	case errors.Is(err, ops.ErrDrainTimeout):
		fmt.Fprintln(app.IO.ErrOut, "mcpgate: the drain timed out; the requests still running were cut")
		return nil
	case err == nil:
		fmt.Fprintln(app.IO.ErrOut, "mcpgate: drained and stopped")
	}
	return err
}

// allowed is what the strict network policy lets servers reach beyond
// public addresses.
func allowed(d *config.Deployment) []netip.Prefix {
	allow := slices.Clone(d.Network.Allow)
	if d.Network.AllowPrivate {
		allow = append(allow, netpolicy.PrivateRanges()...)
	}
	return allow
}

// openAudit opens the audit log --audit-log names: a file, "-" for
// stderr, "" for none (a nil *ops.Audit records nothing).
func openAudit(path string, app *App, metrics *ops.Metrics, logger *slog.Logger) (*ops.Audit, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		return ops.NewAudit(ops.NewJSONLines(app.IO.ErrOut), &ops.AuditOptions{Metrics: metrics, Logger: logger}), nil
	}
	sink, err := ops.OpenJSONLines(path)
	if err != nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "--audit-log: %w", err)
	}
	return ops.NewAudit(sink, &ops.AuditOptions{Metrics: metrics, Logger: logger}), nil
}

// shutdown runs a closer with a bounded context, after serving ended.
func shutdown(f func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f(ctx) // nothing more to do at exit
}
