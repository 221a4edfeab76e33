package fake

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// MetadataLocation says where an [AuthServer] serves its metadata, so tests
// can exercise each step of a client's discovery order.
type MetadataLocation string

const (
	// MetadataOAuth serves RFC 8414 metadata at
	// /.well-known/oauth-authorization-server with the issuer's path appended
	// (the path-insert form). The default.
	MetadataOAuth MetadataLocation = "oauth"
	// MetadataOpenID serves it only at /.well-known/openid-configuration with
	// the issuer's path appended (OpenID Connect Discovery, path-insert form).
	MetadataOpenID MetadataLocation = "openid"
	// MetadataOpenIDAppended serves it only at the issuer's path followed by
	// /.well-known/openid-configuration (OpenID Connect Discovery 1.0 as
	// written). Without an IssuerPath it is the same place as MetadataOpenID.
	MetadataOpenIDAppended MetadataLocation = "openid-appended"
)

// Grant types, as counted by [AuthServer.TokenRequests].
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
)

// Token endpoint authentication methods (RFC 7591 §2, RFC 7523).
const (
	AuthMethodNone          = "none"
	AuthMethodSecretBasic   = "client_secret_basic"
	AuthMethodSecretPost    = "client_secret_post"
	AuthMethodPrivateKeyJWT = "private_key_jwt"
)

// jwtBearerAssertion is the client_assertion_type of private_key_jwt (RFC 7523 §2.2).
const jwtBearerAssertion = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// codeTTL is how long an authorization code may wait for its exchange.
const codeTTL = time.Minute

// maxFormBytes bounds the bodies the authorization server reads.
const maxFormBytes = 64 << 10

// AuthOptions configures an [AuthServer]. The zero value (or a nil
// *AuthOptions) is an authorization server at the root of its origin with
// dynamic client registration, refresh-token rotation, revocation, one-hour
// access tokens and the scopes read, write, admin and offline_access.
type AuthOptions struct {
	// IssuerPath, e.g. "/tenant1", puts the issuer (and every endpoint) under
	// a path: the issuer is then http://127.0.0.1:<port>/tenant1 and its
	// metadata is at /.well-known/oauth-authorization-server/tenant1.
	IssuerPath string
	// MetadataAt chooses where the metadata is served; default [MetadataOAuth].
	// It is served at that one place only.
	MetadataAt MetadataLocation
	// AccessTTL is the lifetime of access tokens; default one hour. The
	// token response's expires_in is rounded up to whole seconds, at least 1.
	AccessTTL time.Duration
	// ExpiresInJSON, when set, is the JSON text of every token response's
	// expires_in member instead of AccessTTL in seconds (the tokens still
	// last AccessTTL): `"3599"` for a server that sends it as a string, as
	// some deployed ones do; `10000000000` for one that claims three
	// centuries; `"soon"` or `-5` for a broken one.
	ExpiresInJSON string
	// NoRotate turns refresh-token rotation off: a refresh answers without a
	// refresh_token (RFC 6749 §6 lets the client keep the one it has) and the
	// old one stays valid. By default every refresh issues a new refresh token,
	// the old one dies, and using a dead one again revokes the whole chain of
	// refresh tokens (RFC 9700 §4.14.2 reuse detection).
	NoRotate bool
	// Scopes is scopes_supported; default read, write, admin, offline_access.
	// Granted scopes are the requested ones that are in this list.
	Scopes []string
	// ClientCredentials are confidential clients allowed the
	// client_credentials grant, client ID → secret, authenticating with
	// client_secret_basic or client_secret_post.
	ClientCredentials map[string]string
	// JWTClients are clients allowed the client_credentials grant that
	// authenticate with private_key_jwt (RFC 7523): client ID → public key
	// (*ecdsa.PublicKey on P-256 for ES256, *rsa.PublicKey for RS256 or
	// PS256). The assertion's aud must be the issuer (RFC 7523bis): the
	// token endpoint's URL is refused.
	JWTClients map[string]crypto.PublicKey
	// NoDCR omits registration_endpoint: clients must be added with
	// [AuthServer.AddClient] (a "configured client ID").
	NoDCR bool
	// NoRevocation omits revocation_endpoint.
	NoRevocation bool
	// NoAccessTokenRevocation makes the revocation endpoint refuse access
	// tokens with 400 unsupported_token_type (RFC 7009 §2.2.1), as
	// servers whose access tokens are self-contained JWTs do: revoking a
	// refresh token then ends the grant's refreshes, but its access tokens
	// work until they expire.
	NoAccessTokenRevocation bool
	// ClientIDMetadataDocuments advertises client_id_metadata_document_supported
	// and accepts, at the authorize endpoint, a client_id that is an https URL
	// with a path (or, this being a fake, an http URL on a loopback address):
	// the document is fetched the first time, must name itself as client_id,
	// list the redirect_uri and describe a public client
	// (token_endpoint_auth_method "none" or absent).
	ClientIDMetadataDocuments bool
	// DPoP binds tokens to the key of the DPoP proof a token request
	// carries (RFC 9449): dpop_signing_alg_values_supported is ["ES256"],
	// proofs are checked (signature, htm, htu, iat, a fresh jti), the access
	// token comes with token_type DPoP, and a bound refresh token needs a
	// proof by the same key. A request without a proof gets a Bearer token.
	// Resources check bound tokens (see [Protection]).
	DPoP bool
	// DPoPNonce, with DPoP, makes the token endpoint require this nonce in
	// proofs: a proof without it is refused with use_dpop_nonce and the
	// nonce in a DPoP-Nonce header (RFC 9449 §8).
	DPoPNonce string
	// HTTPClient fetches client ID metadata documents; default a client with a
	// five-second timeout that does not follow redirects.
	HTTPClient *http.Client
}

