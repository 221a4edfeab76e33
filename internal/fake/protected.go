package fake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ResourceMetadataPath is where a [Server] protected by an [AuthServer]
// serves its protected resource metadata: RFC 9728's path-aware location
// for the /mcp endpoint.
const ResourceMetadataPath = "/.well-known/oauth-protected-resource" + Endpoint

// rootResourceMetadataPath is RFC 9728's location for a resource at the root
// of its origin, used with [Options].RootResourceMetadata.
const rootResourceMetadataPath = "/.well-known/oauth-protected-resource"

// ChallengeScope is the scope a protected [Server] names in its 401
// challenges (unless [Options].OmitChallengeScope).
const ChallengeScope = "read"

// protection is the OAuth state of a protected Server, guarded by Server.mu.
type protection struct {
	hooks      resourceHooks
	forbidden  int
	shifts     int // scopes ShiftingScope has asked for
	challenged []Challenged
	dpopJTIs   seenJTIs
	dpop       DPoPCounts
}

// DPoPCounts are what a protected [Server] saw of DPoP-bound tokens.
type DPoPCounts struct {
	Accepted        int // requests with a bound token and a valid proof
	NonceChallenges int // refused for want of the server's nonce
	Refused         int // a bound token without a valid proof (or as Bearer)
}

// Challenged is a request a protected [Server] answered 401: what it asked
// for, as its body and headers said.
type Challenged struct {
	Method          string // the JSON-RPC method, "" for none
	ProtocolVersion string // the MCP-Protocol-Version header
	MethodHeader    string // the Mcp-Method header
	Token           bool   // it carried an access token (one the server refused)
}

// resourceHooks let the hostile variants bend one behaviour of an honest
// protected server.
type resourceHooks struct {
	metadataURL string                                     // resource_metadata in challenges instead of ours
	noMetadata  bool                                       // our own well-known location answers 404
	metadata    func(m *oauthex.ProtectedResourceMetadata) // edits the metadata
	also        []*AuthServer                              // further servers whose access tokens are accepted
	protection  Protection
	legacy      bool        // Auth's endpoints are served on our origin (see StartLegacy)
	movedTo     *AuthServer // replaces Options.Auth (see MoveAuth)
}

// Protection describes how a protected [Server] identifies itself and what
// it asks of clients beyond what its [Options] say, the way real servers
// differ from one another. The zero value changes nothing. Install it with
// [Server.Protect].
type Protection struct {
	// OriginResource makes the server a protected resource identified by
	// its origin, http://127.0.0.1:<port> (no path, no trailing slash), as
	// a server with one document for all its endpoints is: the metadata is
	// served at the root well-known location
	// /.well-known/oauth-protected-resource naming the origin as its
	// resource (RFC 9728 §3.1), and the server accepts access tokens issued
	// for exactly the origin.
	OriginResource bool
	// OpenInitialize lets initialize and notifications through without a
	// token, as servers that protect only what a session does: every other
	// request still needs one.
	OpenInitialize bool
	// RefuseDiscover answers server/discover with 400 before looking at
	// the token, as a session-era server behind a gateway that passes only
	// the methods it knows.
	RefuseDiscover bool
	// ChallengeMissingOnly makes a 403 insufficient_scope name only the
	// scope the call lacks, not those the token holds: a client must ask
	// for the union itself (MCP 2026-07-28).
	ChallengeMissingOnly bool
	// DPoP makes the server accept only DPoP-bound tokens (RFC 9449 §7):
	// presented with the DPoP scheme, each request with a fresh proof by
	// the token's key (htm, htu of the endpoint, ath, iat, an unused jti).
	// Its challenges use the DPoP scheme alone. Tokens come from an
	// [AuthServer] with AuthOptions.DPoP.
	DPoP bool
	// DPoPNonce, with DPoP, makes every proof carry this nonce: a request
	// without it is refused with 401 use_dpop_nonce and the nonce in a
	// DPoP-Nonce header (RFC 9449 §9).
	DPoPNonce string
	// NeverEnoughScope refuses every call of a tool named in ToolScopes
	// with 403 insufficient_scope, even when the token holds the scope: a
	// server a client must stop signing in to again and again.
	NeverEnoughScope bool
	// ShiftingScope refuses every call of a tool named in ToolScopes with
	// 403 insufficient_scope naming a scope it never named before (the
	// tool's scope followed by -1, -2, …, which no authorization server
	// grants): a server that keeps asking for something new, which a
	// client must give up on all the same.
	ShiftingScope bool
}

