package manager

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
)

// Manager supervises one session per configured server. All methods are safe
// for concurrent use. Errors are [*mcpgate.Error] values: unknown server
// ErrNotFound, disabled ErrDisabled, authorization needed ErrAuthRequired,
// and so on (match them with errors.Is).
type Manager struct {
	opts     Options
	base     *http.Client
	ownsBase bool

	ctx    context.Context // cancelled by Close; parent of all background work
	cancel context.CancelFunc
	wg     sync.WaitGroup

	nextConnID atomic.Uint64
	ops        *operations
	requests   *requestLog
	progress   progressRouter
	now        func() time.Time

	mu      sync.Mutex
	servers map[string]*server
	closed  bool

	// refreshSlots bounds the background connects that refresh held
	// catalogs (Options.RefreshCached), so a first search over a thousand
	// servers does not dial them all at once.
	refreshSlots chan struct{}
	// connectSlots bounds the attempts connecting at once
	// (Options.MaxConnecting).
	connectSlots chan struct{}
}

// defaultMaxConnecting is Options.MaxConnecting's default.
const defaultMaxConnecting = 16

// New validates servers and returns a manager that has not connected
// anything yet.
func New(servers []mcpgate.ServerConfig, opts *Options) (*Manager, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ClientName == "" {
		o.ClientName = "mcpgate"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.MaxConnecting <= 0 {
		o.MaxConnecting = defaultMaxConnecting
	}
	if o.CatalogMaxAge <= 0 {
		o.CatalogMaxAge = DefaultCatalogMaxAge
	}
	o.Limits = o.Limits.withDefaults()
	m := &Manager{opts: o, ops: newOperations(), requests: newRequestLog(o.RequestLogSize, o.RequestLog),
		servers: make(map[string]*server), now: time.Now, refreshSlots: make(chan struct{}, maxBackgroundRefreshes),
		connectSlots: make(chan struct{}, o.MaxConnecting)}
	m.base = o.HTTPClient
	if m.base == nil {
		base, err := defaultHTTPClient()
		if err != nil {
			return nil, err
		}
		m.base, m.ownsBase = base, true
	}
	if m.base.Transport == nil {
		m.base = &http.Client{Transport: http.DefaultTransport}
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if err := validateAll(servers); err != nil {
		return nil, err
	}
	for _, c := range servers {
		m.servers[c.ID] = newServer(m, clone(c))
	}
	if o.Catalogs != nil {
		ctx, cancel := context.WithTimeout(m.ctx, catalogLoadTimeout)
		m.loadStored(ctx, nil)
		cancel()
	}
	return m, nil
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxPages > 0 {
		d.MaxPages = l.MaxPages
	}
	if l.MaxEntries > 0 {
		d.MaxEntries = l.MaxEntries
	}
	if l.MaxEntryBytes > 0 {
		d.MaxEntryBytes = l.MaxEntryBytes
	}
	if l.MaxResponseBytes > 0 {
		d.MaxResponseBytes = l.MaxResponseBytes
	}
	return d
}

func validateAll(servers []mcpgate.ServerConfig) error {
	seen := make(map[string]bool)
	for i := range servers {
		if err := servers[i].Validate(); err != nil {
			return err
		}
		if seen[servers[i].ID] {
			return mcpgate.Errorf(mcpgate.CategoryInvalid, "server %q is configured twice", servers[i].ID)
		}
		seen[servers[i].ID] = true
	}
	return nil
}

func clone(c mcpgate.ServerConfig) mcpgate.ServerConfig {
	c.DisabledTools = slices.Clone(c.DisabledTools)
	c.Scopes = slices.Clone(c.Scopes)
	if c.Headers != nil {
		h := make(map[string]string, len(c.Headers))
		for k, v := range c.Headers {
			h[k] = v
		}
		c.Headers = h
	}
	return c
}

func (m *Manager) logf(server, format string, args ...any) {
	if m.opts.Logger != nil {
		m.opts.Logger.Info(mcpgate.Sanitize(fmt.Sprintf(format, args...), 500), slog.String("server", server))
	}
}

// server finds a configured server.
func (m *Manager) server(id string) (*server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryCancelled, Message: "the manager is closed", Err: errClosed}
	}
	s, ok := m.servers[id]
	if !ok {
		return nil, mcpgate.Errorf(mcpgate.CategoryNotFound, "no server named %q is configured", id)
	}
	return s, nil
}

func (m *Manager) all() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Start connects, in the background, the enabled servers that have
// ConnectOnStartup set. Failures show in their status.
func (m *Manager) Start(ctx context.Context) {
	for _, s := range m.all() {
		cfg := s.config()
		if !cfg.Enabled || !cfg.ConnectOnStartup {
			continue
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.ensure(ctx)
		}()
	}
}

