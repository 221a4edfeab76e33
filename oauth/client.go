package oauth

import (
	"fmt"

	"github.com/mcpgate/mcpgate"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/store"
)

// Options configure a [Client]. A nil *Options is not allowed: Store is
// required. The struct is copied by [New].
type Options struct {
	// Store keeps credentials, registrations and login state.
	Store store.Store
	// Tenant is the tenant whose credentials this client uses; "" for a
	// single user.
	Tenant string
	// HTTPClient sends discovery, registration and token requests. Nil
	// means one over a netpolicy.Transport (the network policy, with the
	// proxies and CAs of the process's environment); a client of your own
	// is used as it is. Each request carries the netpolicy.Scope of the
	// server it is made for. Redirects are never followed.
	HTTPClient *http.Client
	// Getenv reads the variables the configuration names (client
	// secrets, workload and ID tokens); nil is os.Getenv.
	Getenv func(string) string
	// ClientName is sent in dynamic registration; default "mcpgate".
	ClientName string
	// Logger receives diagnostics; never secrets.
	Logger *slog.Logger
	// OnRefresh, when set, is told of every renewal of a credential made
	// with its renewal lock held: outcome "ok" (new tokens stored),
	// "shared" (another process had just renewed it; nothing was sent),
	// "invalid_grant" (the sign-in is gone) or "failed". It must be quick.
	OnRefresh func(tenant, server, outcome string)
}

// Client is the MCP authorization client: discovery, registration, logins,
// refresh, step-up and logout for the servers of one tenant. It is safe for
// concurrent use.
type Client struct {
	opts Options
	http *http.Client
	now  func() time.Time
	// renewTimeout bounds each network step of renewing a credential in
	// the background (see renew).
	renewTimeout time.Duration

	mu        sync.Mutex
	asCache   map[string]cachedASM
	redirects map[string]chan callback // state → login waiting for its redirect on the caller's page
	nonces    map[string]string        // origin → the DPoP nonce it gave last
	refused   map[string][32]byte      // server → SHA-256 of the workload token its authorization server refused
	bound     map[string]*dpopKey      // access token → the DPoP key it is bound to
}

// New returns a client over opts.Store.
func New(opts *Options) *Client {
	o := *opts
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ClientName == "" {
		o.ClientName = "mcpgate"
	}
	base := o.HTTPClient
	if base == nil {
		base = &http.Client{Transport: defaultTransport()}
	}
	return &Client{opts: o, http: noRedirects(base), now: time.Now, renewTimeout: renewTimeout, asCache: make(map[string]cachedASM), redirects: make(map[string]chan callback), nonces: make(map[string]string), refused: make(map[string][32]byte), bound: make(map[string]*dpopKey)}
}

func (c *Client) logf(server, format string, args ...any) {
	if c.opts.Logger != nil {
		c.opts.Logger.Info(sanitizeText(format, args...), slog.String("server", server))
	}
}

// sanitizeText formats remote-influenced text for people: controls removed,
// credentials redacted, bounded.
func sanitizeText(format string, args ...any) string {
	return mcpgate.Sanitize(fmt.Sprintf(format, args...), 300)
}
