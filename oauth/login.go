package oauth

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// LoginOptions tune an interactive login. The struct is copied.
type LoginOptions struct {
	// Issuer chooses among several authorization servers; required when
	// the server lists more than one.
	Issuer string
	// Open shows the authorization URL to the person (see [OpenBrowser]).
	// It is required for the authorization code grant.
	Open func(ctx context.Context, authURL string) error
	// Pasted delivers redirect URLs the person pastes after signing in on
	// another machine (SSH); nil when there is no such channel.
	Pasted <-chan string
	// CallbackPort is the loopback port of the redirect URI; 0 picks one.
	CallbackPort int
	// Timeout bounds the wait for the person; default 5 minutes.
	Timeout time.Duration
	// RedirectURI, when set, is where the authorization server sends the
	// browser back: a page of the caller's own (the settings page), which
	// passes the redirect's query to [Client.CompleteRedirect]. Empty means
	// the login listens on a loopback port of its own.
	RedirectURI string
	// Waiting, when set, is told once that another sign-in to the server,
	// in this or another process, is under way and this one waits for it.
	Waiting func()
}

// lockWaiting takes the store's lock name, telling waiting first when it
// is held (nil: just waits).
func lockWaiting(ctx context.Context, st store.Store, name string, waiting func()) (func(), error) {
	if waiting != nil {
		try, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		unlock, err := st.Lock(try, name)
		cancel()
		if err == nil {
			return unlock, nil
		}
		if ctx.Err() == nil {
			waiting()
		}
	}
	return st.Lock(ctx, name)
}

// LoginResult describes a completed login. It holds no secret.
type LoginResult struct {
	Issuer  string
	Scopes  []string
	Expiry  time.Time
	Refresh bool // a refresh token was issued
	// DPoP is set when the tokens are bound to a key of mcpgate's (RFC
	// 9449), so they are useless to anyone who copies them.
	DPoP bool
	// Concurrent is set when another sign-in finished while this one
	// waited for it, and its credential is used.
	Concurrent bool
}

// Login signs in to cfg's server: the authorization code grant with a
// person (PKCE S256, state, resource, iss check) through opts.Open and a
// loopback callback, or the client_credentials grant without one. The
// credential is stored bound to the server, issuer, client and redirect
// URI. Only a person's action may call it with the authorization code
// grant: background work never does.
func (c *Client) Login(ctx context.Context, cfg mcpgate.ServerConfig, opts *LoginOptions) (*LoginResult, error) {
	var o LoginOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if cfg.Auth != mcpgate.AuthOAuth {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "server %q uses auth %s; only oauth servers sign in", cfg.ID, cfg.Auth)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ctx = forServer(ctx, &cfg)

	// One login per server at a time, across processes: a second one waits
	// for the first, then finds its fresh credential instead of starting
	// another flow.
	started := c.now()
	unlock, err := lockWaiting(ctx, c.opts.Store, "login\x00"+c.opts.Tenant+"\x00"+cfg.ID, o.Waiting)
	if err != nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryTimeout, Message: "waiting for another sign-in to " + cfg.ID + " to finish", Err: err}
	}
	defer unlock()
	if cur, err := c.opts.Store.GetCredential(ctx, c.opts.Tenant, cfg.ID); err == nil && bound(cur, &cfg) &&
		cur.UpdatedAt.After(started) && c.fresh(cur) && len(cur.StepUpScopes) == 0 {
		return &LoginResult{Issuer: cur.Issuer, Scopes: cur.Scopes, Expiry: cur.Expiry, Refresh: cur.RefreshToken != "", DPoP: dpopKeyOf(cur) != "", Concurrent: true}, nil
	}

	p, err := c.prepareLogin(ctx, &cfg, o.Issuer)
	if err != nil {
		return nil, err
	}
	ch, md, issuer, asm, scopes, prev := p.ch, p.md, p.issuer, p.asm, p.scopes, p.prev

	if cfg.Grant.Machine() {
		cred, err := c.machineToken(ctx, &cfg, md.resource, asm, scopes, prev, ch)
		if err != nil {
			return nil, err
		}
		countStepUp(cred, scopes, prev)
		return c.storeLogin(ctx, &cfg, cred)
	}
	if o.Open == nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "login_required",
			Message: "signing in to " + cfg.ID + " needs a person; run: mcpgate auth " + cfg.ID}
	}
	return c.authorizationCode(ctx, &cfg, &o, ch, md.resource, issuer, asm, scopes, prev)
}

