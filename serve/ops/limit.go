package ops

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"golang.org/x/time/rate"
)

// burst is how many requests a tenant may send at once after a quiet
// spell: a sixth of its requests per minute (ten seconds' worth), at
// least one. The bucket refills at the per-minute rate, evenly.
func burst(l config.Limits) int {
	return max(1, l.RequestsPerMinute/6)
}

// DeploymentLimits are the limits of every tenant of d, for
// [LimiterOptions.Tenants] and [Limiter.Update].
func DeploymentLimits(d *config.Deployment) map[string]config.Limits {
	out := make(map[string]config.Limits)
	for _, id := range d.TenantIDs() {
		if t, ok := d.Tenant(id); ok {
			out[id] = t.Limits
		}
	}
	return out
}

// The limits a request can be refused under, as they appear in
// [LimitError.Limit], the audit log and mcpgate_rate_limited_total.
const (
	LimitRate        = "rate"
	LimitConcurrency = "concurrency"
)

// CodeLimited is the JSON-RPC error code of a 429's body: an
// implementation-defined server error (MCP reserves -32020 to -32029 for
// its own).
const CodeLimited = -32000

// LimitError is a request refused by a tenant's limits. It is an
// http.Handler that writes the refusal: 429 Too Many Requests with
// Retry-After and a short JSON-RPC error the host can show.
type LimitError struct {
	Tenant string
	// Limit is LimitRate or LimitConcurrency.
	Limit string
	// Max is the limit's value: requests a minute, or calls at once.
	Max int
	// RetryAfter is when trying again can succeed (whole seconds, at
	// least one).
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	if e.Limit == LimitConcurrency {
		return fmt.Sprintf("too many requests at once: this tenant may have %d in flight; try again in %d s", e.Max, e.retrySeconds())
	}
	return fmt.Sprintf("too many requests: this tenant may send %d a minute; try again in %d s", e.Max, e.retrySeconds())
}

func (e *LimitError) retrySeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// ServeHTTP writes the refusal.
func (e *LimitError) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil, // the body was not read, so its ID is unknown
		"error": map[string]any{
			"code":    CodeLimited,
			"message": e.Error(),
			"data":    map[string]any{"limit": e.Limit, "retryAfterSeconds": e.retrySeconds()},
		},
	})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", strconv.Itoa(e.retrySeconds()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(append(body, '\n'))
}

// LimiterOptions configure [NewLimiter]; the struct is copied.
type LimiterOptions struct {
	// Tenants are the limits of each tenant the deployment names (see
	// [DeploymentLimits]); a zero field is no limit of that kind. Only
	// these get limiters of their own, so memory is bounded by the
	// deployment, not by callers.
	Tenants map[string]config.Limits
	// Other is shared by every request whose tenant is not in Tenants,
	// together (one bucket, one set of slots); zero means no limit.
	// Inbound authentication refuses such tenants, so this is a net.
	Other config.Limits
	// Who finds a request's tenant and user (after inbound
	// authentication) for [Limiter.Wrap].
	Who Who
	// Concurrent says which requests take a concurrency slot in
	// [Limiter.Wrap]; nil means POST requests (the JSON-RPC requests),
	// not the GET event streams, which stay open for as long as the host
	// listens.
	Concurrent func(*http.Request) bool
	// Metrics counts refusals; nil does not.
	Metrics *Metrics
	// Audit records refusals (at most one entry per tenant and limit a
	// second, with the count since the last); nil does not.
	Audit *Audit
}

// Limiter enforces per-tenant request rates (a token bucket each, whose
// burst is ten seconds' worth) and concurrency caps (a counting semaphore
// each). It never waits: a request over a limit is refused at once with
// when to try again. Its state is this process's: replicas limit each on
// their own. Safe for concurrent use.
type Limiter struct {
	who        Who
	concurrent func(*http.Request) bool
	metrics    *Metrics
	audit      *Audit
	now        func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantLimit
	other   *tenantLimit
}

// tenantLimit is one tenant's state (or the shared state of the others).
type tenantLimit struct {
	name  string
	rate  *rate.Limiter // nil: no rate limit
	rpm   int
	slots *slots // nil: no concurrency cap
}

// NewLimiter returns a limiter for opts' tenants.
func NewLimiter(opts *LimiterOptions) *Limiter {
	var o LimiterOptions
	if opts != nil {
		o = *opts
	}
	if o.Concurrent == nil {
		o.Concurrent = func(r *http.Request) bool { return r.Method == http.MethodPost }
	}
	l := &Limiter{who: o.Who, concurrent: o.Concurrent, metrics: o.Metrics, audit: o.Audit, now: time.Now}
	l.Update(o.Tenants, o.Other)
	return l
}

