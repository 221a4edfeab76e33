package hosted

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// workspace is what serves one person: their manager over the tenant's
// servers, the gateway tool over it and a front for their hosts.
type workspace struct {
	g      *Gateway
	p      inbound.Principal
	owner  string // the person's owner key
	tenant *config.Tenant
	user   *oauth.Client // the person's own sign-ins
	shared *oauth.Client // the tenant's shared sign-ins
	m      *manager.Manager
	front  *serve.Front
	stop   func() // stops the front's background work
	counts *ops.Sessions

	// Under workspaces.mu.
	refs int
	used time.Time

	mu         sync.Mutex
	rechecking map[string]bool // servers being reconnected after a change elsewhere
}

// newWorkspace builds p's workspace; its manager connects nothing until a
// request needs a server.
func (g *Gateway) newWorkspace(p inbound.Principal) (*workspace, error) {
	t, ok := g.deploy.Tenant(p.Tenant)
	if !ok {
		return nil, errorf(mcpgate.CategoryNotFound, "tenant %q is not in the deployment", p.Tenant)
	}
	o := g.opts
	ws := &workspace{g: g, p: p, owner: Owner(p.Tenant, p.User), tenant: t, shared: g.tenantClient(p.Tenant),
		counts: o.Metrics.Sessions(), rechecking: make(map[string]bool)}
	ws.user = oauth.New(&oauth.Options{
		Store: o.Store, Tenant: ws.owner, HTTPClient: g.forPrincipal(p), Getenv: o.Getenv, ClientName: "mcpgate", Logger: o.Logger,
		OnRefresh: func(_, server, outcome string) { o.Metrics.Refreshed(p.Tenant, server, outcome) },
	})
	var clientMiddleware func(string) mcp.Middleware
	if o.Tracing != nil {
		clientMiddleware = o.Tracing.ClientMiddleware
	}
	m, err := manager.New(t.ServerConfigs(), &manager.Options{
		HTTPClient:    g.forPrincipal(p),
		Logger:        o.Logger,
		ClientName:    "mcpgate",
		ClientVersion: o.Version,
		Getenv:        o.Getenv,
		Elicit: func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
			return ws.front.Elicit(ctx, r)
		},
		OnStateChange: func(st manager.Status) {
			ws.counts.StateChanged(st)
			if ws.front != nil {
				ws.front.StateChanged(st)
			}
		},
		RequestLog: g.log.For(ws.owner),
		//lint:ignore SA1019 session-era servers still log; their messages go on to the person's host
		OnLog: func(server string, msg *mcp.LoggingMessageParams) {
			if ws.front != nil {
				ws.front.Log(server, msg)
			}
		},
		ClientMiddleware: clientMiddleware,
		OnCallEnd: func(ctx context.Context, server, tool string, elapsed time.Duration, res *mcp.CallToolResult, err error) {
			o.Metrics.CallEnded(withPrincipal(ctx, p), server, tool, elapsed, res, err)
		},
		OnEventStream: o.Metrics.EventStream,
		Authorizer:    ws,
		// The person's last catalogs, stored by whichever replica listed
		// them: a workspace opened on another replica lists and searches
		// at once, and connects in the background.
		Catalogs:      catalogsOf(o.Store),
		Tenant:        ws.owner,
		RefreshCached: true,
	})
	if err != nil {
		return nil, err
	}
	ws.m = m
	questions := &serve.StoredQuestions{
		Store: o.Store, Tenant: ws.owner, Timeout: o.QuestionTimeout,
		// The gateway's own page shows every question: someone can
		// always answer.
		Answerable: func(context.Context) bool { return true },
		Announced: func(_ context.Context, in *store.Interaction) {
			ws.front.Notice(in.Server, in.Server+" asks a question before it can go on. The person answers it at "+
				g.deploy.PublicURL+"/questions/"+in.ID+" (the call waits for the answer).")
		},
	}
	var serverMiddleware mcp.Middleware
	if o.Tracing != nil {
		serverMiddleware = o.Tracing.ServerMiddleware()
	}
	gopts := &gateway.Options{Manager: m, Auth: &webLogins{ws: ws}}
	ws.front = serve.New(&serve.Options{
		Gateway:          gateway.New(gopts),
		Bridge:           gateway.NewBridge(gopts),
		Direct:           o.Direct,
		Version:          o.Version,
		Logger:           o.Logger,
		Questions:        questions.Ask,
		Stateless:        true,
		ServerMiddleware: serverMiddleware,
	})
	ws.stop = ws.front.Start(g.ctx)
	m.Start(g.ctx)
	return ws, nil
}

// catalogsOf is st's catalog store, if it keeps catalogs.
func catalogsOf(st store.Store) store.CatalogStore {
	cs, _ := st.(store.CatalogStore)
	return cs
}

// Handler implements manager.Authorizer: a server whose sign-in the tenant
// shares uses the tenant's credential, any other the person's.
func (ws *workspace) Handler(cfg mcpgate.ServerConfig) auth.OAuthHandler {
	return ws.client(cfg.ID).Handler(cfg)
}

