package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// expirySkew refreshes a token this long before it expires, so it does not
// expire on the way to the server; for a token that lives less than four
// times as long, a quarter of its lifetime (see refreshMargin).
const expirySkew = 30 * time.Second

// renewTimeout bounds each network step of a renewal in the background:
// finding the authorization server's metadata, and the token request
// made under the credential's renewal lock, which other processes needing
// the credential wait for. It is no shorter because a rotating refresh
// token the server spends after mcpgate gave up on its answer is lost:
// the next refresh presents the old one, and the server ends the sign-in
// (RFC 9700 §4.14.2).
const renewTimeout = 15 * time.Second

// maxStepUps bounds the sign-ins made for one insufficient_scope
// challenge: with the sign-in before it, at most three authorizations ask
// for the same scopes (the MCP conformance suite's bound). A server that
// keeps refusing after that is broken or the account lacks the permission;
// asking again would loop.
const maxStepUps = 2

// maxStepUpChain bounds the step-up sign-ins in a row, each soon after the
// last, whatever scopes they asked for: a server that names a new scope at
// every refusal is given up on as surely as one that repeats itself.
const maxStepUpChain = 4

// stepUpWindow is how soon after a sign-in for a step-up another
// challenge continues the same run of step-ups. One much later (a
// permission withdrawn since, another tool needing more) starts afresh.
const stepUpWindow = 10 * time.Minute

// Handler returns the go-sdk OAuthHandler for sessions of cfg (auth oauth,
// or bearer with a stored token). It reads the credential from the store
// for every request, so a login done by another process is used at once;
// refreshes under the credential's cross-process lock. It never starts an
// interactive login: when a person is needed it returns an error of
// category auth and the server moves to needs-auth. It also implements
// manager.RequestPreparer, which adds the DPoP proof of each request sent
// with a DPoP-bound token.
func (c *Client) Handler(cfg mcpgate.ServerConfig) auth.OAuthHandler {
	return &handler{c: c, cfg: cfg}
}

type handler struct {
	c   *Client
	cfg mcpgate.ServerConfig
}

// maxBoundTokens bounds the tokens a client remembers keys for: the
// current ones of its servers and those of requests still in flight when
// they were renewed.
const maxBoundTokens = 256

func (h *handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	ctx = forServer(ctx, &h.cfg)
	tok, key, err := h.c.accessToken(ctx, &h.cfg, "")
	if err != nil || tok == "" {
		return nil, err
	}
	if err := h.remember(tok, key); err != nil {
		return nil, err
	}
	// The go-sdk sends every token as Bearer; PrepareRequest presents a
	// DPoP-bound one with its scheme and proof.
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok, TokenType: "Bearer"}), nil
}

// remember notes which key tok is bound to, for PrepareRequest. It is
// kept by the client, not the handler, so any handler of the server (the
// manager may ask for one per use) finds it.
func (h *handler) remember(tok, key string) error {
	if key == "" {
		return nil
	}
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.bound[tok]; ok {
		return nil
	}
	k, err := decodeDPoPKey(key)
	if err != nil {
		return &mcpgate.Error{Category: mcpgate.CategoryInternal, Message: "reading the credential's DPoP key: " + err.Error()}
	}
	if len(c.bound) >= maxBoundTokens {
		clear(c.bound) // the next TokenSource notes the current ones again
	}
	c.bound[tok] = k
	return nil
}

// PrepareRequest implements manager.RequestPreparer: a request carrying a
// DPoP-bound access token (as "Bearer", the way the go-sdk sets it) goes
// with the DPoP scheme and a fresh proof for exactly this request (RFC
// 9449 §7), carrying the server's nonce when it gave one (§9). Requests
// with a bearer token or none are left as they are.
func (h *handler) PrepareRequest(req *http.Request) error {
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return nil
	}
	h.c.mu.Lock()
	key := h.c.bound[tok]
	h.c.mu.Unlock()
	if key == nil {
		return nil
	}
	target := req.URL.String()
	proof, err := key.proof(req.Method, target, tok, h.c.nonce(target), h.c.now())
	if err != nil {
		return mcpgate.Errorf(mcpgate.CategoryInternal, "making a DPoP proof: %w", err)
	}
	req.Header.Set("Authorization", "DPoP "+tok)
	req.Header.Set("DPoP", proof)
	return nil
}