// Update applies new limits after the deployment file changed. A tenant
// whose limits are unchanged keeps its state; one whose limits changed
// keeps its calls in flight, which count against the new cap.
func (l *Limiter) Update(tenants map[string]config.Limits, other config.Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.tenants
	l.tenants = make(map[string]*tenantLimit, len(tenants))
	for id, lim := range tenants {
		l.tenants[id] = l.reuse(old[id], id, lim)
	}
	l.other = l.reuse(l.other, LabelOther, other)
}

func (l *Limiter) reuse(t *tenantLimit, name string, lim config.Limits) *tenantLimit {
	if t == nil {
		t = &tenantLimit{name: name}
	}
	t.rpm = lim.RequestsPerMinute
	switch {
	case lim.RequestsPerMinute <= 0:
		t.rate = nil
	case t.rate == nil:
		t.rate = rate.NewLimiter(rate.Limit(float64(lim.RequestsPerMinute)/60), burst(lim))
	default:
		now := l.now()
		t.rate.SetLimitAt(now, rate.Limit(float64(lim.RequestsPerMinute)/60))
		t.rate.SetBurstAt(now, burst(lim))
	}
	switch {
	case lim.ConcurrentCalls <= 0:
		t.slots = nil
	case t.slots == nil:
		t.slots = &slots{max: lim.ConcurrentCalls}
	default:
		t.slots.resize(lim.ConcurrentCalls)
	}
	return t
}

func (l *Limiter) state(tenant string) *tenantLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.tenants[tenant]; ok {
		return t
	}
	return l.other
}

// Allow spends one of tenant's requests, or returns the *LimitError that
// refuses it.
func (l *Limiter) Allow(tenant string) error {
	t := l.state(tenant)
	l.mu.Lock()
	lim, rpm := t.rate, t.rpm
	l.mu.Unlock()
	if lim == nil {
		return nil
	}
	now := l.now()
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return &LimitError{Tenant: tenant, Limit: LimitRate, Max: rpm, RetryAfter: time.Minute}
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // refused, so it must not cost the next request
		return &LimitError{Tenant: tenant, Limit: LimitRate, Max: rpm, RetryAfter: d}
	}
	return nil
}

// Acquire takes one of tenant's concurrency slots. release gives it back;
// it must be called exactly once when the request ends, however it ends
// (calling it again does nothing). A refusal is a *LimitError.
func (l *Limiter) Acquire(tenant string) (release func(), err error) {
	t := l.state(tenant)
	l.mu.Lock()
	s := t.slots
	l.mu.Unlock()
	if s == nil {
		return func() {}, nil
	}
	if !s.take() {
		return nil, &LimitError{Tenant: tenant, Limit: LimitConcurrency, Max: s.capacity(), RetryAfter: time.Second}
	}
	var once sync.Once
	return func() { once.Do(s.give) }, nil
}

// InFlight returns how many of tenant's concurrency slots are taken.
func (l *Limiter) InFlight(tenant string) int {
	t := l.state(tenant)
	l.mu.Lock()
	s := t.slots
	l.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.inUse()
}

// Wrap enforces the limits of the tenant [LimiterOptions.Who] finds on
// each request before next sees it: the rate on every request, the
// concurrency cap on those [LimiterOptions.Concurrent] counts. It goes
// after inbound authentication, so the tenant is known. A refusal is
// answered 429 (see [LimitError]), counted and audited.
func (l *Limiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, user := l.who.of(r.Context())
		if err := l.Allow(tenant); err != nil {
			l.refused(w, r, tenant, user, err.(*LimitError))
			return
		}
		if l.concurrent(r) {
			release, err := l.Acquire(tenant)
			if err != nil {
				l.refused(w, r, tenant, user, err.(*LimitError))
				return
			}
			defer release()
		}
		next.ServeHTTP(w, r)
	})
}

// auditEvery is how often refusals of one kind (a tenant's under one
// limit, inbound credentials for one reason) are audited: a client in a
// retry loop must not flood the audit log. Metrics count each refusal.
const auditEvery = time.Second

func (l *Limiter) refused(w http.ResponseWriter, r *http.Request, tenant, user string, e *LimitError) {
	l.metrics.rateLimited(tenant, e.Limit)
	e.ServeHTTP(w, r)
	l.audit.recordEvery("limit\x00"+tenant+"\x00"+e.Limit, auditEvery, AuditEntry{Event: EventPolicyRefused,
		Tenant: tenant, User: user, Reason: e.Limit, Remote: remoteAddr(r), TraceID: traceID(r.Context())})
}

// slots is a counting semaphore that never waits.
type slots struct {
	mu        sync.Mutex
	max, used int
}

func (s *slots) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used >= s.max {
		return false
	}
	s.used++
	return true
}

func (s *slots) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
}

func (s *slots) resize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.max = n
}

func (s *slots) capacity() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}