// loginPlan is what a sign-in found before it asks anyone for anything:
// the server's challenge and metadata, the authorization server chosen and
// its metadata, the scopes to ask for, the credential it replaces.
type loginPlan struct {
	ch     challenge
	md     *metadata
	issuer string
	asm    *authServer
	scopes []string
	prev   *store.Credential
}

// prepareLogin probes cfg's server and discovers how to sign in to it;
// choice is the issuer the person chose ("" if none).
func (c *Client) prepareLogin(ctx context.Context, cfg *mcpgate.ServerConfig, choice string) (*loginPlan, error) {
	ch, err := c.probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	md, err := c.discoverResource(ctx, cfg.URL, ch)
	if errors.Is(err, errNoResourceMetadata) {
		// A server of the 2025-03-26 generation: its origin is its
		// authorization server, and the resource is its URL.
		md, err = &metadata{resource: canonicalResource(cfg.URL), prm: &oauthex.ProtectedResourceMetadata{},
			issuers: []string{legacyIssuer(cfg.URL)}, legacy: true}, nil
	}
	if err != nil {
		return nil, err
	}
	prev, err := c.opts.Store.GetCredential(ctx, c.opts.Tenant, cfg.ID)
	if errors.Is(err, store.ErrNotFound) {
		prev, err = nil, nil
	}
	if err != nil {
		return nil, storeError("reading the credential", err)
	}
	if prev != nil && !bound(prev, cfg) {
		prev = nil // another server's, or another kind: nothing of it carries over
	}
	chosen := choice
	if cfg.Issuer != "" {
		// The configured client belongs to one authorization server; no
		// other gets its credentials, whatever the server names.
		if chosen != "" && chosen != cfg.Issuer {
			return nil, &mcpgate.Error{Category: mcpgate.CategoryInvalid, Code: "issuer_mismatch",
				Message: "issuer " + sanitizeText("%s", chosen) + " is not the one pinned for " + cfg.ID + " in the config (" + cfg.Issuer + ")"}
		}
		if !slices.Contains(md.issuers, cfg.Issuer) {
			return nil, pinMismatch(cfg, md.issuers)
		}
		chosen = cfg.Issuer
	}
	if chosen == "" && prev != nil && prev.Resource == md.resource && slices.Contains(md.issuers, prev.Issuer) {
		chosen = prev.Issuer // the person chose it before
	}
	issuer, err := chooseIssuer(md, chosen)
	if err != nil {
		return nil, err
	}
	asm, err := c.issuerMetadata(ctx, issuer, md.legacy)
	if err != nil {
		return nil, err
	}
	scopes := c.scopesFor(cfg, ch, md, asm, prev)
	return &loginPlan{ch: ch, md: md, issuer: issuer, asm: asm, scopes: scopes, prev: prev}, nil
}

// scopesFor decides what to ask for: the scopes a step-up challenge asked
// for, else the person's configured scopes, else the challenge's scope,
// else what the resource says it supports, else none; plus offline_access
// when the authorization server lists it, so the login can be refreshed.
func (c *Client) scopesFor(cfg *mcpgate.ServerConfig, ch challenge, md *metadata, asm *authServer, prev *store.Credential) []string {
	var s []string
	switch {
	case prev != nil && len(prev.StepUpScopes) > 0:
		s = append(s, prev.StepUpScopes...)
	case len(cfg.Scopes) > 0:
		s = append(s, cfg.Scopes...)
	case len(ch.scope) > 0:
		s = append(s, ch.scope...)
	default:
		s = append(s, scopeTokens(md.prm.ScopesSupported, maxListedScopes)...)
	}
	if !cfg.Grant.Machine() && slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(s, "offline_access")
	}
	return s
}

// Protocol versions of the probe: it speaks the current generation first,
// as the client does (server/discover, no session), and the session era
// only to a server that did not take that.
const (
	probeVersion       = "2026-07-28"
	probeLegacyVersion = "2025-11-25"
)

