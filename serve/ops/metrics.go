package ops

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Label values that stand for more than one ID. Server IDs cannot start
// with "_" (see [mcpgate.ValidateID]), so neither collides with one.
const (
	// LabelOther is the tenant or server label of every ID the deployment
	// does not name: labels only ever carry IDs the operator wrote, never
	// what a caller sent, so a caller cannot make the series grow.
	LabelOther = "_other"
	// LabelNone is the tenant label of work without a tenant (a
	// single-user gateway).
	LabelNone = "_none"
)

// Outcomes of a tool call besides an error category (see
// [mcpgate.Category]).
const (
	OutcomeOK = "ok"
	// OutcomeToolError is a call the server answered with isError: the
	// tool ran and failed, the connection did not.
	OutcomeToolError = "tool_error"
)

// DefaultBuckets are the latency histogram buckets, in seconds: remote
// tool calls take from milliseconds to the 60 s default timeout and more.
var DefaultBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// MetricsOptions configure [NewMetrics]; the struct is copied.
type MetricsOptions struct {
	// Tenants and Servers are the IDs the deployment names; any other
	// value is counted as [LabelOther]. See [Metrics.SetKnown].
	Tenants []string
	Servers []string
	// Version is reported in mcpgate_build_info.
	Version string
	// Buckets are the latency histograms' upper bounds in seconds; nil
	// means [DefaultBuckets].
	Buckets []float64
	// Who attributes tool calls to tenants; nil counts every call as
	// [LabelNone].
	Who Who
}

// Metrics holds mcpgate's Prometheus metrics on a registry of its own (not
// the global one, so two gateways in one process or test never share a
// series). Every method is safe for concurrent use, and every recording
// method does nothing on a nil *Metrics, so a front without metrics passes
// nil.
//
// The series and their labels:
//
//	mcpgate_calls_total{tenant,server,outcome}          tool calls; outcome ok, tool_error or an error category
//	mcpgate_call_duration_seconds{server}               tool call latency (histogram)
//	mcpgate_upstream_requests_total{server,method,outcome} HTTP requests to remote servers, from the request log
//	mcpgate_upstream_request_duration_seconds{server}   their latency (histogram)
//	mcpgate_token_refreshes_total{tenant,server,outcome} OAuth refreshes
//	mcpgate_upstream_sessions_active{server}            live sessions (connection state in 2026-07-28)
//	mcpgate_upstream_streams_active{server}             open event streams to remote servers
//	mcpgate_http_requests_total{handler,code}           inbound requests by status
//	mcpgate_http_request_duration_seconds{handler}      their latency, event streams left out (histogram)
//	mcpgate_http_requests_in_flight{handler}            inbound requests being served
//	mcpgate_http_streams_active{handler}                inbound event streams open
//	mcpgate_rate_limited_total{tenant,limit}            requests refused with 429; limit rate or concurrency
//	mcpgate_audit_dropped_total                         audit entries lost to a full queue
//	mcpgate_audit_write_errors_total                    audit batches the sink failed to write
//	mcpgate_build_info{version,goversion}               1
//
// plus the Go runtime's go_* and the process's process_* series. Error
// categories are the outcome label's values, so errors by category are
// mcpgate_calls_total{outcome!~"ok|tool_error"} (and likewise for the
// upstream requests). The handler label is what the front names its
// routes, a tool's name is never a label, and every label set is bounded
// by the deployment file.
type Metrics struct {
	reg   *prometheus.Registry
	who   Who
	known atomic.Pointer[knownIDs]

	calls, upstream, refreshes, inbound, limited *prometheus.CounterVec
	callSeconds, upstreamSeconds, inboundSeconds *prometheus.HistogramVec
	sessions, streams, inFlight, inboundStreams  *prometheus.GaugeVec
	auditDropped, auditFailed                    prometheus.Counter
}

type knownIDs struct{ tenants, servers map[string]bool }