// Protect installs p. Call it before the server's URL is handed to a
// client; it panics when the server is not protected by an [AuthServer].
func (s *Server) Protect(p Protection) {
	if s.opts.Auth == nil {
		panic("fake: Protect needs Options.Auth")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prot.hooks.protection = p
}

// origin is the server's scheme and host, http://127.0.0.1:<port>.
func (s *Server) origin() string { return strings.TrimSuffix(s.URL, Endpoint) }

// resourceID is the resource identifier the server accepts tokens for.
func (s *Server) resourceID(h resourceHooks) string {
	if h.protection.OriginResource {
		return s.origin()
	}
	return s.URL
}

// metadataPath is where the server serves its protected resource metadata.
func (s *Server) metadataPath(h resourceHooks) string {
	if s.opts.RootResourceMetadata || h.protection.OriginResource {
		return rootResourceMetadataPath
	}
	return ResourceMetadataPath
}

// checkAuthOptions validates the OAuth-related [Options] and copies the maps
// the caller could change later.
func checkAuthOptions(o *Options) error {
	if o.Auth == nil {
		if o.ToolScopes != nil || o.OmitResourceMetadata || o.RootResourceMetadata || o.OmitChallengeScope {
			return errors.New("fake: ToolScopes and the resource metadata options need Auth")
		}
		return nil
	}
	if o.BearerToken != "" {
		return errors.New("fake: BearerToken and Auth are exclusive")
	}
	scopes := make(map[string]string, len(o.ToolScopes))
	for tool, scope := range o.ToolScopes {
		scopes[tool] = scope
	}
	o.ToolScopes = scopes
	return nil
}

// addProtectedCatalog adds the tool that only a protected server has.
func addProtectedCatalog(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "admin_reset",
		Description: "Resets the fake server's admin state. Needs the scope Options.ToolScopes names for it.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
		return textResult("reset done"), nil, nil
	})
}

// ResourceMetadataURL returns where the server's protected resource metadata
// is served (and what its 401 challenges point at), or "" if it is not
// protected by an [AuthServer].
func (s *Server) ResourceMetadataURL() string {
	if s.opts.Auth == nil {
		return ""
	}
	s.mu.Lock()
	hooks := s.prot.hooks
	s.mu.Unlock()
	return s.origin() + s.metadataPath(hooks)
}

// MoveAuth moves the server to another authorization server, as when an
// organisation changes identity provider: from now on its metadata lists
// only to, and only to's access tokens are accepted; those of the one
// before are refused with 401 invalid_token.
func (s *Server) MoveAuth(to *AuthServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prot.hooks.movedTo = to
}

// auth is the authorization server whose tokens the server accepts first.
func (s *Server) auth(h resourceHooks) *AuthServer {
	if h.movedTo != nil {
		return h.movedTo
	}
	return s.opts.Auth
}

// DPoP returns what the server saw of DPoP-bound tokens.
func (s *Server) DPoP() DPoPCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prot.dpop
}

// Challenges returns the requests answered 401, oldest first.
func (s *Server) Challenges() []Challenged {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.prot.challenged)
}

// Forbidden returns how many requests were refused with 403
// insufficient_scope.
func (s *Server) Forbidden() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prot.forbidden
}

// setResourceHooks installs hostile behaviour before the server's URL is
// handed out.
func (s *Server) setResourceHooks(h resourceHooks) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prot.hooks = h
}

// LegacyAuth says what a server of MCP 2025-03-26 (no protected resource
// metadata; its origin is its authorization server) publishes about its
// authorization server.
type LegacyAuth int

const (
	// LegacyMetadata publishes RFC 8414 metadata at the origin's
	// /.well-known/oauth-authorization-server, whose issuer is the origin
	// and whose endpoints are under /oauth, not at the default paths: a
	// client must use what the metadata says.
	LegacyMetadata LegacyAuth = iota + 1
	// LegacyDefaults publishes nothing: the endpoints are the defaults
	// /authorize, /token and /register at the origin.
	LegacyDefaults
)