// probe asks the server, without credentials, for its challenge: a
// server/discover request (MCP 2026-07-28), which a protected server of
// either generation answers 401 before reading it, and, when the server
// neither challenges nor accepts it, an initialize. A server that answers
// without asking still gets discovery through the well-known locations.
func (c *Client) probe(ctx context.Context, cfg *mcpgate.ServerConfig) (challenge, error) {
	discover, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "server/discover",
		"params": map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    probeVersion,
			"io.modelcontextprotocol/clientInfo":         map[string]string{"name": c.opts.ClientName, "version": "login"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}},
	})
	if err != nil {
		return challenge{}, err
	}
	status, ch, err := c.probeOnce(ctx, cfg, "server/discover", probeVersion, discover)
	if err != nil || status == http.StatusUnauthorized || status == http.StatusForbidden || status < 400 {
		return ch, err
	}
	// A session-era server that does not know server/discover (400, 404,
	// 405...): ask with the request it does know.
	initialize, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{
			"protocolVersion": probeLegacyVersion,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]string{"name": c.opts.ClientName, "version": "login"},
		},
	})
	if err != nil {
		return challenge{}, err
	}
	_, ch, err = c.probeOnce(ctx, cfg, "initialize", probeLegacyVersion, initialize)
	return ch, err
}

// probeOnce sends one unauthenticated request and returns its status and
// challenge.
func (c *Client) probeOnce(ctx context.Context, cfg *mcpgate.ServerConfig, method, version string, body []byte) (int, challenge, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, challenge{}, mcpgate.Errorf(mcpgate.CategoryInvalid, "server URL: %v", err)
	}
	for k, v := range cfg.Headers {
		ev, err := mcpgate.ExpandRefs(v, c.opts.Getenv)
		if err != nil {
			return 0, challenge{}, err
		}
		req.Header.Set(k, ev)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	if version >= probeVersion {
		req.Header.Set("Mcp-Method", method)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, challenge{}, tokenError(ctx, "asking "+cfg.ID+" how to sign in", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.endProbeSession(cfg, sid)
	}
	return resp.StatusCode, parseChallenge(resp.Header.Values("WWW-Authenticate")), nil
}

// endProbeSession closes a session a server opened for the probe.
func (c *Client) endProbeSession(cfg *mcpgate.ServerConfig, sid string) {
	ctx, cancel := context.WithTimeout(forServer(context.Background(), cfg), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, cfg.URL, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := c.http.Do(req); err == nil {
		resp.Body.Close()
	}
}

// callback is what the redirect brought back.
type callback struct {
	query url.Values
}

func (c *Client) authorizationCode(ctx context.Context, cfg *mcpgate.ServerConfig, o *LoginOptions, ch challenge, resource, issuer string, asm *authServer, scopes []string, prev *store.Credential) (*LoginResult, error) {
	// A sign-in is a new credential, with a key of its own.
	key, err := c.credentialKey(cfg, ch, asm, nil)
	if err != nil {
		return nil, err
	}
	results := make(chan callback, 1)
	var redirectURI string
	if o.RedirectURI != "" {
		// The caller's own page receives the redirect and hands it over
		// with CompleteRedirect.
		if _, err := checkEndpoint("redirect URI", o.RedirectURI); err != nil {
			return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "redirect URI: must be https or loopback http")
		}
		redirectURI = o.RedirectURI
	} else {
		ln, err := listenCallback(o.CallbackPort, prev)
		if err != nil {
			return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "listening for the sign-in callback on 127.0.0.1:%d: %v", o.CallbackPort, err)
		}
		redirectURI = fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
		srv := &http.Server{Handler: callbackHandler(cfg.ID, results), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}

	ca, err := c.clientFor(ctx, cfg, issuer, asm, redirectURI)
	if err != nil {
		return nil, err
	}
	verifier, challengeS256 := pkce()
	flow := &store.Flow{
		State: randomToken(), Tenant: c.opts.Tenant, Server: cfg.ID, Verifier: verifier,
		Issuer: issuer, ClientID: ca.id, RedirectURI: redirectURI, Resource: resource, Scopes: scopes,
		Expiry: c.now().Add(o.Timeout),
	}
	if err := c.opts.Store.PutFlow(ctx, flow); err != nil {
		return nil, storeError("storing the sign-in state", err)
	}
	if o.RedirectURI != "" {
		c.mu.Lock()
		c.redirects[flow.State] = results
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.redirects, flow.State)
			c.mu.Unlock()
		}()
	}
	authURL, err := authorizeURL(asm.AuthorizationEndpoint, ca.id, redirectURI, challengeS256, flow.State, resource, scopes)
	if err != nil {
		return nil, err
	}
	if err := o.Open(ctx, authURL); err != nil {
		return nil, err
	}

	q, err := awaitRedirect(ctx, cfg.ID, results, o.Pasted)
	if err != nil {
		return nil, err
	}
	code, err := c.checkCallback(ctx, q, flow, asm)
	if err != nil {
		return nil, err
	}
	taken, err := c.opts.Store.TakeFlow(ctx, flow.State)
	if err != nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "invalid_state", Message: "the sign-in state expired or was already used; start again", Err: err}
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {taken.RedirectURI},
		"code_verifier": {taken.Verifier},
		"resource":      {taken.Resource},
	}
	tr, err := c.requestToken(ctx, asm, form, ca, key)
	if err != nil {
		return nil, err
	}
	b := store.Binding{Tenant: c.opts.Tenant, Server: cfg.ID, Resource: resource, Issuer: issuer, ClientID: ca.id, RedirectURI: redirectURI}
	cred := c.credentialFrom(b, tr, scopes, prev, key)
	countStepUp(cred, scopes, prev)
	return c.storeLogin(ctx, cfg, cred)
}

