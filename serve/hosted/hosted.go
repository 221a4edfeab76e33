// Package hosted is `mcpgate serve --http`: one gateway that many people
// share, in the tenants of a deployment file, on several replicas over
// one PostgreSQL database.
//
// Every request to /mcp proves who sends it (package inbound: an API key or
// a JWT), which gives a tenant and a user. The person's requests are served
// by a workspace of their own: a manager over the tenant's servers whose
// upstream credentials are the person's (or, for a server whose sign-in the
// deployment says is shared, the tenant's), the gateway tool and the
// bridge, and a front that serves hosts statelessly, so any replica answers
// any request. Workspaces are made on a person's first request and closed
// when idle; nothing they hold is needed by another replica: credentials,
// sign-in state and questions waiting for a person are in the store.
//
// Whose a record is, the store's "tenant", is the owner key: "T:U" for
// user U of tenant T, "T" for what the whole tenant shares. Tenant IDs
// cannot hold a colon, so the two never collide, and one person's key is
// never a prefix match for another's: the store compares whole keys.
//
// Sign-ins are web sign-ins: the gateway tool's authenticate action stores
// a pending interaction and gives the person a link to this gateway's
// /oauth/start/{id}; the page there begins the authorization (PKCE
// verifier, state and binding stored, see oauth.Client.Begin) and sends the
// browser to the authorization server, which sends it back to
// /oauth/callback on whichever replica the proxy picks, where
// oauth.Client.Finish completes it. When the store tells of changes made
// by other replicas (store.Watcher), a workspace whose server's credential
// appeared or went away reconnects that server, so status says what is
// true everywhere within a moment.
package hosted

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/web"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure [New]. The struct is copied.
type Options struct {
	// Deployment names the tenants, their servers and the public URL.
	// Required.
	Deployment *config.Deployment
	// Store keeps credentials, sign-in state, questions and request logs:
	// store/postgres for several replicas. Required. When it is a
	// store.Watcher, changes other replicas make are followed.
	Store store.Store
	// Auth decides who sends each request. Required.
	Auth *inbound.Authenticator
	// Network carries every request to remote servers and authorization
	// servers: a netpolicy.Transport made Strict. Required.
	Network http.RoundTripper
	// Getenv resolves ${VAR} references and bearerTokenEnv of the tenants'
	// servers; nil is the process environment.
	Getenv func(string) string
	// Direct serves every enabled tool as mcp__SERVER__TOOL instead of
	// the gateway tool.
	Direct bool
	// Version is the gateway's version, sent to servers and hosts.
	Version string
	// Logger receives diagnostics, never secrets; nil discards.
	Logger *slog.Logger

	// The operating side (package ops); each may be nil.
	Metrics *ops.Metrics
	Tracing *ops.Tracing
	Audit   *ops.Audit
	Limiter *ops.Limiter
	Health  *ops.Health

	// IdleTimeout closes a person's workspace (their upstream sessions)
	// after this long without a request; zero means 15 minutes.
	IdleTimeout time.Duration
	// MaxWorkspaces bounds the workspaces kept at once; the least recently
	// used idle one is closed to make room. Zero means 10,000.
	MaxWorkspaces int
	// QuestionTimeout bounds how long a call waits for a person to answer
	// a question on the gateway's page; zero means the call's timeout.
	QuestionTimeout time.Duration
}