// AuthClient is a client registered with an [AuthServer] ahead of time, the
// way a person registers one in a provider's console.
type AuthClient struct {
	ID string
	// Secret, when set, makes a confidential client; without it the client
	// is public (token_endpoint_auth_method "none").
	Secret string
	// AuthMethod is how a confidential client authenticates:
	// [AuthMethodSecretBasic] (the default) or [AuthMethodSecretPost].
	AuthMethod string
	// RedirectURIs are matched exactly, except that the port of a loopback
	// http redirect URI may differ (RFC 8252 §7.3).
	RedirectURIs []string
}

// AuthServer is an honest, strict OAuth 2.1 authorization server for MCP
// clients, on its own 127.0.0.1 origin over http: RFC 8414 metadata,
// dynamic client registration (RFC 7591), an authorize endpoint that approves
// at once (no login page) and redirects with code, state and iss (RFC 9207),
// PKCE with S256 only, resource indicators (RFC 8707) required at authorize,
// code exchange and refresh, refresh-token rotation, client_credentials with
// secrets or private_key_jwt (RFC 7523), and revocation (RFC 7009).
// Tokens are opaque random strings; errors follow RFC 6749 §5.2.
//
// A [Server] whose [Options].Auth is this server accepts its access tokens.
//
// All methods are safe for concurrent use.
type AuthServer struct {
	// Issuer is the issuer identifier, http://127.0.0.1:<port> followed by
	// IssuerPath.
	Issuer string
	// MetadataURL is where the metadata is served (see [MetadataLocation]).
	MetadataURL string
	// The endpoints advertised in the metadata. RegistrationEndpoint and
	// RevocationEndpoint are empty when turned off.
	AuthorizationEndpoint, TokenEndpoint, RegistrationEndpoint, RevocationEndpoint string

	opts      AuthOptions
	routes    string // the path the endpoints are under: IssuerPath, or another on a legacy server
	http      *httptest.Server
	transport *http.Transport // for the default HTTPClient
	done      chan struct{}   // closed by Close; releases hanging handlers
	once      sync.Once

	mu       sync.Mutex
	hooks    authHooks
	holds    map[AuthEndpoint]*hold
	clients  map[string]*authClient
	codes    map[string]*authCode
	tokens   map[string]*issuedToken
	jtis     map[string]time.Time // client ID + jti → assertion expiry, against replay
	dpopJTIs seenJTIs             // DPoP proofs seen at the token endpoint
	families int                  // grants issued so far; each token belongs to one

	dpopTokenRequests   int
	dpopNonceChallenges int

	workloads map[string]*ecdsa.PublicKey // trusted workload issuers (TrustWorkloads)
	idps      map[string]*ecdsa.PublicKey // trusted identity providers (IdP.Federate)

	issued         []string // access and refresh tokens, oldest first
	secrets        []string // everything a client must never print
	registrations  int
	authorizations int
	revocations    int
	fetches        int
	tokenRequests  map[string]int
	lastAuthorize  url.Values
	lastToken      map[string]url.Values
	lastRegister   map[string]any
}

// authHooks let the hostile variants bend one behaviour of an otherwise
// honest server. Nil hooks do nothing.
type authHooks struct {
	metadata     func(m map[string]any)                            // edits the metadata document
	clientID     func() string                                     // mints client IDs at registration
	redirect     func(q url.Values)                                // edits a successful authorize redirect
	beforeToken  func(w http.ResponseWriter, r *http.Request) bool // takes a token request over when it returns true
	tokenSuccess func(resp map[string]any)                         // edits a successful token response
}