// NewMetrics registers mcpgate's metrics on a new registry.
func NewMetrics(opts *MetricsOptions) *Metrics {
	var o MetricsOptions
	if opts != nil {
		o = *opts
	}
	buckets := o.Buckets
	if len(buckets) == 0 {
		buckets = DefaultBuckets
	}
	m := &Metrics{reg: prometheus.NewRegistry(), who: o.Who}
	m.SetKnown(o.Tenants, o.Servers)
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mcpgate", Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "mcpgate", Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(h)
		return h
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "mcpgate", Name: name, Help: help}, labels)
		m.reg.MustRegister(g)
		return g
	}
	m.calls = counter("calls_total", "Tool calls by tenant, server and outcome: ok, tool_error (the tool answered isError) or the error category.", "tenant", "server", "outcome")
	m.callSeconds = histogram("call_duration_seconds", "Tool call latency by server, from the call's start to its result or error.", "server")
	m.upstream = counter("upstream_requests_total", "HTTP requests sent to remote servers by server, JSON-RPC method and outcome (ok or the error category).", "server", "method", "outcome")
	m.upstreamSeconds = histogram("upstream_request_duration_seconds", "Latency of HTTP requests to remote servers, until the response ended.", "server")
	m.refreshes = counter("token_refreshes_total", "OAuth token refreshes by tenant, server and outcome.", "tenant", "server", "outcome")
	m.sessions = gauge("upstream_sessions_active", "Live sessions with remote servers (the negotiated connection in 2026-07-28).", "server")
	m.streams = gauge("upstream_streams_active", "Event streams open to remote servers (standalone GET or subscriptions/listen).", "server")
	m.inbound = counter("http_requests_total", "Inbound HTTP requests by handler and status code.", "handler", "code")
	m.inboundSeconds = histogram("http_request_duration_seconds", "Inbound HTTP request latency by handler; event streams are left out.", "handler")
	m.inFlight = gauge("http_requests_in_flight", "Inbound HTTP requests being served.", "handler")
	m.inboundStreams = gauge("http_streams_active", "Inbound event streams open to agent hosts.", "handler")
	m.limited = counter("rate_limited_total", "Requests refused with 429 by tenant and limit (rate or concurrency).", "tenant", "limit")
	m.auditDropped = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mcpgate", Name: "audit_dropped_total", Help: "Audit entries dropped because the audit queue was full."})
	m.auditFailed = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mcpgate", Name: "audit_write_errors_total", Help: "Audit batches the audit sink failed to write."})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "mcpgate", Name: "build_info", Help: "Always 1; the labels say what is running."}, []string{"version", "goversion"})
	build.WithLabelValues(o.Version, runtime.Version()).Set(1)
	m.reg.MustRegister(m.auditDropped, m.auditFailed, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetKnown replaces the tenant and server IDs that may appear as labels,
// after the deployment file changed. Series already recorded stay.
func (m *Metrics) SetKnown(tenants, servers []string) {
	if m == nil {
		return
	}
	k := &knownIDs{tenants: make(map[string]bool, len(tenants)), servers: make(map[string]bool, len(servers))}
	for _, t := range tenants {
		k.tenants[t] = true
	}
	for _, s := range servers {
		k.servers[s] = true
	}
	m.known.Store(k)
}

// SetDeployment makes the tenants of d and their servers the known label
// values: [Metrics.SetKnown] for a deployment file, at start and after it
// changed.
func (m *Metrics) SetDeployment(d *config.Deployment) {
	var servers []string
	for _, id := range d.TenantIDs() {
		if t, ok := d.Tenant(id); ok {
			for _, s := range t.Servers {
				servers = append(servers, s.ID)
			}
		}
	}
	m.SetKnown(d.TenantIDs(), servers)
}

// Registry is the registry the metrics are on, for collectors of other
// parts (a database pool's statistics) and for tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format, for
// /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError})
}

func (m *Metrics) tenantLabel(id string) string {
	switch {
	case id == "":
		return LabelNone
	case m.known.Load().tenants[id]:
		return id
	}
	return LabelOther
}

func (m *Metrics) serverLabel(id string) string {
	switch {
	case id == "":
		return LabelNone
	case m.known.Load().servers[id]:
		return id
	}
	return LabelOther
}

// CallEnded records one tool call as the manager saw it end: its outcome
// under the tenant [MetricsOptions.Who] finds in ctx, and its latency. It
// has the shape of the manager hook that reports calls (see the package
// documentation). The tool's name is not recorded: it is the remote
// server's to choose.
func (m *Metrics) CallEnded(ctx context.Context, server, tool string, elapsed time.Duration, res *mcp.CallToolResult, err error) {
	if m == nil {
		return
	}
	tenant, _ := m.who.of(ctx)
	srv := m.serverLabel(server)
	m.calls.WithLabelValues(m.tenantLabel(tenant), srv, callOutcome(res, err)).Inc()
	m.callSeconds.WithLabelValues(srv).Observe(elapsed.Seconds())
}

// callOutcome is a call's outcome label.
func callOutcome(res *mcp.CallToolResult, err error) string {
	switch {
	case err != nil:
		return outcomeLabel(string(mcpgate.CategoryOf(err)))
	case res != nil && res.IsError:
		return OutcomeToolError
	}
	return OutcomeOK
}

// outcomes are the values an outcome label may take; anything else is
// "other".
var outcomes = map[string]bool{
	OutcomeOK: true, OutcomeToolError: true,
	string(mcpgate.CategoryInvalid): true, string(mcpgate.CategoryNotFound): true, string(mcpgate.CategoryDisabled): true,
	string(mcpgate.CategoryAuth): true, string(mcpgate.CategoryNetwork): true, string(mcpgate.CategoryHTTP): true,
	string(mcpgate.CategoryProtocol): true, string(mcpgate.CategoryRemote): true, string(mcpgate.CategoryTimeout): true,
	string(mcpgate.CategoryCancelled): true, string(mcpgate.CategoryUnsupported): true, string(mcpgate.CategoryConflict): true,
	string(mcpgate.CategoryInternal): true,
}

func outcomeLabel(s string) string {
	if outcomes[s] {
		return s
	}
	return "other"
}

// methods are the method label's values: the MCP methods a session sends,
// "response" (an answer to the server's own request) and the HTTP methods
// the request log names when there is no JSON-RPC message. A server never
// chooses a method, but the set is closed anyway.
var methods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "subscriptions/listen": true,
	"tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"completion/complete": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"response": true, http.MethodDelete: true, http.MethodGet: true,
}

