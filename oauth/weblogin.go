package oauth

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
)

// Sign-ins completed by a web page of the caller's, in whatever process
// the browser comes back to: the gateway that many people share runs
// several replicas, and the person's browser may return to any of them.
// [Client.Begin] keeps nothing in memory: the flow (state, sealed PKCE
// verifier, issuer, client, redirect URI, resource, scopes) is in the
// store, and [Client.Finish] takes it from there, once.

// DefaultFlowTimeout is how long a begun sign-in waits for the person.
const DefaultFlowTimeout = 10 * time.Minute

// BeginOptions tune [Client.Begin]. The struct is copied.
type BeginOptions struct {
	// RedirectURI is the caller's page the authorization server sends the
	// browser back to (the gateway's /oauth/callback); required, https or
	// loopback http.
	RedirectURI string
	// Issuer chooses among several authorization servers.
	Issuer string
	// Timeout bounds how long the flow is valid; default
	// [DefaultFlowTimeout].
	Timeout time.Duration
}

// Begin starts an authorization code sign-in to cfg's server for a person
// who will open the returned URL in a browser and come back to
// opts.RedirectURI, where [Client.Finish] completes it. Like [Client.Login]
// it discovers, registers when needed, and asks for PKCE S256, state and
// resource; only a person's action may start it.
func (c *Client) Begin(ctx context.Context, cfg mcpgate.ServerConfig, opts *BeginOptions) (authURL string, err error) {
	var o BeginOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultFlowTimeout
	}
	if cfg.Auth != mcpgate.AuthOAuth || cfg.Grant.Machine() {
		return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "server %q does not sign in with a person (auth %s)", cfg.ID, cfg.Auth)
	}
	if _, err := checkEndpoint("redirect URI", o.RedirectURI); err != nil {
		return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "redirect URI: must be https or loopback http")
	}
	ctx = forServer(ctx, &cfg)
	p, err := c.prepareLogin(ctx, &cfg, o.Issuer)
	if err != nil {
		return "", err
	}
	ca, err := c.clientFor(ctx, &cfg, p.issuer, p.asm, o.RedirectURI)
	if err != nil {
		return "", err
	}
	verifier, challengeS256 := pkce()
	flow := &store.Flow{
		State: randomToken(), Tenant: c.opts.Tenant, Server: cfg.ID, Verifier: verifier,
		Issuer: p.issuer, ClientID: ca.id, RedirectURI: o.RedirectURI, Resource: p.md.resource, Scopes: p.scopes,
		Expiry: c.now().Add(o.Timeout),
	}
	if err := c.opts.Store.PutFlow(ctx, flow); err != nil {
		return "", storeError("storing the sign-in state", err)
	}
	return authorizeURL(p.asm.AuthorizationEndpoint, ca.id, o.RedirectURI, challengeS256, flow.State, p.md.resource, p.scopes)
}

// Finished is what [Client.Finish] did: whose sign-in it was and how it
// went. It holds no secret.
type Finished struct {
	Tenant string // the flow's tenant (as the Client that began it had it)
	Server string
	*LoginResult
}

// Finish completes the sign-in that the redirect query q (its state, code
// and iss) belongs to, whichever process began it: the flow is taken from
// the store, once, and the code is exchanged by a client of the flow's
// tenant on c's store. server returns the configuration of the flow's
// server as the caller has it now (false: it is no longer configured, and
// the sign-in ends). The returned Finished names the server even when err
// is set, once the flow was found.
func (c *Client) Finish(ctx context.Context, q url.Values, server func(tenant, id string) (mcpgate.ServerConfig, bool)) (*Finished, error) {
	state := q.Get("state")
	if state == "" {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "invalid_state", Message: "the sign-in callback carried no state"}
	}
	flow, err := c.opts.Store.TakeFlow(ctx, state)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "invalid_state",
			Message: "the sign-in expired, was already completed, or was not begun here; start again", Err: err}
	}
	if err != nil {
		return nil, storeError("reading the sign-in state", err)
	}
	done := &Finished{Tenant: flow.Tenant, Server: flow.Server}
	cfg, ok := server(flow.Tenant, flow.Server)
	if !ok || cfg.Auth != mcpgate.AuthOAuth {
		return done, mcpgate.Errorf(mcpgate.CategoryNotFound, "server %q is no longer configured for OAuth; nothing was stored", flow.Server)
	}
	cc := c.forTenant(flow.Tenant)
	ctx = forServer(ctx, &cfg)
	asm, err := cc.serverMetadata(ctx, &cfg, flow.Issuer)
	if err != nil {
		return done, err
	}
	// checkCallback compares the state again and forgets the flow on a
	// refusal; it is already taken.
	code, err := cc.checkCallback(ctx, q, flow, asm)
	if err != nil {
		return done, err
	}
	ca, err := cc.clientFor(ctx, &cfg, flow.Issuer, asm, flow.RedirectURI)
	if err != nil {
		return done, err
	}
	if ca.id != flow.ClientID {
		return done, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "invalid_client",
			Message: "the client registration changed while the person signed in; start again"}
	}
	ch, err := cc.probe(ctx, &cfg)
	if err != nil {
		return done, err
	}
	key, err := cc.credentialKey(&cfg, ch, asm, nil)
	if err != nil {
		return done, err
	}
	prev, err := cc.opts.Store.GetCredential(ctx, cc.opts.Tenant, cfg.ID)
	if errors.Is(err, store.ErrNotFound) {
		prev, err = nil, nil
	}
	if err != nil {
		return done, storeError("reading the credential", err)
	}
	if prev != nil && !bound(prev, &cfg) {
		prev = nil
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {flow.RedirectURI},
		"code_verifier": {flow.Verifier},
		"resource":      {flow.Resource},
	}
	tr, err := cc.requestToken(ctx, asm, form, ca, key)
	if err != nil {
		return done, err
	}
	b := store.Binding{Tenant: cc.opts.Tenant, Server: cfg.ID, Resource: flow.Resource, Issuer: flow.Issuer, ClientID: ca.id, RedirectURI: flow.RedirectURI}
	cred := cc.credentialFrom(b, tr, flow.Scopes, prev, key)
	countStepUp(cred, flow.Scopes, prev)
	res, err := cc.storeLogin(ctx, &cfg, cred)
	done.LoginResult = res
	return done, err
}

// forTenant is a client like c for another tenant's credentials: the same
// store, HTTP client and settings.
func (c *Client) forTenant(tenant string) *Client {
	if tenant == c.opts.Tenant {
		return c
	}
	o := c.opts
	o.Tenant = tenant
	nc := New(&o)
	nc.now = c.now
	return nc
}