// Gateway serves the deployment over HTTP. Build it with [New], serve its
// [Gateway.Handler], and [Gateway.Close] it after the HTTP server has
// stopped.
type Gateway struct {
	opts    Options
	deploy  *config.Deployment
	log     *serve.RequestLog
	http    *http.Client
	mcp     http.Handler
	base    *oauth.Client // finishes sign-ins for any owner
	spaces  *workspaces
	handler http.Handler

	mu      sync.Mutex
	tenants map[string]*oauth.Client // tenant ID → the client of its shared sign-ins

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a gateway for opts.Deployment and starts following the
// store's changes.
func New(opts *Options) (*Gateway, error) {
	if opts == nil || opts.Deployment == nil || opts.Store == nil || opts.Auth == nil || opts.Network == nil {
		return nil, errors.New("hosted: Options.Deployment, Store, Auth and Network are required")
	}
	o := *opts
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 15 * time.Minute
	}
	if o.MaxWorkspaces <= 0 {
		o.MaxWorkspaces = 10000
	}
	g := &Gateway{opts: o, deploy: o.Deployment, log: serve.NewRequestLog(o.Store), tenants: make(map[string]*oauth.Client)}
	g.http = &http.Client{Transport: &attributed{next: o.Network}}
	g.base = g.oauthClient("")
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.spaces = newWorkspaces(g)
	g.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return workspaceFrom(r.Context()).front.Server()
	}, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// Every request carries a credential checked before it gets here;
		// the protection is for servers on loopback that have none, and
		// would refuse the proxy's Host.
		DisableLocalhostProtection: true,
	})
	g.handler = g.routes()
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.spaces.evictLoop(g.ctx) }()
	if w, ok := o.Store.(store.Watcher); ok {
		g.wg.Add(1)
		go func() { defer g.wg.Done(); g.watch(w) }()
	}
	return g, nil
}

// Handler serves the gateway: /mcp for agent hosts; /oauth/start/{id} and
// /oauth/callback for people's sign-ins; /questions/{id} for questions
// servers ask; /api/log for a person's request log; /healthz and /readyz.
// /metrics is not among them: serve it on an operator's listener.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Close closes every workspace (their sessions end cleanly) and stops
// following the store. Call it after the HTTP server has stopped.
func (g *Gateway) Close() {
	g.cancel()
	g.wg.Wait()
	g.spaces.closeAll()
	g.log.Close()
}

func (g *Gateway) routes() http.Handler {
	mux := http.NewServeMux()
	o := g.opts
	mcpRoute := o.Tracing.Wrap("/mcp", o.Metrics.Wrap("mcp", g.authenticated(o.Limiter.Wrap(http.HandlerFunc(g.serveMCP)))))
	if o.Limiter == nil {
		mcpRoute = o.Tracing.Wrap("/mcp", o.Metrics.Wrap("mcp", g.authenticated(http.HandlerFunc(g.serveMCP))))
	}
	mux.Handle("/mcp", mcpRoute)
	mux.Handle("/oauth/start/{id}", o.Metrics.Wrap("oauth-start", http.HandlerFunc(g.serveStart)))
	mux.Handle("/oauth/callback", o.Metrics.Wrap("oauth-callback", http.HandlerFunc(g.serveCallback)))
	mux.Handle("/questions/{id}", o.Metrics.Wrap("questions", web.QuestionPage(&web.QuestionPageOptions{Store: o.Store, Logger: o.Logger})))
	mux.Handle("/api/log", o.Metrics.Wrap("log", g.authenticated(http.HandlerFunc(g.serveLog))))
	health := o.Health
	if health == nil {
		health = ops.NewHealth(nil)
	}
	mux.Handle("/healthz", health.Healthz())
	mux.Handle("/readyz", health.Readyz())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "mcpgate: MCP is served at /mcp", http.StatusNotFound)
	})
	return mux
}

// authenticated lets through requests whose credential inbound accepts,
// with the principal in their context. Every refusal is the same 401; a
// credential that could not be checked is 503.
func (g *Gateway) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := g.opts.Auth.Authenticate(r)
		switch {
		case errors.Is(err, inbound.ErrUnavailable):
			w.Header().Set("Retry-After", "5")
			http.Error(w, "mcpgate: the credential could not be checked now; try again", http.StatusServiceUnavailable)
			return
		case err != nil:
			inbound.Unauthorized(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(withPrincipal(r.Context(), p)))
	})
}

// serveMCP serves one MCP request with the caller's workspace.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request) {
	p, _ := principalFrom(r.Context())
	ws, release, err := g.spaces.acquire(p)
	if err != nil {
		g.opts.Logger.Warn("no workspace for a caller", "tenant", p.Tenant, "error", mcpgate.Sanitize(err.Error(), 300))
		http.Error(w, "mcpgate: "+mcpgate.Sanitize(err.Error(), 300), http.StatusServiceUnavailable)
		return
	}
	defer release()
	g.mcp.ServeHTTP(w, r.WithContext(withWorkspace(r.Context(), ws)))
}