func (h *handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	ctx = forServer(ctx, &h.cfg)
	ch := parseChallenge(resp.Header.Values("WWW-Authenticate"))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if sent == "" {
		sent, _ = strings.CutPrefix(req.Header.Get("Authorization"), "DPoP ")
	}
	cfg := &h.cfg
	if resp.StatusCode == http.StatusUnauthorized && ch.errorCode == "use_dpop_nonce" && sent != "" && resp.Header.Get("DPoP-Nonce") != "" {
		// RFC 9449 §9: the server wants its nonce in the proof. The
		// transport retries once, with a proof that carries it.
		h.c.noteNonce(req.URL.String(), resp.Header)
		return nil
	}
	if resp.StatusCode == http.StatusForbidden {
		if ch.errorCode == "insufficient_scope" {
			return h.c.stepUp(ctx, cfg, ch.scope)
		}
		return &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: http.StatusForbidden, Code: ch.errorCode,
			Message: "the server refused this sign-in (HTTP 403)"}
	}
	if sent != "" {
		if issuer, moved := h.c.issuerMoved(ctx, cfg, ch); moved {
			// The credential came from an authorization server the
			// server no longer names: refreshing there would only renew
			// a token the server refuses.
			return &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: http.StatusUnauthorized, Code: orCode(ch.errorCode, "invalid_token"),
				Message: "the server " + cfg.ID + " no longer accepts sign-ins from " + sanitizeText("%s", issuer) + "; sign in again with: mcpgate auth " + cfg.ID}
		}
		// The server rejected a token it should have accepted: refresh it
		// (unless someone already did) and let the transport retry once.
		tok, key, err := h.c.accessToken(ctx, cfg, sent)
		if err != nil {
			return err
		}
		if tok != "" && tok != sent {
			return h.remember(tok, key)
		}
		return &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: http.StatusUnauthorized, Code: orCode(ch.errorCode, "invalid_token"),
			Message: "the server rejected the sign-in for " + cfg.ID + "; sign in again with: mcpgate auth " + cfg.ID}
	}
	if cfg.Grant.Machine() {
		if _, err := h.c.Login(ctx, *cfg, nil); err != nil {
			return err
		}
		return nil
	}
	msg := "not signed in to " + cfg.ID + "; sign in with: mcpgate auth " + cfg.ID
	if cfg.Auth == mcpgate.AuthBearer {
		msg = "no bearer token is stored for " + cfg.ID + "; store one with: mcpgate add " + cfg.ID + " URL --auth bearer --replace (token on stdin)"
	}
	return &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: http.StatusUnauthorized, Code: orCode(ch.errorCode, "login_required"), Message: msg}
}

// issuerMoved reports whether the server's protected resource metadata
// no longer lists the authorization server cfg's credential came from (it
// moved to another: SEP-2352), and names that issuer. Any doubt (no
// credential, metadata unreadable) is not a move.
func (c *Client) issuerMoved(ctx context.Context, cfg *mcpgate.ServerConfig, ch challenge) (string, bool) {
	cur, err := c.opts.Store.GetCredential(ctx, c.opts.Tenant, cfg.ID)
	if err != nil || cur.Kind != store.KindOAuth || cur.Issuer == "" || !bound(cur, cfg) {
		return "", false
	}
	md, err := c.discoverResource(ctx, cfg.URL, ch)
	if err != nil || slices.Contains(md.issuers, cur.Issuer) {
		return "", false
	}
	return cur.Issuer, true
}

// orCode is the challenge's error code (already checked by
// providerCode), else def.
func orCode(code, def string) string {
	if code != "" {
		return code
	}
	return def
}

// bound reports whether cred may be sent to cfg's server: only while the
// server is configured for the credential's kind (a bearer token stored
// before the server became auth oauth is not sent to it, nor a sign-in to
// a server that became auth bearer); a stored bearer token only to the URL
// it was stored for, an OAuth credential to a server URL within the
// resource it was issued for (the server URL itself, or the origin when
// the server's metadata names the origin), from the issuer pinned in the
// config if one is. A credential bound elsewhere is never used.
func bound(cred *store.Credential, cfg *mcpgate.ServerConfig) bool {
	switch {
	case cred.Kind == store.KindBearer && cfg.Auth == mcpgate.AuthBearer:
		return cred.Resource == canonicalResource(cfg.URL)
	case cred.Kind == store.KindOAuth && cfg.Auth == mcpgate.AuthOAuth:
		return within(cfg.URL, cred.Resource) && (cfg.Issuer == "" || cred.Issuer == cfg.Issuer)
	}
	return false
}