type authClient struct {
	id, secret   string
	methods      []string // token endpoint authentication methods it may use
	redirectURIs []string
	grantTypes   []string
	key          crypto.PublicKey // private_key_jwt
}

func (c *authClient) can(grant string) bool { return slices.Contains(c.grantTypes, grant) }

type authCode struct {
	clientID, redirectURI, challenge, resource string
	scopes                                     []string
	expires                                    time.Time
	used                                       bool
	family                                     int // the grant its tokens belong to, once exchanged
}

type issuedToken struct {
	refresh  bool
	clientID string
	resource string
	scopes   []string
	expires  time.Time // access tokens only
	family   int
	revoked  bool   // revoked, or rotated away (refresh)
	rotated  bool   // a refresh token already used once
	jkt      string // the thumbprint of the DPoP key it is bound to, "" for a bearer token
}

// StartAuth starts an [AuthServer] for a test and stops it when the test
// ends. A nil opts means defaults.
func StartAuth(t testing.TB, opts *AuthOptions) *AuthServer {
	t.Helper()
	a, err := newAuthServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// NewAuth starts an [AuthServer] outside tests (for `mcpgate demo`); the
// caller must call [AuthServer.Close]. It panics on invalid options or if no
// loopback port can be opened.
func NewAuth(opts *AuthOptions) *AuthServer {
	a, err := newAuthServer(opts)
	if err != nil {
		panic(err)
	}
	return a
}

func newAuthServer(opts *AuthOptions) (*AuthServer, error) {
	a := &AuthServer{
		done:          make(chan struct{}),
		clients:       make(map[string]*authClient),
		codes:         make(map[string]*authCode),
		tokens:        make(map[string]*issuedToken),
		jtis:          make(map[string]time.Time),
		dpopJTIs:      make(seenJTIs),
		tokenRequests: make(map[string]int),
		lastToken:     make(map[string]url.Values),
	}
	if opts != nil {
		a.opts = *opts
		a.opts.Scopes = slices.Clone(opts.Scopes)
	}
	o := &a.opts
	if o.IssuerPath != "" && (!strings.HasPrefix(o.IssuerPath, "/") || strings.HasSuffix(o.IssuerPath, "/")) {
		return nil, fmt.Errorf("fake: IssuerPath %q must start with / and not end with one", o.IssuerPath)
	}
	switch o.MetadataAt {
	case "":
		o.MetadataAt = MetadataOAuth
	case MetadataOAuth, MetadataOpenID, MetadataOpenIDAppended:
	default:
		return nil, fmt.Errorf("fake: unknown MetadataAt %q", o.MetadataAt)
	}
	if o.AccessTTL <= 0 {
		o.AccessTTL = time.Hour
	}
	if o.ExpiresInJSON != "" && !json.Valid([]byte(o.ExpiresInJSON)) {
		return nil, fmt.Errorf("fake: ExpiresInJSON %q is not JSON", o.ExpiresInJSON)
	}
	if o.Scopes == nil {
		o.Scopes = []string{"read", "write", "admin", "offline_access"}
	}
	for id, secret := range opts.clientCredentials() {
		a.clients[id] = &authClient{id: id, secret: secret,
			methods: []string{AuthMethodSecretBasic, AuthMethodSecretPost}, grantTypes: []string{GrantClientCredentials}}
		a.secrets = append(a.secrets, secret)
	}
	for id, key := range opts.jwtClients() {
		if err := checkAssertionKey(key); err != nil {
			return nil, fmt.Errorf("fake: JWTClients[%q]: %w", id, err)
		}
		a.clients[id] = &authClient{id: id, key: key,
			methods: []string{AuthMethodPrivateKeyJWT}, grantTypes: []string{GrantClientCredentials}}
	}
	o.ClientCredentials, o.JWTClients = nil, nil // copied into a.clients
	if o.HTTPClient == nil {
		a.transport = http.DefaultTransport.(*http.Transport).Clone()
		o.HTTPClient = &http.Client{
			Transport:     a.transport,
			Timeout:       5 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}

	hs, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(a.serveHTTP))
	if err != nil {
		return nil, err
	}
	a.http = hs
	a.Issuer = base + o.IssuerPath
	switch o.MetadataAt {
	case MetadataOAuth:
		a.MetadataURL = base + "/.well-known/oauth-authorization-server" + o.IssuerPath
	case MetadataOpenID:
		a.MetadataURL = base + "/.well-known/openid-configuration" + o.IssuerPath
	case MetadataOpenIDAppended:
		a.MetadataURL = a.Issuer + "/.well-known/openid-configuration"
	}
	a.routes = o.IssuerPath
	a.AuthorizationEndpoint = a.Issuer + "/authorize"
	a.TokenEndpoint = a.Issuer + "/token"
	if !o.NoDCR {
		a.RegistrationEndpoint = a.Issuer + "/register"
	}
	if !o.NoRevocation {
		a.RevocationEndpoint = a.Issuer + "/revoke"
	}
	hs.Start()
	return a, nil
}

func (o *AuthOptions) clientCredentials() map[string]string {
	if o == nil {
		return nil
	}
	return o.ClientCredentials
}

func (o *AuthOptions) jwtClients() map[string]crypto.PublicKey {
	if o == nil {
		return nil
	}
	return o.JWTClients
}

// Close stops the server, releasing any request it holds (see
// [HostileTokenHang]), and waits for its handlers. It is safe to call more
// than once; [StartAuth] calls it when the test ends.
func (a *AuthServer) Close() {
	a.once.Do(func() {
		close(a.done)
		a.http.CloseClientConnections()
		a.http.Close()
		if a.transport != nil {
			a.transport.CloseIdleConnections()
		}
	})
}

// AddClient registers a client ahead of time. It may do the
// authorization_code and refresh_token grants, and client_credentials when
// it has a secret. Adding an existing ID replaces that client.
func (a *AuthServer) AddClient(c AuthClient) {
	ac := &authClient{
		id:           c.ID,
		secret:       c.Secret,
		redirectURIs: slices.Clone(c.RedirectURIs),
		grantTypes:   []string{GrantAuthorizationCode, GrantRefreshToken},
		methods:      []string{AuthMethodNone},
	}
	if c.Secret != "" {
		method := c.AuthMethod
		if method == "" {
			method = AuthMethodSecretBasic
		}
		ac.methods = []string{method}
		ac.grantTypes = append(ac.grantTypes, GrantClientCredentials)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clients[c.ID] = ac
	if c.Secret != "" {
		a.secrets = append(a.secrets, c.Secret)
	}
}

// DPoPTokenRequests returns how many token requests carried a DPoP proof
// (with AuthOptions.DPoP), and how many were refused for want of the
// server's nonce.
func (a *AuthServer) DPoPTokenRequests() (withProof, nonceChallenges int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dpopTokenRequests, a.dpopNonceChallenges
}

// Registrations returns how many clients dynamic registration has created.
func (a *AuthServer) Registrations() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registrations
}

// LastRegistration returns the client metadata of the latest dynamic
// registration request, as sent, or nil if there was none.
func (a *AuthServer) LastRegistration() map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastRegister == nil {
		return nil
	}
	out := make(map[string]any, len(a.lastRegister))
	for k, v := range a.lastRegister {
		out[k] = v
	}
	return out
}