func methodLabel(s string) string {
	if methods[s] {
		return s
	}
	return "other"
}

// RequestLogged records one HTTP request to a remote server from the
// manager's request log: pass it as (or call it from)
// manager.Options.RequestLog. It never blocks.
func (m *Metrics) RequestLogged(e manager.RequestLogEntry) {
	if m == nil {
		return
	}
	srv := m.serverLabel(e.Server)
	m.upstream.WithLabelValues(srv, methodLabel(e.Method), outcomeLabel(e.Outcome)).Inc()
	m.upstreamSeconds.WithLabelValues(srv).Observe(e.Duration.Seconds())
}

// Refresh outcomes, for [Metrics.Refreshed].
const (
	RefreshOK = "ok"
	// RefreshShared: another process or replica had refreshed while this
	// one waited for the credential's lock; nothing was sent.
	RefreshShared = "shared"
	// RefreshInvalidGrant: the authorization server refused the refresh
	// token; the credential was cleared and the server needs a sign-in.
	RefreshInvalidGrant = "invalid_grant"
	// RefreshFailed: any other failure (network, the authorization
	// server's error, no refresh token).
	RefreshFailed = "failed"
)

// Refreshed records one token refresh of tenant's credential for server;
// outcome is one of the Refresh constants (anything else counts as
// failed). It has the shape of the oauth client hook that reports
// refreshes (see the package documentation).
func (m *Metrics) Refreshed(tenant, server, outcome string) {
	if m == nil {
		return
	}
	switch outcome {
	case RefreshOK, RefreshShared, RefreshInvalidGrant:
	default:
		outcome = RefreshFailed
	}
	m.refreshes.WithLabelValues(m.tenantLabel(tenant), m.serverLabel(server), outcome).Inc()
}

// EventStream records that an event stream to server opened (open) or
// ended. Every open must be followed by exactly one end. It has the shape
// of the manager hook that reports event streams.
func (m *Metrics) EventStream(server string, open bool) {
	if m == nil {
		return
	}
	g := m.streams.WithLabelValues(m.serverLabel(server))
	if open {
		g.Inc()
	} else {
		g.Dec()
	}
}

// rateLimited records one 429.
func (m *Metrics) rateLimited(tenant, limit string) {
	if m == nil {
		return
	}
	m.limited.WithLabelValues(m.tenantLabel(tenant), limit).Inc()
}

func (m *Metrics) auditDrop() {
	if m != nil {
		m.auditDropped.Inc()
	}
}

func (m *Metrics) auditFailure() {
	if m != nil {
		m.auditFailed.Inc()
	}
}

// Wrap counts the requests next serves under the handler label name (a
// route name the front chooses, such as "mcp" or "callback"; never a
// path a caller sent): by status, their latency (event streams are
// counted as open streams instead), and those in flight.
func (m *Metrics) Wrap(name string, next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	inFlight, streams := m.inFlight.WithLabelValues(name), m.inboundStreams.WithLabelValues(name)
	seconds := m.inboundSeconds.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		inFlight.Inc()
		defer inFlight.Dec()
		stream := false
		rec := wrapWriter(w, func(_ int, h http.Header) {
			if isEventStream(h) {
				stream = true
				streams.Inc()
			}
		})
		defer func() {
			if stream {
				streams.Dec()
			} else {
				seconds.Observe(time.Since(start).Seconds())
			}
			m.inbound.WithLabelValues(name, codeLabel(rec.status())).Inc()
		}()
		next.ServeHTTP(rec, r)
	})
}

func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// Sessions returns a tracker that counts one manager's live sessions in
// mcpgate_upstream_sessions_active, from the statuses the manager reports:
// call its StateChanged from manager.Options.OnStateChange, and Close it
// after the manager is closed. A manager per tenant gets a tracker each.
func (m *Metrics) Sessions() *Sessions {
	return &Sessions{m: m, live: make(map[string]string)}
}

// Sessions counts one manager's live sessions; see [Metrics.Sessions].
type Sessions struct {
	m    *Metrics
	mu   sync.Mutex
	live map[string]string // server ID → its label, while it has a live session
}

// StateChanged notes a server's status: a status with a connection ID has
// a live session, one without has none. Replacing a session (a new
// connection ID) does not change the count.
func (s *Sessions) StateChanged(st manager.Status) {
	if s == nil || s.m == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	label, was := s.live[st.ID]
	switch now := st.ConnectionID != 0; {
	case now && !was:
		label = s.m.serverLabel(st.ID)
		s.live[st.ID] = label
		s.m.sessions.WithLabelValues(label).Inc()
	case !now && was:
		delete(s.live, st.ID)
		s.m.sessions.WithLabelValues(label).Dec()
	}
}

// Close takes the manager's sessions that are still counted off the gauge.
func (s *Sessions) Close() {
	if s == nil || s.m == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, label := range s.live {
		s.m.sessions.WithLabelValues(label).Dec()
		delete(s.live, id)
	}
}