// fresh reports whether cred's access token may be sent as it is: it has
// no expiry, or more than its refresh margin left.
func (c *Client) fresh(cred *store.Credential) bool {
	return cred.AccessToken != "" && (cred.Expiry.IsZero() || cred.Expiry.After(c.now().Add(refreshMargin(cred))))
}

// refreshMargin is how long before its expiry cred's token is renewed:
// expirySkew, or a quarter of the token's lifetime when that is shorter.
// A fixed margin longer than the lifetime would renew a token at every
// request (a ten-second token with a thirty-second margin is never fresh);
// a quarter keeps a token in use for three quarters of its life. The
// lifetime is measured from UpdatedAt, which every write of new tokens
// sets when they arrive.
func refreshMargin(cred *store.Credential) time.Duration {
	if life := cred.Expiry.Sub(cred.UpdatedAt); !cred.UpdatedAt.IsZero() && life > 0 && life/4 < expirySkew {
		return life / 4
	}
	return expirySkew
}

// accessToken returns the token to send to cfg's server, renewing it
// (see renew) when it has expired or when rejected (the token the server
// refused) is still the stored one, and the DPoP key the token is bound
// to, if any (stored form). "" means there is no credential: the request
// goes without one and the server decides.
func (c *Client) accessToken(ctx context.Context, cfg *mcpgate.ServerConfig, rejected string) (tok, key string, err error) {
	cred, err := c.opts.Store.GetCredential(ctx, c.opts.Tenant, cfg.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", "", nil
	case err != nil:
		return "", "", storeError("reading the credential", err)
	case !bound(cred, cfg):
		c.logf(cfg.ID, "ignoring a credential of kind %s bound to another server URL or auth", cred.Kind)
		return "", "", nil
	case cred.Kind == store.KindBearer:
		if rejected != "" && rejected == cred.AccessToken {
			return "", "", &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: http.StatusUnauthorized, Code: "invalid_token",
				Message: "the server rejected the stored bearer token for " + cfg.ID}
		}
		return cred.AccessToken, "", nil
	case rejected == "" && c.fresh(cred):
		return cred.AccessToken, dpopKeyOf(cred), nil
	}
	next, err := c.renew(ctx, cfg, cred, rejected)
	if err != nil || next == nil {
		return "", "", err
	}
	return next.AccessToken, dpopKeyOf(next), nil
}

// dpopKeyOf is the key cred's access token is bound to, "" for a bearer
// token.
func dpopKeyOf(cred *store.Credential) string {
	if strings.EqualFold(cred.TokenType, "DPoP") {
		return cred.DPoPKey
	}
	return ""
}

// clientForRefresh finds the client that obtained cur.
func (c *Client) clientForRefresh(ctx context.Context, cfg *mcpgate.ServerConfig, cur *store.Credential, asm *authServer) (*clientAuth, error) {
	if cfg.ClientID != "" && cfg.ClientID == cur.ClientID {
		return c.configuredClient(cfg, asm)
	}
	if cfg.ClientMetadataURL != "" && cur.ClientID == cfg.ClientMetadataURL {
		return &clientAuth{id: cur.ClientID, method: "none"}, nil
	}
	reg, err := c.opts.Store.GetRegistration(ctx, c.opts.Tenant, cur.Issuer, registrationKey(cur.RedirectURI))
	switch {
	case err != nil && ctx.Err() != nil:
		// A store that could not answer in time has not lost the
		// registration: this is no reason to sign in again.
		return nil, &mcpgate.Error{Category: mcpgate.CategoryTimeout, Err: err,
			Message: "reading the client registration for " + cfg.ID + " took too long"}
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, storeError("reading the client registration", err)
	}
	if err != nil || reg.ClientID != cur.ClientID {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "login_required",
			Message: "the client registration behind the sign-in for " + cfg.ID + " is gone; sign in again with: mcpgate auth " + cfg.ID}
	}
	return &clientAuth{id: reg.ClientID, secret: reg.ClientSecret, method: reg.TokenEndpointAuthMethod}, nil
}