// StartLegacy starts a protected [Server] of MCP 2025-03-26 and its
// authorization server for a test, stopping both when it ends: no
// protected resource metadata anywhere, challenges without
// resource_metadata or scope, and the authorization server of opts
// answering on the server's own origin (its issuer), as mode says. opts
// must not set IssuerPath or MetadataAt.
func StartLegacy(t testing.TB, mode LegacyAuth, opts *AuthOptions) (*Server, *AuthServer) {
	t.Helper()
	if opts != nil && (opts.IssuerPath != "" || opts.MetadataAt != "") {
		t.Fatal("fake: StartLegacy decides IssuerPath and MetadataAt")
	}
	a := StartAuth(t, opts)
	s := Start(t, &Options{Auth: a, OmitResourceMetadata: true, OmitChallengeScope: true})
	origin := s.origin()
	a.mu.Lock()
	a.Issuer = origin
	switch mode {
	case LegacyMetadata:
		a.routes = "/oauth"
		a.MetadataURL = origin + "/.well-known/oauth-authorization-server"
	case LegacyDefaults:
		a.routes = ""
		a.MetadataURL = ""
	default:
		a.mu.Unlock()
		t.Fatalf("fake: unknown LegacyAuth %d", mode)
	}
	a.AuthorizationEndpoint = origin + a.routes + "/authorize"
	a.TokenEndpoint = origin + a.routes + "/token"
	if a.RegistrationEndpoint != "" {
		a.RegistrationEndpoint = origin + a.routes + "/register"
	}
	if a.RevocationEndpoint != "" {
		a.RevocationEndpoint = origin + a.routes + "/revoke"
	}
	a.mu.Unlock()
	s.setResourceHooks(resourceHooks{noMetadata: true, legacy: true})
	return s, a
}

// serveResourceMetadata answers a request for the protected resource
// metadata (or, on a legacy server, for its authorization server) and
// reports whether r was one.
func (s *Server) serveResourceMetadata(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	hooks := s.prot.hooks
	s.mu.Unlock()
	if hooks.legacy && r.URL.Path != Endpoint {
		s.opts.Auth.serveHTTP(w, r)
		return true
	}
	if r.URL.Path != s.metadataPath(hooks) {
		return false
	}
	if hooks.noMetadata {
		http.NotFound(w, r)
		return true
	}
	if !allowOnly(w, r, http.MethodGet) {
		return true
	}
	writeJSON(w, http.StatusOK, s.resourceMetadata(hooks))
	return true
}

// resourceMetadata is the server's RFC 9728 document, hooks applied.
func (s *Server) resourceMetadata(hooks resourceHooks) *oauthex.ProtectedResourceMetadata {
	m := &oauthex.ProtectedResourceMetadata{
		Resource:               s.resourceID(hooks),
		AuthorizationServers:   []string{s.auth(hooks).Issuer},
		ScopesSupported:        slices.DeleteFunc(slices.Clone(s.auth(hooks).opts.Scopes), func(sc string) bool { return sc == "offline_access" }),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Fake MCP server",
	}
	for _, a := range hooks.also {
		m.AuthorizationServers = append(m.AuthorizationServers, a.Issuer)
	}
	if hooks.metadata != nil {
		hooks.metadata(m)
	}
	return m
}