// countStepUp counts a sign-in made for a pending step-up towards
// maxStepUps and maxStepUpChain, noting when it was made; any other
// sign-in starts the count afresh.
func countStepUp(cred *store.Credential, requested []string, prev *store.Credential) {
	if prev != nil && len(prev.StepUpScopes) > 0 && grantsAll(requested, prev.StepUpScopes) {
		cred.StepUpCount, cred.StepUpAt = prev.StepUpCount+1, cred.UpdatedAt
	} else {
		cred.StepUpCount, cred.StepUpAt = 0, time.Time{}
	}
}

// listenCallback listens for the redirect on the configured port, else on
// the port of the previous login (so an authorization server that insists
// on the exact registered URI still matches), else on any free port.
func listenCallback(port int, prev *store.Credential) (net.Listener, error) {
	if port != 0 {
		return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	if prev != nil {
		if u, err := url.Parse(prev.RedirectURI); err == nil && u.Port() != "" {
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", u.Port())); err == nil {
				return ln, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// awaitRedirect waits for the browser's redirect to reach the loopback
// callback, or for the person to paste it.
func awaitRedirect(ctx context.Context, server string, results <-chan callback, pasted <-chan string) (url.Values, error) {
	for {
		select {
		case cb := <-results:
			return cb.query, nil
		case text, ok := <-pasted:
			if !ok {
				pasted = nil // no more input; keep waiting for the browser
				continue
			}
			text = strings.TrimSpace(text)
			if text == "" {
				continue
			}
			u, err := url.Parse(text)
			if err != nil || (u.Query().Get("code") == "" && u.Query().Get("error") == "") {
				return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "the pasted text is not the redirect URL (it should contain code= and state=)")
			}
			return u.Query(), nil
		case <-ctx.Done():
			return nil, &mcpgate.Error{Category: mcpgate.CategoryTimeout, Message: "signing in to " + server + ": no answer from the browser in time", Err: ctx.Err()}
		}
	}
}

// checkCallback validates the redirect: the state we sent (compared in
// constant time), the issuer (RFC 9207), and no error.
func (c *Client) checkCallback(ctx context.Context, q url.Values, flow *store.Flow, asm *authServer) (string, error) {
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(flow.State)) != 1 {
		// Forget the flow: whoever sent this may be replaying an attack.
		c.opts.Store.TakeFlow(ctx, flow.State)
		return "", &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "invalid_state",
			Message: "the sign-in callback carried the wrong state (a forged or stale redirect); nothing was stored"}
	}
	iss, hasIss := q["iss"]
	if hasIss || asm.AuthorizationResponseIssParameterSupported {
		if !hasIss || len(iss) != 1 || iss[0] != flow.Issuer {
			c.opts.Store.TakeFlow(ctx, flow.State)
			return "", &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "invalid_issuer",
				Message: "the sign-in callback came from another issuer than " + sanitizeText("%s", flow.Issuer) + " (RFC 9207 iss mismatch); nothing was stored"}
		}
	}
	if e := q.Get("error"); e != "" {
		c.opts.Store.TakeFlow(ctx, flow.State)
		code := providerCode(e)
		msg := "the authorization server refused the sign-in"
		if code != "" {
			msg += ": " + code
		}
		if d := mcpgate.Sanitize(q.Get("error_description"), 200); d != "" {
			msg += ": " + d
		}
		return "", &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: code, Message: msg}
	}
	code := q.Get("code")
	if code == "" {
		return "", &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: "the sign-in callback carried no code"}
	}
	return code, nil
}

