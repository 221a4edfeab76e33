package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
)

// HealthOptions configure [NewHealth]; the struct is copied.
type HealthOptions struct {
	// Ready checks what serving needs (the shared PostgreSQL store's
	// ping); nil means ready whenever not draining.
	Ready func(ctx context.Context) error
	// Timeout bounds one check; zero means 2 s.
	Timeout time.Duration
	// CacheFor is how long a check's answer is reused, so many probes
	// cost one check; zero means 1 s.
	CacheFor time.Duration
	// Logger is told when a check fails; nil discards.
	Logger *slog.Logger
}

// Health answers the liveness and readiness probes and knows whether the
// process is draining. Safe for concurrent use.
type Health struct {
	opts     HealthOptions
	draining atomic.Bool
	drained  chan struct{}
	once     sync.Once
	now      func() time.Time

	mu        sync.Mutex // held across a check, so concurrent probes share it
	checkedAt time.Time
	lastErr   error
}

// NewHealth returns the probes' state, ready (subject to the check) and
// not draining.
func NewHealth(opts *HealthOptions) *Health {
	var o HealthOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.CacheFor <= 0 {
		o.CacheFor = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Health{opts: o, drained: make(chan struct{}), now: time.Now}
}

// Drain marks the process as draining: /readyz fails from now on, and the
// channel from [Health.Draining] is closed. Calling it again does nothing.
func (h *Health) Drain() {
	h.once.Do(func() {
		h.draining.Store(true)
		close(h.drained)
	})
}

// Draining is closed when draining starts. Handlers of long-lived event
// streams select on it and end the stream, so the host reconnects to
// another replica instead of holding this one open until the deadline.
func (h *Health) Draining() <-chan struct{} { return h.drained }

// IsDraining reports whether draining has started.
func (h *Health) IsDraining() bool { return h.draining.Load() }

// Healthz answers the liveness probe: 200 while the process can serve
// HTTP at all, draining or not, so a supervisor does not kill a process
// that is finishing its calls.
func (h *Health) Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probeAnswer(w, r, http.StatusOK, "ok")
	})
}

// Readyz answers the readiness probe: 503 "draining" once draining has
// started, 503 "unavailable" while the check fails, else 200 "ready". The
// check's error goes to the logger, never into the answer.
func (h *Health) Readyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case h.IsDraining():
			probeAnswer(w, r, http.StatusServiceUnavailable, "draining")
		case h.Check(r.Context()) != nil:
			probeAnswer(w, r, http.StatusServiceUnavailable, "unavailable")
		default:
			probeAnswer(w, r, http.StatusOK, "ready")
		}
	})
}

// Check runs the readiness check, or returns its answer from the last
// [HealthOptions.CacheFor]. A probe that hangs up does not cancel it.
func (h *Health) Check(ctx context.Context) error {
	if h.opts.Ready == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.checkedAt.IsZero() && h.now().Sub(h.checkedAt) < h.opts.CacheFor {
		return h.lastErr
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.Timeout)
	defer cancel()
	err := h.opts.Ready(cctx)
	if err != nil {
		h.opts.Logger.Warn("readiness check failed", slog.String("error", mcpgate.Sanitize(err.Error(), 300)))
	}
	h.checkedAt, h.lastErr = h.now(), err
	return err
}

func probeAnswer(w http.ResponseWriter, r *http.Request, code int, status string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, "{\"status\":%q}\n", status)
	}
}

// ErrDrainTimeout is returned by [Serve] when requests were still in
// flight at the drain deadline; their connections were closed.
var ErrDrainTimeout = errors.New("requests still in flight at the drain deadline")

// DrainOptions configure [Serve]; the struct is copied.
type DrainOptions struct {
	// Health is set draining the moment draining starts; nil means none.
	Health *Health
	// Delay keeps accepting new connections this long after /readyz
	// starts failing, so load balancers that poll it stop sending first;
	// zero means the listener closes at once.
	Delay time.Duration
	// Timeout bounds the wait for requests in flight once the listener is
	// closed; zero means 25 s. Keep it below the supervisor's stop timeout
	// (systemd's TimeoutStopSec, Kubernetes' terminationGracePeriodSeconds).
	Timeout time.Duration
	// Logger is told when draining starts and ends; nil discards.
	Logger *slog.Logger
}

// Serve serves srv on ln (with TLS when srv.TLSConfig has certificates)
// until ctx ends — make ctx with signal.NotifyContext for SIGTERM — then
// drains: /readyz fails at once, after Delay the listener closes so new
// connections go elsewhere, and requests in flight run to their end up
// to Timeout, when what remains is cut and [ErrDrainTimeout] returned. It
// returns nil after a complete drain, or the error that stopped serving.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, opts *DrainOptions) error {
	var o DrainOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 25 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	errc := make(chan error, 1)
	go func() {
		if t := srv.TLSConfig; t != nil && (len(t.Certificates) > 0 || t.GetCertificate != nil) {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	o.Logger.Info("draining: not ready any more; finishing requests in flight", slog.Duration("delay", o.Delay), slog.Duration("timeout", o.Timeout))
	if o.Health != nil {
		o.Health.Drain()
	}
	// Answers from now on close their connections, so proxies open new
	// ones, to replicas that are ready.
	srv.SetKeepAlivesEnabled(false)
	if o.Delay > 0 {
		t := time.NewTimer(o.Delay)
		<-t.C
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		srv.Close()
		o.Logger.Warn("drain deadline passed; closed the connections still in use")
		return fmt.Errorf("draining: %w", ErrDrainTimeout)
	}
	if err == nil {
		o.Logger.Info("drained")
	}
	return err
}