// Authorizations returns how many requests reached the authorize endpoint,
// whatever their outcome.
func (a *AuthServer) Authorizations() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.authorizations
}

// TokenRequests returns how many requests reached the token endpoint with
// this grant_type ([GrantAuthorizationCode], [GrantRefreshToken],
// [GrantClientCredentials]), whatever their outcome.
func (a *AuthServer) TokenRequests(grant string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokenRequests[grant]
}

// Revocations returns how many revocation requests from an authenticated
// client the server has answered (revoking something or not, per RFC 7009).
func (a *AuthServer) Revocations() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.revocations
}

// MetadataDocumentFetches returns how many client ID metadata documents the
// server has fetched.
func (a *AuthServer) MetadataDocumentFetches() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fetches
}

// IssuedTokens returns every access and refresh token issued so far, oldest
// first, so tests can check none of them leaks into output.
func (a *AuthServer) IssuedTokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.issued)
}

// Secrets returns every value a client must never print or log: the issued
// tokens, authorization codes, client secrets, and the PKCE verifiers and
// state values clients sent.
func (a *AuthServer) Secrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.secrets)
}

// LastAuthorizeRequest returns the query of the latest request to the
// authorize endpoint, or nil if there was none.
func (a *AuthServer) LastAuthorizeRequest() url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneValues(a.lastAuthorize)
}

// LastTokenRequest returns the form of the latest token request with this
// grant_type, or nil if there was none. Credentials sent in the
// Authorization header are not part of it.
func (a *AuthServer) LastTokenRequest(grant string) url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneValues(a.lastToken[grant])
}