// authorizeURL builds the authorization request on top of the endpoint's
// own query.
func authorizeURL(endpoint, clientID, redirectURI, challenge, state, resource string, scopes []string) (string, error) {
	u, err := checkEndpoint("authorization_endpoint", endpoint)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", clientID)
	q.Set("redirect_uri", redirectURI)
	q.Set("code_challenge", challenge)
	q.Set("code_challenge_method", "S256")
	q.Set("state", state)
	q.Set("resource", resource)
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// CompleteRedirect hands a redirect that reached the caller's own page (see
// LoginOptions.RedirectURI) to the login in this process that is waiting
// for it, matched by its state. It reports whether a login took it; the
// login itself checks state, issuer and code as for any redirect.
func (c *Client) CompleteRedirect(q url.Values) bool {
	c.mu.Lock()
	ch, ok := c.redirects[q.Get("state")]
	c.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- callback{query: q}:
	default: // a second redirect: the login already has its answer
	}
	return true
}

// callbackHandler answers the browser's redirect with a plain page and
// hands the query to the login once.
func callbackHandler(server string, results chan<- callback) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		select {
		case results <- callback{query: q}:
		default: // a second redirect: the login already has its answer
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		msg := "Signed in to " + server + ". You can close this tab and return to mcpgate."
		if q.Get("error") != "" {
			msg = "The sign-in to " + server + " did not complete. Return to mcpgate for details."
		}
		fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>mcpgate</title><p>%s</p>\n", html.EscapeString(msg))
	})
	return mux
}

func (c *Client) storeLogin(ctx context.Context, cfg *mcpgate.ServerConfig, cred *store.Credential) (*LoginResult, error) {
	_, err := c.opts.Store.UpdateCredential(ctx, c.opts.Tenant, cfg.ID, func(context.Context, *store.Credential) (*store.Credential, error) {
		return cred, nil
	})
	if err != nil {
		return nil, storeError("storing the credential", err)
	}
	return &LoginResult{Issuer: cred.Issuer, Scopes: cred.Scopes, Expiry: cred.Expiry, Refresh: cred.RefreshToken != "", DPoP: dpopKeyOf(cred) != ""}, nil
}

// LogoutResult says what logout did. It holds no secret.
type LogoutResult struct {
	Removed bool // a credential was stored and is now gone
	// Revoked is set when the authorization server revoked the
	// credential as far as it can: it confirmed revoking at least one
	// token and refused none but for being of a type it does not revoke
	// (see TokenRevocation.Unsupported).
	Revoked bool
	// Tokens says what the authorization server did with each token
	// logout asked it to revoke, refresh token first. Empty when it was
	// asked nothing: no credential, a bearer token, or no revocation
	// endpoint (RevocationOffered false).
	Tokens            []TokenRevocation
	RevocationOffered bool
	// RevocationErr, when set, is why logout could not ask at all (the
	// authorization server's metadata or the client is gone); its message
	// is safe to show a person.
	RevocationErr error
	// AccessExpiry is when the access token expires (zero when the
	// authorization server did not say): until then it still works
	// unless the server revoked it.
	AccessExpiry time.Time
}

// TokenRevocation is the authorization server's answer to revoking one
// token (RFC 7009).
type TokenRevocation struct {
	Hint string // "refresh_token" or "access_token"
	// Revoked: the server answered 200, which it also does for a token
	// that had already ended (RFC 7009 §2.2).
	Revoked bool
	// Unsupported: the server does not revoke tokens of this type
	// (unsupported_token_type, RFC 7009 §2.2.1), as servers whose access
	// tokens are self-contained JWTs answer for those: the token works
	// until it expires.
	Unsupported bool
	// Err, when neither, is why the revocation failed; its message is safe
	// to show a person.
	Err error
}