// oauthClient returns a new authorization client for the owner key's
// credentials.
func (g *Gateway) oauthClient(owner string) *oauth.Client {
	return oauth.New(&oauth.Options{
		Store:      g.opts.Store,
		Tenant:     owner,
		HTTPClient: g.http,
		Getenv:     g.opts.Getenv,
		ClientName: "mcpgate",
		Logger:     g.opts.Logger,
		OnRefresh: func(owner, server, outcome string) {
			g.opts.Metrics.Refreshed(TenantOf(owner), server, outcome)
		},
	})
}

// tenantClient returns the client of a tenant's shared sign-ins; one per
// tenant, so its caches serve every person of the tenant.
func (g *Gateway) tenantClient(tenant string) *oauth.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.tenants[tenant]
	if !ok {
		c = g.oauthClient(tenant)
		g.tenants[tenant] = c
	}
	return c
}

// server returns the configuration of the owner's server id as the
// deployment has it now: ok only when the owner key is of the kind the
// server's sign-in says (a person's for signIn user, the tenant's for
// signIn tenant).
func (g *Gateway) server(owner, id string) (config.TenantServer, bool) {
	tenant, user, personal := strings.Cut(owner, ":")
	t, ok := g.deploy.Tenant(tenant)
	if !ok {
		return config.TenantServer{}, false
	}
	s, ok := t.Server(id)
	if !ok || (s.SignIn == config.SignInTenant) == personal || (personal && user == "") {
		return config.TenantServer{}, false
	}
	return s, true
}

// Owner is the owner key of what user of tenant holds alone.
func Owner(tenant, user string) string { return tenant + ":" + user }

// TenantOf is the tenant of an owner key.
func TenantOf(owner string) string {
	tenant, _, _ := strings.Cut(owner, ":")
	return tenant
}

// ownerFor is the owner key of the credential p's requests to s carry.
func ownerFor(p inbound.Principal, s config.TenantServer) string {
	if s.SignIn == config.SignInTenant {
		return p.Tenant
	}
	return Owner(p.Tenant, p.User)
}

type ctxKey int

const (
	principalKey ctxKey = iota
	workspaceKey
)

func withPrincipal(ctx context.Context, p inbound.Principal) context.Context {
	return context.WithValue(ctx, principalKey, p)
}

func principalFrom(ctx context.Context) (inbound.Principal, bool) {
	p, ok := ctx.Value(principalKey).(inbound.Principal)
	return p, ok
}

func withWorkspace(ctx context.Context, ws *workspace) context.Context {
	return context.WithValue(ctx, workspaceKey, ws)
}

func workspaceFrom(ctx context.Context) *workspace {
	ws, _ := ctx.Value(workspaceKey).(*workspace)
	return ws
}

// Who is the ops.Who of the gateway: the tenant and user of the request
// (or of the workspace's work) ctx belongs to.
func Who(ctx context.Context) (tenant, user string) {
	p, _ := principalFrom(ctx)
	return p.Tenant, p.User
}

// attributed puts the principal of the workspace a request to a remote
// server is made for on its context, so a refusal by the network policy
// is audited as theirs; the workspace's client sets it.
type attributed struct {
	next http.RoundTripper
	p    *inbound.Principal
}

func (a *attributed) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.p != nil {
		if _, ok := principalFrom(req.Context()); !ok {
			req = req.WithContext(withPrincipal(req.Context(), *a.p))
		}
	}
	return a.next.RoundTrip(req)
}

// forPrincipal is an HTTP client like g's whose requests are p's.
func (g *Gateway) forPrincipal(p inbound.Principal) *http.Client {
	return &http.Client{Transport: &attributed{next: g.opts.Network, p: &p}}
}

// errorf is a categorized error with a message for people.
func errorf(c mcpgate.Category, format string, args ...any) error {
	return &mcpgate.Error{Category: c, Message: fmt.Sprintf(format, args...)}
}