// ExpireAccessTokens makes every access token issued so far expired, so the
// next use gets 401 and a client must refresh.
func (a *AuthServer) ExpireAccessTokens() {
	a.mu.Lock()
	defer a.mu.Unlock()
	past := time.Now().Add(-time.Second)
	for _, t := range a.tokens {
		if !t.refresh {
			t.expires = past
		}
	}
}

// RevokeAll revokes every token issued so far, access and refresh, as when a
// person withdraws the grant: the resource answers 401 and a refresh gets
// invalid_grant. Tokens issued afterwards are unaffected.
func (a *AuthServer) RevokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tokens {
		t.revoked = true
	}
}

// Mint issues an access token and a refresh token for a registered client
// without any flow, as if it had logged in, so a test can seed stored
// credentials. Scopes outside scopes_supported are dropped. The refresh
// token works only if the client may use the refresh_token grant.
func (a *AuthServer) Mint(clientID, resource string, scopes ...string) (accessToken, refreshToken string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.families++
	resp := a.issueLocked(clientID, resource, a.grantable(strings.Join(scopes, " ")), a.families, true, "")
	return resp["access_token"].(string), resp["refresh_token"].(string)
}

// verifyAccess reports whether token is a live access token of this server,
// for which resource and scopes, and the thumbprint of the DPoP key it is
// bound to ("" for a bearer token).
func (a *AuthServer) verifyAccess(token string) (resource string, scopes []string, jkt string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tokens[token]
	if t == nil || t.refresh || t.revoked || !time.Now().Before(t.expires) {
		return "", nil, "", false
	}
	return t.resource, slices.Clone(t.scopes), t.jkt, true
}

// AuthEndpoint names an endpoint of an [AuthServer], for [AuthServer.Hold].
type AuthEndpoint string

// The endpoints [AuthServer.Hold] can hold.
const (
	AuthMetadataEndpoint AuthEndpoint = "metadata"
	AuthTokenEndpoint    AuthEndpoint = "token"
)

type hold struct {
	arrived chan struct{}
	release chan struct{}
}

// Hold makes the endpoint hold every request it receives, before reading
// it, until release is called, the request's client gives up, or the
// server closes: a slow or hanging authorization server. arrived receives
// a value for each request held (up to 64 unread). Requests arriving
// after release go through. Calling release again does nothing.
func (a *AuthServer) Hold(e AuthEndpoint) (arrived <-chan struct{}, release func()) {
	h := &hold{arrived: make(chan struct{}, 64), release: make(chan struct{})}
	a.mu.Lock()
	if a.holds == nil {
		a.holds = make(map[AuthEndpoint]*hold)
	}
	a.holds[e] = h
	a.mu.Unlock()
	var once sync.Once
	return h.arrived, func() {
		once.Do(func() {
			a.mu.Lock()
			if a.holds[e] == h {
				delete(a.holds, e)
			}
			a.mu.Unlock()
			close(h.release)
		})
	}
}

// wait holds r while e is held (see Hold).
func (a *AuthServer) wait(e AuthEndpoint, r *http.Request) {
	a.mu.Lock()
	h := a.holds[e]
	a.mu.Unlock()
	if h == nil {
		return
	}
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	select {
	case <-h.release:
	case <-r.Context().Done():
	case <-a.done:
	}
}

func (a *AuthServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case a.MetadataURL != "" && path == urlPath(a.MetadataURL):
		a.wait(AuthMetadataEndpoint, r)
	case path == a.routes+"/token":
		a.wait(AuthTokenEndpoint, r)
	}
	if r.Context().Err() != nil {
		return
	}
	switch {
	case a.MetadataURL != "" && path == urlPath(a.MetadataURL):
		a.serveMetadata(w, r)
	case path == a.routes+"/authorize":
		a.serveAuthorize(w, r)
	case path == a.routes+"/token":
		a.serveToken(w, r)
	case path == a.routes+"/register" && !a.opts.NoDCR:
		a.serveRegister(w, r)
	case path == a.routes+"/revoke" && !a.opts.NoRevocation:
		a.serveRevoke(w, r)
	default:
		http.NotFound(w, r)
	}
}

// urlPath is the path of an absolute URL this package made.
func urlPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}

