// Package ops holds what it takes to operate the gateway when many people
// share it (`mcpgate serve --http`): Prometheus metrics, OpenTelemetry
// traces, per-tenant limits, an audit log, health probes and a graceful
// drain. The HTTP front plugs these in; the manager and the oauth client
// report to them through hooks that carry only plain values, so nothing
// below the front imports this package and data still flows one way.
//
// It sits under serve/ because only fronts use it, and is importable so a
// Go program that builds its own front on [serve] can operate it the same
// way.
//
// # Wiring an HTTP front
//
// One of each, for the process:
//
//	who := func(ctx context.Context) (tenant, user string) { ... } // the inbound.Principal the front put in ctx
//	metrics := ops.NewMetrics(&ops.MetricsOptions{Version: version, Who: who})
//	metrics.SetDeployment(deployment) // again when the file changes
//	tracing, err := ops.NewTracing(&ops.TracingOptions{ServiceVersion: version, Who: who}) // OTEL_* env
//	defer tracing.Shutdown(ctx)
//	audit := ops.NewAudit(sink, &ops.AuditOptions{Metrics: metrics}) // ops.OpenJSONLines(path) or ops.NewJSONLines(os.Stderr)
//	defer audit.Close(ctx)
//	limits := ops.NewLimiter(&ops.LimiterOptions{Tenants: ops.DeploymentLimits(deployment), Who: who, Metrics: metrics, Audit: audit})
//	auth, err := inbound.New(&inbound.Options{Deployment: deployment, Keys: keys, Audit: audit.Inbound})
//	health := ops.NewHealth(&ops.HealthOptions{Ready: pool.Ping})
//
// The routes, outermost first (tracing, then metrics, then inbound
// authentication, then the limits):
//
//	mux.Handle("/mcp", tracing.Wrap("/mcp", metrics.Wrap("mcp", authenticate(limits.Wrap(front)))))
//	mux.Handle("/metrics", metrics.Handler()) // keep it off the public listener or behind the proxy
//	mux.Handle("/healthz", health.Healthz())
//	mux.Handle("/readyz", health.Readyz())
//	mcpServer.AddReceivingMiddleware(tracing.ServerMiddleware())
//
// and serving, with a drain on SIGTERM:
//
//	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
//	defer stop()
//	err = ops.Serve(ctx, srv, ln, &ops.DrainOptions{Health: health, Timeout: 25 * time.Second})
//
// Handlers of long-lived event streams end them when [Health.Draining] is
// closed, so hosts reconnect to a replica that stays.
//
// # Hooks
//
// What the manager and the oauth client report, and where it goes:
//
//	inbound.Options.Audit         → Audit.Inbound (exists today)
//	manager.Options.RequestLog    → Metrics.RequestLogged (exists today)
//	manager.Options.OnStateChange → Metrics.Sessions().StateChanged (exists today; one tracker per manager)
//	manager.Options.ClientMiddleware func(server string) mcp.Middleware → Tracing.ClientMiddleware (to add)
//	manager.Options.OnCallEnd func(ctx, server, tool string, elapsed time.Duration, res *mcp.CallToolResult, err error) → Metrics.CallEnded (to add)
//	manager.Options.OnEventStream func(server string, open bool) → Metrics.EventStream (to add)
//	oauth.Options.OnRefresh func(tenant, server, outcome string) → Metrics.Refreshed (to add)
//	netpolicy refusals → Audit.Record with EventPolicyRefused, Reason "network" (to add)
//
// ClientMiddleware is where the trace context reaches remote servers: it
// makes a client span per MCP request and writes the span's traceparent
// (with tracestate and baggage when present) into the request's _meta, as
// MCP 2026-07-28 reserves those keys for.
//
// # What never leaves
//
// Metric labels are IDs from the deployment file or closed sets (methods,
// outcomes, status codes); anything else is [LabelOther]. Spans carry
// names and IDs, never arguments, results, URIs, error text or headers.
// Audit entries have no field for a token, key or free text, and
// [Audit.Record] redacts identifiers shaped like credentials.
package ops