// checkAccessToken enforces OAuth on a request to the MCP endpoint: a live
// access token of the AuthServer for exactly this server's URL (else 401),
// and for tools/call the scope ToolScopes names for the tool (else 403
// insufficient_scope). It reports whether the request may go on.
func (s *Server) checkAccessToken(w http.ResponseWriter, r *http.Request, msgs []envelope) bool {
	s.mu.Lock()
	hooks := s.prot.hooks
	s.mu.Unlock()

	if hooks.protection.RefuseDiscover && slices.ContainsFunc(msgs, func(m envelope) bool { return m.Method == "server/discover" }) {
		http.Error(w, "unknown method", http.StatusBadRequest)
		return false
	}
	if hooks.protection.OpenInitialize && len(msgs) > 0 && !slices.ContainsFunc(msgs, func(m envelope) bool {
		return m.Method != "initialize" && !strings.HasPrefix(m.Method, "notifications/")
	}) {
		return true
	}

	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	presented := (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "DPoP")) && token != ""
	var (
		resource, jkt string
		scopes        []string
		ok            bool
	)
	if presented {
		for _, a := range append([]*AuthServer{s.auth(hooks)}, hooks.also...) {
			if resource, scopes, jkt, ok = a.verifyAccess(token); ok {
				break
			}
		}
	}
	code := ""
	if presented {
		code = "invalid_token"
	}
	if ok && resource == s.resourceID(hooks) {
		var nonce string
		code, nonce = s.checkDPoP(hooks, r, scheme, token, jkt)
		if code != "" {
			ok = false
			if nonce != "" {
				w.Header().Set("DPoP-Nonce", nonce)
			}
		}
	}
	if !ok || resource != s.resourceID(hooks) {
		var want []string
		if !s.opts.OmitChallengeScope {
			want = []string{ChallengeScope}
		}
		c := Challenged{ProtocolVersion: r.Header.Get("MCP-Protocol-Version"), MethodHeader: r.Header.Get("Mcp-Method"), Token: presented}
		if len(msgs) > 0 {
			c.Method = msgs[0].Method
		}
		s.mu.Lock()
		s.unauthorized++
		s.prot.challenged = append(s.prot.challenged, c)
		s.mu.Unlock()
		w.Header().Set("WWW-Authenticate", s.challenge(hooks, code, want))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return false
	}

	for _, m := range msgs {
		if m.Method != "tools/call" {
			continue
		}
		var params struct {
			Name string `json:"name"`
		}
		json.Unmarshal(m.Params, &params)
		need := s.opts.ToolScopes[params.Name]
		if need == "" || (slices.Contains(scopes, need) && !hooks.protection.NeverEnoughScope && !hooks.protection.ShiftingScope) {
			continue
		}
		if hooks.protection.ShiftingScope {
			s.mu.Lock()
			s.prot.shifts++
			need += "-" + strconv.Itoa(s.prot.shifts)
			s.mu.Unlock()
		}
		// Ask for what the token has plus what is missing, so a step-up does
		// not lose the scopes the client already holds (MCP 2025-11-25).
		want := slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return sc == "offline_access" || sc == need })
		want = append(want, need)
		if hooks.protection.ChallengeMissingOnly {
			want = []string{need}
		}
		s.mu.Lock()
		s.prot.forbidden++
		s.mu.Unlock()
		w.Header().Set("WWW-Authenticate", s.challenge(hooks, "insufficient_scope", want))
		http.Error(w, "insufficient scope", http.StatusForbidden)
		return false
	}
	return true
}

// checkDPoP checks how a live token for this server was presented: a
// DPoP-bound one with the DPoP scheme and a valid, fresh proof by its key
// (and the nonce, when required); a bearer one only when the server does
// not demand DPoP. It returns the error code of the refusal ("" for none)
// and the nonce to hand out with it.
func (s *Server) checkDPoP(hooks resourceHooks, r *http.Request, scheme, token, jkt string) (code, nonce string) {
	p := hooks.protection
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case jkt == "" && !p.DPoP:
		return "", ""
	case jkt == "" || !strings.EqualFold(scheme, "DPoP"):
		// RFC 9449 §7.2: a bound token as Bearer, or a bearer one where
		// only bound tokens go, is refused.
		s.prot.dpop.Refused++
		return "invalid_token", ""
	}
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		s.prot.dpop.Refused++
		return "invalid_dpop_proof", ""
	}
	now := time.Now()
	proof, err := verifyDPoPProof(proofs[0], r.Method, s.URL, token, now)
	if err != nil || proof.jkt != jkt {
		s.prot.dpop.Refused++
		return "invalid_dpop_proof", ""
	}
	if s.prot.dpopJTIs == nil {
		s.prot.dpopJTIs = make(seenJTIs)
	}
	if !s.prot.dpopJTIs.fresh(proof, now) {
		s.prot.dpop.Refused++
		return "invalid_dpop_proof", ""
	}
	if p.DPoPNonce != "" && proof.nonce != p.DPoPNonce {
		s.prot.dpop.NonceChallenges++
		return "use_dpop_nonce", p.DPoPNonce
	}
	s.prot.dpop.Accepted++
	return "", ""
}

// challenge builds a Bearer WWW-Authenticate value (RFC 6750 §3, RFC 9728
// §5.1), or a DPoP one (RFC 9449 §7.1) when the server demands DPoP.
func (s *Server) challenge(hooks resourceHooks, code string, scopes []string) string {
	scheme := "Bearer"
	var params []string
	if hooks.protection.DPoP {
		scheme = "DPoP"
		params = append(params, `algs="ES256"`)
	}
	if code != "" {
		params = append(params, `error="`+code+`"`)
	}
	if len(scopes) > 0 {
		params = append(params, `scope="`+strings.Join(scopes, " ")+`"`)
	}
	if !s.opts.OmitResourceMetadata {
		u := s.origin() + s.metadataPath(hooks)
		if hooks.metadataURL != "" {
			u = hooks.metadataURL
		}
		params = append(params, `resource_metadata="`+u+`"`)
	}
	if len(params) == 0 {
		return scheme
	}
	return scheme + " " + strings.Join(params, ", ")
}