func (a *AuthServer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if !allowOnly(w, r, http.MethodGet) {
		return
	}
	methods := []string{AuthMethodNone, AuthMethodSecretBasic, AuthMethodSecretPost}
	if a.hasJWTClients() {
		methods = append(methods, AuthMethodPrivateKeyJWT)
	}
	m := map[string]any{
		"issuer":                                         a.Issuer,
		"authorization_endpoint":                         a.AuthorizationEndpoint,
		"token_endpoint":                                 a.TokenEndpoint,
		"scopes_supported":                               a.opts.Scopes,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{GrantAuthorizationCode, GrantRefreshToken, GrantClientCredentials},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          methods,
		"authorization_response_iss_parameter_supported": true,
	}
	if slices.Contains(methods, AuthMethodPrivateKeyJWT) {
		m["token_endpoint_auth_signing_alg_values_supported"] = []string{"ES256", "RS256", "PS256"}
	}
	if a.RegistrationEndpoint != "" {
		m["registration_endpoint"] = a.RegistrationEndpoint
	}
	if a.RevocationEndpoint != "" {
		m["revocation_endpoint"] = a.RevocationEndpoint
		m["revocation_endpoint_auth_methods_supported"] = methods
	}
	if a.opts.ClientIDMetadataDocuments {
		m["client_id_metadata_document_supported"] = true
	}
	if a.opts.DPoP {
		m["dpop_signing_alg_values_supported"] = []string{"ES256"}
	}
	a.mu.Lock()
	if len(a.workloads) > 0 || len(a.idps) > 0 {
		m["grant_types_supported"] = append(m["grant_types_supported"].([]string), GrantJWTBearer)
	}
	a.mu.Unlock()
	a.mu.Lock()
	edit := a.hooks.metadata
	a.mu.Unlock()
	if edit != nil {
		edit(m)
	}
	writeJSON(w, http.StatusOK, m)
}

// allowOnly answers 405 unless r uses method, and reports whether it does.
func allowOnly(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func (a *AuthServer) hasJWTClients() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.clients {
		if c.key != nil {
			return true
		}
	}
	return false
}

// serveRegister is dynamic client registration (RFC 7591).
func (a *AuthServer) serveRegister(w http.ResponseWriter, r *http.Request) {
	if !allowOnly(w, r, http.MethodPost) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
	if err != nil || len(body) > maxFormBytes {
		registrationError(w, "invalid_client_metadata", "the request body is unreadable or too large")
		return
	}
	var req struct {
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		GrantTypes              []string `json:"grant_types"`
		ResponseTypes           []string `json:"response_types"`
		ClientName              string   `json:"client_name"`
		Scope                   string   `json:"scope"`
		ApplicationType         *string  `json:"application_type"`
	}
	var sent map[string]any
	if err := json.Unmarshal(body, &req); err != nil || json.Unmarshal(body, &sent) != nil {
		registrationError(w, "invalid_client_metadata", "the body is not a JSON client metadata object")
		return
	}
	a.mu.Lock()
	a.lastRegister = sent
	a.mu.Unlock()
	if req.ApplicationType != nil {
		if err := checkApplicationType(*req.ApplicationType, req.RedirectURIs); err != nil {
			registrationError(w, "invalid_redirect_uri", err.Error())
			return
		}
	}
	method := req.TokenEndpointAuthMethod
	if method == "" {
		method = AuthMethodSecretBasic // RFC 7591 §2
	}
	if method != AuthMethodNone && method != AuthMethodSecretBasic && method != AuthMethodSecretPost {
		registrationError(w, "invalid_client_metadata", "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
		return
	}
	grants := req.GrantTypes
	if grants == nil {
		grants = []string{GrantAuthorizationCode}
	}
	for _, g := range grants {
		if g != GrantAuthorizationCode && g != GrantRefreshToken && g != GrantClientCredentials {
			registrationError(w, "invalid_client_metadata", "unsupported grant type "+g)
			return
		}
	}
	if slices.Contains(grants, GrantClientCredentials) && method == AuthMethodNone {
		registrationError(w, "invalid_client_metadata", "client_credentials needs a confidential client")
		return
	}
	responseTypes := req.ResponseTypes
	if responseTypes == nil {
		responseTypes = []string{"code"}
	}
	if slices.Contains(grants, GrantAuthorizationCode) {
		if !slices.Equal(responseTypes, []string{"code"}) {
			registrationError(w, "invalid_client_metadata", `response_types must be ["code"]`)
			return
		}
		if len(req.RedirectURIs) == 0 {
			registrationError(w, "invalid_redirect_uri", "redirect_uris is required")
			return
		}
	}
	for _, u := range req.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			registrationError(w, "invalid_redirect_uri", err.Error())
			return
		}
	}

	a.mu.Lock()
	mint := a.hooks.clientID
	a.mu.Unlock()
	id := "client-" + rand.Text()
	if mint != nil {
		id = mint()
	}
	c := &authClient{id: id, methods: []string{method}, redirectURIs: req.RedirectURIs, grantTypes: grants}
	resp := map[string]any{
		"client_id":                  id,
		"client_id_issued_at":        time.Now().Unix(),
		"redirect_uris":              req.RedirectURIs,
		"token_endpoint_auth_method": method,
		"grant_types":                grants,
		"response_types":             responseTypes,
	}
	if method != AuthMethodNone {
		c.secret = "secret-" + rand.Text()
		resp["client_secret"] = c.secret
		resp["client_secret_expires_at"] = 0
	}
	if req.ClientName != "" {
		resp["client_name"] = req.ClientName
	}
	if req.Scope != "" {
		resp["scope"] = req.Scope
	}
	a.mu.Lock()
	a.clients[id] = c
	a.registrations++
	if c.secret != "" {
		a.secrets = append(a.secrets, c.secret)
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, resp)
}