// client is the authorization client of server id's credential.
func (ws *workspace) client(id string) *oauth.Client {
	if s, ok := ws.tenant.Server(id); ok && s.SignIn == config.SignInTenant {
		return ws.shared
	}
	return ws.user
}

// ownerOf is the owner key of server id's credential in this workspace.
func (ws *workspace) ownerOf(id string) string {
	if s, ok := ws.tenant.Server(id); ok {
		return ownerFor(ws.p, s)
	}
	return ws.owner
}

// close ends the workspace's sessions and background work.
func (ws *workspace) close() {
	ws.stop()
	_ = ws.m.Close() // each session says goodbye; nothing to do if one cannot
	ws.counts.Close()
}

// workspaces are the open workspaces of this replica, by owner key.
type workspaces struct {
	g    *Gateway
	idle time.Duration
	max  int
	now  func() time.Time

	mu      sync.Mutex
	open    map[string]*workspace
	pending map[string]*pendingWorkspace // being built
	closed  bool
}

// pendingWorkspace lets concurrent first requests of one person share one
// build.
type pendingWorkspace struct {
	done chan struct{}
	ws   *workspace
	err  error
}

func newWorkspaces(g *Gateway) *workspaces {
	return &workspaces{g: g, idle: g.opts.IdleTimeout, max: g.opts.MaxWorkspaces, now: time.Now,
		open: make(map[string]*workspace), pending: make(map[string]*pendingWorkspace)}
}

var errClosing = errors.New("the gateway is shutting down")

// acquire returns p's workspace, building it on first use; release must be
// called when the request ends. A workspace in use is never closed.
func (s *workspaces) acquire(p inbound.Principal) (ws *workspace, release func(), err error) {
	key := Owner(p.Tenant, p.User)
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, errClosing
		}
		if ws := s.open[key]; ws != nil {
			ws.refs++
			ws.used = s.now()
			s.mu.Unlock()
			return ws, s.releaser(ws), nil
		}
		if b := s.pending[key]; b != nil {
			s.mu.Unlock()
			<-b.done
			if b.err != nil {
				return nil, nil, b.err
			}
			continue
		}
		b := &pendingWorkspace{done: make(chan struct{})}
		s.pending[key] = b
		victim := s.makeRoom()
		s.mu.Unlock()
		if victim != nil {
			victim.close()
		}

		b.ws, b.err = s.g.newWorkspace(p)
		s.mu.Lock()
		delete(s.pending, key)
		if b.err == nil {
			if s.closed {
				b.err = errClosing
			} else {
				s.open[key] = b.ws
			}
		}
		s.mu.Unlock()
		close(b.done)
		if b.err != nil && b.ws != nil {
			b.ws.close()
		}
		if b.err != nil {
			return nil, nil, b.err
		}
	}
}

// makeRoom removes and returns the least recently used idle workspace when
// the replica holds the most it may. Called with mu held.
func (s *workspaces) makeRoom() *workspace {
	if len(s.open) < s.max {
		return nil
	}
	var lru *workspace
	for _, ws := range s.open {
		if ws.refs == 0 && (lru == nil || ws.used.Before(lru.used)) {
			lru = ws
		}
	}
	if lru != nil {
		delete(s.open, lru.owner)
	}
	return lru // nil: every one is in use, and the replica holds one more
}

func (s *workspaces) releaser(ws *workspace) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			ws.refs--
			ws.used = s.now()
			s.mu.Unlock()
		})
	}
}

// evictLoop closes workspaces idle for longer than s.idle until ctx ends.
func (s *workspaces) evictLoop(ctx context.Context) {
	t := time.NewTicker(min(s.idle/2, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.evictIdle()
		}
	}
}

// evictIdle closes the workspaces nobody used for s.idle.
func (s *workspaces) evictIdle() {
	s.mu.Lock()
	var idle []*workspace
	for key, ws := range s.open {
		if ws.refs == 0 && s.now().Sub(ws.used) >= s.idle {
			idle = append(idle, ws)
			delete(s.open, key)
		}
	}
	s.mu.Unlock()
	for _, ws := range idle {
		ws.close()
	}
}

// matching returns the open workspaces for which keep is true.
func (s *workspaces) matching(keep func(*workspace) bool) []*workspace {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*workspace
	for _, ws := range s.open {
		if keep(ws) {
			out = append(out, ws)
		}
	}
	return out
}

// closeAll closes every workspace; acquire fails from now on.
func (s *workspaces) closeAll() {
	s.mu.Lock()
	s.closed = true
	all := make([]*workspace, 0, len(s.open))
	for _, ws := range s.open {
		all = append(all, ws)
	}
	clear(s.open)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ws := range all {
		wg.Add(1)
		go func() { defer wg.Done(); ws.close() }()
	}
	wg.Wait()
}

// count is how many workspaces are open.
func (s *workspaces) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

var _ http.RoundTripper = (*attributed)(nil)