// stepUp records a 403 insufficient_scope challenge: the next sign-in asks
// for the union of the scopes already granted and those challenged (MCP
// 2026-07-28, SEP-2350), and the server moves to needs-auth. It stops
// asking, with an error a sign-in does not fix, when the server still
// refuses after the same scopes were asked for maxStepUps times in a row,
// or after maxStepUpChain step-ups in a row for any scopes. A challenge
// long after the last sign-in (a permission withdrawn since) starts
// afresh.
func (c *Client) stepUp(ctx context.Context, cfg *mcpgate.ServerConfig, challenged []string) error {
	var (
		want      []string
		made      int // step-up sign-ins in a row so far
		exhausted bool
	)
	_, err := c.opts.Store.UpdateCredential(ctx, c.opts.Tenant, cfg.ID, func(ctx context.Context, cur *store.Credential) (*store.Credential, error) {
		if cur == nil || !bound(cur, cfg) {
			want = union(nil, challenged)
			return cur, nil
		}
		next := *cur
		want = union(cur.Scopes, challenged)
		// The same step-up again: still owed (the authorization server did
		// not grant it), or granted and refused anyway.
		again := slices.Equal(cur.StepUpScopes, want) || (len(cur.StepUpScopes) == 0 && grantsAll(cur.Scopes, want))
		if cur.StepUpAt.IsZero() || c.now().Sub(cur.StepUpAt) > stepUpWindow {
			next.StepUpCount = 0
		}
		next.StepUpScopes = want
		made = next.StepUpCount
		exhausted = (again && made >= maxStepUps) || made >= maxStepUpChain
		return &next, nil
	})
	if err != nil {
		return err
	}
	need := sanitizeText("%s", strings.Join(want, " ")) // granted scopes are the authorization server's text
	if exhausted {
		return &mcpgate.Error{Category: mcpgate.CategoryHTTP, HTTPStatus: http.StatusForbidden, Code: "insufficient_scope",
			Message: "the server still refuses (HTTP 403 insufficient_scope, now asking for scope " + need + ") after " +
				strconv.Itoa(made) + " sign-ins for more scopes; mcpgate stops asking (check the account's permissions with the server's administrator)"}
	}
	return &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: http.StatusForbidden, Code: "insufficient_scope",
		Message: "the server needs scope " + need + "; sign in again with: mcpgate auth " + cfg.ID}
}

// union returns the scopes of a then those of b not in a, without repeats,
// sorted so the same set always compares equal.
func union(a, b []string) []string {
	var out []string
	for _, s := range slices.Concat(a, b) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// issuerMetadata caches discovered authorization server metadata. With
// defaults set, an issuer that publishes no metadata anywhere gets the
// default endpoints of MCP 2025-03-26 (see [legacyEndpoints]).
func (c *Client) issuerMetadata(ctx context.Context, issuer string, defaults bool) (*authServer, error) {
	c.mu.Lock()
	e, ok := c.asCache[issuer]
	c.mu.Unlock()
	if ok && c.now().Before(e.until) && (defaults || !e.defaults) {
		return e.asm, nil
	}
	asm, err := c.discoverIssuer(ctx, issuer)
	assumed := false
	if defaults && errors.Is(err, errNoAuthServerMetadata) {
		asm, err, assumed = legacyEndpoints(issuer), nil, true
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.asCache[issuer] = cachedASM{asm: asm, until: c.now().Add(time.Hour), defaults: assumed}
	c.mu.Unlock()
	return asm, nil
}

// serverMetadata is the metadata of the authorization server a
// credential of cfg's server came from. Only a server's own origin may
// stand in for an authorization server without metadata: that is what
// MCP 2025-03-26 does for a server without protected resource metadata.
func (c *Client) serverMetadata(ctx context.Context, cfg *mcpgate.ServerConfig, issuer string) (*authServer, error) {
	return c.issuerMetadata(ctx, issuer, issuer == legacyIssuer(cfg.URL))
}

type cachedASM struct {
	asm      *authServer
	until    time.Time
	defaults bool // legacyEndpoints, not published metadata
}