// checkApplicationType holds a registration to what its application_type
// says (OpenID Connect Dynamic Client Registration §2, MCP SEP-837): a
// native client redirects to a loopback http address or a custom scheme,
// a web client to https on a host that is not loopback.
func checkApplicationType(appType string, redirectURIs []string) error {
	if appType != "native" && appType != "web" {
		return fmt.Errorf("application_type %q must be native or web", appType)
	}
	for _, raw := range redirectURIs {
		u, err := url.Parse(raw)
		if err != nil {
			continue // checkRedirectURI says why
		}
		loopback := isLoopbackHost(u.Hostname())
		switch {
		case appType == "native" && u.Scheme == "https" && !loopback:
			return fmt.Errorf("a native client may not redirect to %s (https on a web host): register it as application_type web", raw)
		case appType == "web" && (u.Scheme != "https" || loopback):
			return fmt.Errorf("a web client must redirect to https on a host that is not loopback, not %s: register it as application_type native", raw)
		}
	}
	return nil
}

func registrationError(w http.ResponseWriter, code, description string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description})
}

// checkRedirectURI accepts what an MCP client may register: https, or http on
// a loopback host with a path (RFC 8252 §7.3), never with a fragment.
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("redirect URI %q is not an absolute URL without fragment", raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		if u.Path == "" {
			return fmt.Errorf("loopback redirect URI %q has no path", raw)
		}
		return nil
	}
	return fmt.Errorf("redirect URI %q must be https, or http on a loopback address", raw)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redirectMatches compares a redirect URI with a registered one: exactly,
// except that a loopback http redirect URI may use any port (RFC 8252 §7.3),
// since a native client listens on whatever port it gets.
func redirectMatches(registered, got string) bool {
	if registered == got {
		return true
	}
	r, err1 := url.Parse(registered)
	g, err2 := url.Parse(got)
	if err1 != nil || err2 != nil {
		return false
	}
	return r.Scheme == "http" && g.Scheme == "http" && isLoopbackHost(r.Hostname()) &&
		r.Hostname() == g.Hostname() && r.User == nil && g.User == nil &&
		r.Path == g.Path && r.RawQuery == g.RawQuery && g.Fragment == "" && r.Fragment == ""
}