// Logout deletes the server's credential and, when the authorization
// server advertises revocation (RFC 7009), revokes its tokens: the
// refresh token first (which ends the grant's access tokens too, where
// the server can), then the access token. The credential is deleted even
// when revocation fails.
func (c *Client) Logout(ctx context.Context, cfg mcpgate.ServerConfig) (*LogoutResult, error) {
	ctx = forServer(ctx, &cfg)
	var old *store.Credential
	_, err := c.opts.Store.UpdateCredential(ctx, c.opts.Tenant, cfg.ID, func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		old = cur
		return nil, nil
	})
	if err != nil {
		return nil, storeError("deleting the credential", err)
	}
	res := &LogoutResult{Removed: old != nil}
	if old == nil || old.Kind != store.KindOAuth || old.Issuer == "" {
		return res, nil
	}
	res.AccessExpiry = old.Expiry
	asm, err := c.serverMetadata(ctx, &cfg, old.Issuer)
	if err != nil {
		res.RevocationErr = err
		return res, nil
	}
	if asm.RevocationEndpoint == "" {
		return res, nil
	}
	ca, err := c.clientForRefresh(ctx, &cfg, old, asm)
	if err != nil {
		res.RevocationErr = err
		return res, nil
	}
	res.RevocationOffered = true
	res.Revoked = true
	confirmed := false
	for _, t := range []struct{ tok, hint string }{{old.RefreshToken, "refresh_token"}, {old.AccessToken, "access_token"}} {
		if t.tok == "" {
			continue
		}
		form := url.Values{"token": {t.tok}, "token_type_hint": {t.hint}}
		user, pass, err := ca.apply(form, asm.Issuer, c.now())
		if err == nil {
			err = c.postForm(ctx, asm.RevocationEndpoint, form, user, pass, nil)
		}
		tr := TokenRevocation{Hint: t.hint, Revoked: err == nil}
		var pe *ProtocolError
		switch {
		case err == nil:
			confirmed = true
		case errors.As(err, &pe) && pe.ErrorCode == "unsupported_token_type":
			tr.Unsupported = true
		default:
			tr.Err = tokenError(ctx, "revoking the "+strings.ReplaceAll(t.hint, "_", " "), err)
			res.Revoked = false
			c.logf(cfg.ID, "revoking the %s failed: %s", t.hint, describe(err))
		}
		res.Tokens = append(res.Tokens, tr)
	}
	res.Revoked = res.Revoked && confirmed
	return res, nil
}

// SetBearer stores a bearer token for cfg's server, sealed and bound to its
// URL.
func (c *Client) SetBearer(ctx context.Context, cfg mcpgate.ServerConfig, token string) error {
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t\r\n\x00") || len(token) > 16<<10 {
		return mcpgate.Errorf(mcpgate.CategoryInvalid, "the bearer token must be one line without spaces, at most 16 KiB")
	}
	cred := &store.Credential{
		Binding:     store.Binding{Tenant: c.opts.Tenant, Server: cfg.ID, Resource: canonicalResource(cfg.URL)},
		Kind:        store.KindBearer,
		AccessToken: token,
		TokenType:   "Bearer",
		UpdatedAt:   c.now(),
	}
	if _, err := c.storeLogin(ctx, &cfg, cred); err != nil {
		return err
	}
	return nil
}

// CredentialInfo describes a stored credential without its secrets.
type CredentialInfo struct {
	Kind         store.CredentialKind
	Issuer       string
	Scopes       []string
	Expiry       time.Time
	Refreshable  bool
	DPoP         bool // the tokens are bound to a key of mcpgate's
	StepUpScopes []string
	// Bound is false when the credential was made for another URL and will
	// not be sent.
	Bound bool
}

// Credential describes cfg's stored credential; ErrNotFound-wrapping
// error when there is none.
func (c *Client) Credential(ctx context.Context, cfg mcpgate.ServerConfig) (*CredentialInfo, error) {
	cred, err := c.opts.Store.GetCredential(ctx, c.opts.Tenant, cfg.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, mcpgate.Errorf(mcpgate.CategoryNotFound, "not signed in to %s", cfg.ID)
		}
		return nil, storeError("reading the credential", err)
	}
	return &CredentialInfo{Kind: cred.Kind, Issuer: cred.Issuer, Scopes: cred.Scopes, Expiry: cred.Expiry,
		Refreshable: cred.RefreshToken != "", DPoP: dpopKeyOf(cred) != "", StepUpScopes: cred.StepUpScopes, Bound: bound(cred, &cfg)}, nil
}