// Update replaces the configuration. A server whose binding (URL, auth and
// the settings that decide which credential is sent) changed passes the
// disconnect barrier before Update returns: its session is closed and no
// attempt started under the old binding can install one. Removed and
// disabled servers are disconnected.
func (m *Manager) Update(ctx context.Context, servers []mcpgate.ServerConfig) error {
	if err := validateAll(servers); err != nil {
		return err
	}
	next := make(map[string]mcpgate.ServerConfig, len(servers))
	for _, c := range servers {
		next[c.ID] = clone(c)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return &mcpgate.Error{Category: mcpgate.CategoryCancelled, Message: "the manager is closed", Err: errClosed}
	}
	var removed []*server
	var kept []*server
	for id, s := range m.servers {
		if _, ok := next[id]; ok {
			kept = append(kept, s)
		} else {
			removed = append(removed, s)
			delete(m.servers, id)
		}
	}
	var added []string
	for id, c := range next {
		if _, ok := m.servers[id]; !ok {
			m.servers[id] = newServer(m, c)
			added = append(added, id)
		}
	}
	m.mu.Unlock()
	if len(added) > 0 {
		m.loadStored(ctx, added)
	}

	for _, s := range removed {
		s.disconnect(mcpgate.StateDisconnected)
	}
	for _, s := range kept {
		s.reconfigure(next[s.id])
	}
	return nil
}

// reconfigure applies a new configuration to a server.
func (s *server) reconfigure(cfg mcpgate.ServerConfig) {
	s.mu.Lock()
	old := s.cfg
	s.mu.Unlock()
	if old.Binding() != cfg.Binding() || (old.Enabled && !cfg.Enabled) {
		// The new binding becomes visible only once the old session is gone.
		s.barrier(mcpgate.StateDisconnected, func() {
			if s.cfg.URL != cfg.URL {
				s.known = ""
				s.dropHeldLocked()
			}
			s.cfg = cfg
			s.catalog.reset()
		})
		return
	}
	s.mu.Lock()
	s.cfg = cfg
	s.mu.Unlock()
	s.notify()
}

// Statuses returns every server's status, sorted by ID.
func (m *Manager) Statuses() []Status {
	all := m.all()
	out := make([]Status, len(all))
	for i, s := range all {
		out[i] = s.status()
	}
	return out
}

// Status returns one server's status.
func (m *Manager) Status(id string) (Status, error) {
	s, err := m.server(id)
	if err != nil {
		return Status{}, err
	}
	return s.status(), nil
}

// Connect connects the server if it has no live session and loads its
// catalogs. Concurrent calls share one attempt.
func (m *Manager) Connect(ctx context.Context, id string) error {
	s, err := m.server(id)
	if err != nil {
		return err
	}
	_, err = s.ensure(ctx)
	return err
}

// Disconnect closes the server's session; the state becomes disconnected.
func (m *Manager) Disconnect(ctx context.Context, id string) error {
	s, err := m.server(id)
	if err != nil {
		return err
	}
	s.disconnect(mcpgate.StateDisconnected)
	return nil
}

// Reconnect replaces the live session with a new one, or connects.
func (m *Manager) Reconnect(ctx context.Context, id string) error {
	s, err := m.server(id)
	if err != nil {
		return err
	}
	s.disconnect(mcpgate.StateDisconnected)
	_, err = s.ensure(ctx)
	return err
}

// Cancel cancels the call with this operation ID, or, if it has not been
// admitted yet, makes sure it will be refused when it arrives.
func (m *Manager) Cancel(operationID string) { m.ops.cancel(operationID) }

// Close closes every session and waits for background work to end.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.disconnect(mcpgate.StateDisconnected)
		}()
	}
	wg.Wait()
	m.cancel()
	m.wg.Wait()
	if m.ownsBase {
		m.base.CloseIdleConnections()
	}
	return nil
}

// Servers returns every server's configuration, sorted by ID: what
// [Manager.Statuses] says without the state and catalog, so it costs
// nothing per catalog entry.
func (m *Manager) Servers() []mcpgate.ServerConfig {
	all := m.all()
	out := make([]mcpgate.ServerConfig, len(all))
	for i, s := range all {
		out[i] = clone(s.config())
	}
	return out
}

// Config returns a server's configuration.
func (m *Manager) Config(id string) (mcpgate.ServerConfig, error) {
	s, err := m.server(id)
	if err != nil {
		return mcpgate.ServerConfig{}, err
	}
	return clone(s.config()), nil
}