// serveAuthorize approves every valid request at once.
func (a *AuthServer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	a.authorizations++
	a.lastAuthorize = cloneValues(q)
	if s := q.Get("state"); s != "" {
		a.secrets = append(a.secrets, s)
	}
	a.mu.Unlock()
	if !allowOnly(w, r, http.MethodGet) {
		return
	}

	// Until client and redirect URI are known good, errors must not redirect
	// (RFC 6749 §4.1.2.1): they are shown to the person instead.
	clientID, redirectURI := q.Get("client_id"), q.Get("redirect_uri")
	if clientID == "" || len(q["client_id"]) > 1 {
		http.Error(w, "authorization failed: client_id is missing or repeated", http.StatusBadRequest)
		return
	}
	c, err := a.authorizeClient(r, clientID)
	if err != nil {
		http.Error(w, "authorization failed: "+err.Error(), http.StatusBadRequest)
		return
	}
	if redirectURI == "" || len(q["redirect_uri"]) > 1 || !slices.ContainsFunc(c.redirectURIs, func(reg string) bool { return redirectMatches(reg, redirectURI) }) {
		http.Error(w, "authorization failed: redirect_uri is missing or not registered for this client", http.StatusBadRequest)
		return
	}

	fail := func(code, description string) {
		back, _ := url.Parse(redirectURI)
		v := back.Query()
		v.Set("error", code)
		v.Set("error_description", description)
		if s := q.Get("state"); s != "" {
			v.Set("state", s)
		}
		v.Set("iss", a.Issuer)
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
	for name, vs := range q {
		if len(vs) > 1 {
			fail("invalid_request", name+" is repeated")
			return
		}
	}
	if !c.can(GrantAuthorizationCode) {
		fail("unauthorized_client", "this client may not use the authorization code grant")
		return
	}
	if q.Get("response_type") != "code" {
		fail("unsupported_response_type", "response_type must be code")
		return
	}
	challenge := q.Get("code_challenge")
	if q.Get("code_challenge_method") != "S256" {
		fail("invalid_request", "code_challenge_method must be S256")
		return
	}
	if len(challenge) != 43 || strings.Trim(challenge, base64URLAlphabet) != "" {
		fail("invalid_request", "code_challenge must be a base64url SHA-256 digest")
		return
	}
	resource := q.Get("resource")
	if resource == "" {
		fail("invalid_request", "resource is required (RFC 8707)")
		return
	}
	if !validResource(resource) {
		fail("invalid_target", "resource must be an absolute URI without a fragment")
		return
	}

	code := "code-" + rand.Text()
	a.mu.Lock()
	a.codes[code] = &authCode{
		clientID:    c.id,
		redirectURI: redirectURI,
		challenge:   challenge,
		resource:    resource,
		scopes:      a.grantable(q.Get("scope")),
		expires:     time.Now().Add(codeTTL),
	}
	a.secrets = append(a.secrets, code)
	edit := a.hooks.redirect
	a.mu.Unlock()

	back, _ := url.Parse(redirectURI)
	v := back.Query()
	v.Set("code", code)
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	v.Set("iss", a.Issuer)
	if edit != nil {
		edit(v)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func validResource(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme != "" && u.Host != "" && !strings.Contains(raw, "#")
}

// authorizeClient finds the client of an authorize request: a registered
// one, or one described by a client ID metadata document.
func (a *AuthServer) authorizeClient(r *http.Request, clientID string) (*authClient, error) {
	a.mu.Lock()
	c := a.clients[clientID]
	a.mu.Unlock()
	if c != nil {
		return c, nil
	}
	if a.opts.ClientIDMetadataDocuments && isDocumentURL(clientID) {
		return a.fetchClientDocument(r, clientID)
	}
	return nil, errors.New("unknown client_id")
}

func isDocumentURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil || u.Path == "" || u.Path == "/" {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http" && isLoopbackHost(u.Hostname())
}

// fetchClientDocument fetches and checks a client ID metadata document, and
// registers the public client it describes: a document is fetched at the
// first authorize request naming it, then remembered.
func (a *AuthServer) fetchClientDocument(r *http.Request, clientID string) (*authClient, error) {
	a.mu.Lock()
	a.fetches++
	a.mu.Unlock()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, clientID, nil)
	if err != nil {
		return nil, errors.New("bad client_id URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, errors.New("fetching the client ID metadata document failed")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFormBytes+1))
	if resp.StatusCode != http.StatusOK || err != nil || len(body) > maxFormBytes {
		return nil, fmt.Errorf("fetching the client ID metadata document answered %s", resp.Status)
	}
	var doc struct {
		ClientID                string   `json:"client_id"`
		RedirectURIs            []string `json:"redirect_uris"`
		GrantTypes              []string `json:"grant_types"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, errors.New("the client ID metadata document is not JSON")
	}
	if doc.ClientID != clientID {
		return nil, errors.New("the client ID metadata document names another client_id")
	}
	if doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != AuthMethodNone {
		return nil, errors.New("a client ID metadata document must describe a public client")
	}
	if len(doc.RedirectURIs) == 0 {
		return nil, errors.New("the client ID metadata document lists no redirect_uris")
	}
	for _, u := range doc.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, err
		}
	}
	grants := doc.GrantTypes
	if grants == nil {
		grants = []string{GrantAuthorizationCode}
	}
	c := &authClient{id: clientID, methods: []string{AuthMethodNone}, redirectURIs: doc.RedirectURIs, grantTypes: grants}
	a.mu.Lock()
	a.clients[clientID] = c
	a.mu.Unlock()
	return c, nil
}

// grantable returns the requested scopes that are supported, in request
// order, without repeats.
func (a *AuthServer) grantable(requested string) []string {
	var out []string
	for _, s := range strings.Fields(requested) {
		if slices.Contains(a.opts.Scopes, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
