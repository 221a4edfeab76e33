package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// discoveryErrorf reports metadata that breaks a rule: the server or its
// authorization server is misconfigured or hostile, and logging in again
// would not help. The arguments are mostly what they published, so the
// message is sanitized and bounded as a whole.
func discoveryErrorf(format string, args ...any) *mcpgate.Error {
	e := mcpgate.Errorf(mcpgate.CategoryProtocol, "authorization discovery: "+format, args...)
	e.Message = mcpgate.Sanitize(e.Message, 600)
	return e
}

// challenge is what a 401 or 403 WWW-Authenticate challenge said, in the
// Bearer (RFC 6750) or DPoP (RFC 9449 §7.1) scheme.
type challenge struct {
	resourceMetadata string
	scope            []string
	errorCode        string
	bearer, dpop     bool // the schemes the server offered
}

func parseChallenge(headers []string) challenge {
	var ch challenge
	cs, err := oauthex.ParseWWWAuthenticate(headers)
	if err != nil {
		return ch
	}
	found := false
	for _, c := range cs {
		switch c.Scheme {
		case "bearer":
			ch.bearer = true
		case "dpop":
			ch.dpop = true
		default:
			continue
		}
		// The first challenge of either scheme says what the server
		// wants; a later one fills in only what it left out.
		if !found || (ch.resourceMetadata == "" && c.Params["resource_metadata"] != "") {
			found = true
			if v := c.Params["resource_metadata"]; v != "" {
				ch.resourceMetadata = v
			}
			if v := scopeTokens(strings.Fields(c.Params["scope"]), maxChallengeScopes); len(v) > 0 && len(ch.scope) == 0 {
				ch.scope = v
			}
			if v := providerCode(c.Params["error"]); v != "" && ch.errorCode == "" {
				ch.errorCode = v
			}
		}
	}
	return ch
}

// Bounds on the scopes a server may ask for, in a challenge or in its
// metadata's scopes_supported: they go into the next authorization
// request and into messages for people.
const (
	maxChallengeScopes = 20
	maxListedScopes    = 64
	maxScopeBytes      = 100
)

// scopeTokens keeps of scopes the tokens RFC 6749 §3.3 allows (printable
// ASCII but space, '"' and backslash), once each, at most max of at most
// maxScopeBytes each; anything else a server sends there is dropped.
func scopeTokens(scopes []string, max int) []string {
	var out []string
	for _, s := range scopes {
		ok := s != "" && len(s) <= maxScopeBytes && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '"' || r == '\\' })
		if ok && !slices.Contains(out, s) && len(out) < max {
			out = append(out, s)
		}
	}
	return out
}

// metadata is what discovery found for one server.
type metadata struct {
	// resource is the protected resource's identifier exactly as its
	// metadata publishes it: what is sent as resource (RFC 8707) and what
	// the credential is bound to. The server URL lies within it.
	resource string
	prm      *oauthex.ProtectedResourceMetadata
	issuers  []string
	// legacy is set when the server has no protected resource metadata and
	// its origin is taken as the authorization server (MCP 2025-03-26).
	legacy bool
}

// prmLocation says where protected resource metadata was looked for, which
// decides what its resource may be (RFC 9728 §3.3).
type prmLocation int

const (
	// prmPathAware is /.well-known/oauth-protected-resource followed by the
	// server's path: the document of exactly the server URL.
	prmPathAware prmLocation = iota
	// prmRoot is /.well-known/oauth-protected-resource: the document of the
	// origin, which names the origin (or a resource the server URL lies in).
	prmRoot
	// prmAdvertised is the challenge's resource_metadata: any same-origin
	// location, naming a resource the server URL lies in.
	prmAdvertised
)

type prmCandidate struct {
	url   string
	where prmLocation
}

// errNoResourceMetadata is returned by discoverResource when no location
// has protected resource metadata at all (every one answered 404) and the
// challenge named none: a server of the 2025-03-26 generation.
var errNoResourceMetadata = errors.New("no protected resource metadata")

// discoverResource finds and checks the protected resource metadata
// (RFC 9728) of serverURL: from the challenge's resource_metadata when it is
// same-origin with the server, else the path-aware then the root
// well-known location.
func (c *Client) discoverResource(ctx context.Context, serverURL string, ch challenge) (*metadata, error) {
	server, err := url.Parse(serverURL)
	if err != nil {
		return nil, discoveryErrorf("server URL does not parse")
	}
	var candidates []prmCandidate
	if ch.resourceMetadata != "" {
		u, err := checkEndpoint("resource_metadata", ch.resourceMetadata)
		if err != nil {
			return nil, err
		}
		if !sameOrigin(u, server) {
			return nil, discoveryErrorf("resource_metadata %s is on another origin than the server %s://%s; refusing it", mcpgate.RedactURL(u), server.Scheme, server.Host)
		}
		candidates = []prmCandidate{{u.String(), prmAdvertised}}
	} else {
		base := url.URL{Scheme: server.Scheme, Host: server.Host}
		path := strings.TrimSuffix(server.EscapedPath(), "/")
		if path != "" {
			candidates = append(candidates, prmCandidate{base.String() + "/.well-known/oauth-protected-resource" + path, prmPathAware})
		}
		candidates = append(candidates, prmCandidate{base.String() + "/.well-known/oauth-protected-resource", prmRoot})
	}
	var lastErr error
	absent := true // every location answered 404
	for _, cand := range candidates {
		var prm oauthex.ProtectedResourceMetadata
		if err := c.getJSON(ctx, cand.url, &prm); err != nil {
			if errors.Is(err, netpolicy.ErrRefused) {
				return nil, policyError("authorization discovery", err)
			}
			var hs *httpStatus
			if !errors.As(err, &hs) || hs.code != http.StatusNotFound {
				absent = false
			}
			lastErr = err
			continue
		}
		return checkPRM(serverURL, &prm, cand.where)
	}
	if absent && ch.resourceMetadata == "" {
		return nil, errNoResourceMetadata
	}
	if ctx.Err() != nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryTimeout, Message: "authorization discovery: the server's protected resource metadata did not arrive in time", Err: ctx.Err()}
	}
	return nil, discoveryErrorf("no protected resource metadata found for the server (%v)", describe(lastErr))
}

// checkPRM checks a protected resource metadata document found at where
// for serverURL and returns what discovery keeps of it.
func checkPRM(serverURL string, prm *oauthex.ProtectedResourceMetadata, where prmLocation) (*metadata, error) {
	if err := checkResource(serverURL, prm.Resource, where); err != nil {
		return nil, err
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, discoveryErrorf("protected resource metadata lists no authorization server")
	}
	var issuers []string
	for _, is := range prm.AuthorizationServers {
		if _, err := checkEndpoint("authorization server "+is, is); err != nil {
			return nil, err
		}
		if !slices.Contains(issuers, is) {
			issuers = append(issuers, is)
		}
	}
	return &metadata{resource: prm.Resource, prm: prm, issuers: issuers}, nil
}

// checkResource checks the resource a protected resource metadata document
// names against the server URL and where the document was found: the
// path-aware document must name exactly the server URL; the root one and
// an advertised one a resource on the same origin that the server URL lies
// within (the origin itself, or a path above the server's).
func checkResource(serverURL, resource string, where prmLocation) error {
	r, err := url.Parse(resource)
	if err != nil || r.Host == "" || (r.Scheme != "https" && r.Scheme != "http") || r.Fragment != "" || r.User != nil {
		return discoveryErrorf("protected resource metadata names resource %q, which is not an absolute http(s) URL without fragment; refusing it", sanitizeText("%s", resource))
	}
	want := canonicalResource(serverURL)
	switch {
	case where == prmPathAware && canonicalResource(resource) == want:
		return nil
	case where != prmPathAware && within(serverURL, resource):
		return nil
	}
	return discoveryErrorf("protected resource metadata names resource %q, but the server is %q; refusing it", sanitizeText("%s", resource), want)
}

// within reports whether serverURL lies within the protected resource
// identified by resource: the same origin, and resource's path is the
// server's path or one of its ancestors ("/a" holds "/a/b", not "/ab"). A
// resource with a query holds only itself.
func within(serverURL, resource string) bool {
	s, err1 := url.Parse(serverURL)
	r, err2 := url.Parse(resource)
	if err1 != nil || err2 != nil || r.Host == "" || !sameOrigin(s, r) || r.Fragment != "" {
		return false
	}
	if r.RawQuery != "" || s.RawQuery != "" {
		return canonicalResource(serverURL) == canonicalResource(resource)
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := s.EscapedPath()
	return rp == "" || sp == rp || strings.TrimSuffix(sp, "/") == rp || strings.HasPrefix(sp, rp+"/")
}

func describe(err error) string {
	var hs *httpStatus
	switch {
	case err == nil:
		return "none offered"
	case errors.As(err, &hs):
		return hs.Error()
	case errors.Is(err, errTooLarge):
		return "the document is too large"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, errMalformed):
		return "malformed: not the JSON document it must be"
	case errors.Is(err, netpolicy.ErrRefused):
		return "refused by the network policy"
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return "unreachable"
}

// authServerMetadataURLs lists where an issuer's metadata may be, in the
// order of MCP Authorization 2025-11-25: for an issuer with a path, the
// OAuth path-inserted form, the OpenID path-inserted form, then the OpenID
// path-appended form; for an issuer without a path, OAuth then OpenID.
func authServerMetadataURLs(issuer *url.URL) []string {
	base := url.URL{Scheme: issuer.Scheme, Host: issuer.Host}
	path := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if path == "" {
		return []string{
			base.String() + "/.well-known/oauth-authorization-server",
			base.String() + "/.well-known/openid-configuration",
		}
	}
	return []string{
		base.String() + "/.well-known/oauth-authorization-server" + path,
		base.String() + "/.well-known/openid-configuration" + path,
		base.String() + path + "/.well-known/openid-configuration",
	}
}

// authServer is an authorization server's metadata (RFC 8414), with the
// members of the extensions mcpgate uses.
type authServer struct {
	oauthex.AuthServerMeta
	// DPoPSigningAlgValuesSupported lists the algorithms the server
	// accepts DPoP proofs in (RFC 9449 §5.1); absent when it does not
	// bind tokens with DPoP.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

// errNoAuthServerMetadata is returned by discoverIssuer when every
// metadata location answered 404.
var errNoAuthServerMetadata = errors.New("no authorization server metadata")

// legacyIssuer is the authorization server of a server without protected
// resource metadata (MCP 2025-03-26): its URL with the path discarded.
func legacyIssuer(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// legacyEndpoints is the metadata MCP 2025-03-26 prescribes for an
// authorization server at issuer that publishes none: the default
// endpoints at its root. PKCE with S256 is mandatory in that revision, so
// it is taken as supported.
func legacyEndpoints(issuer string) *authServer {
	return &authServer{AuthServerMeta: oauthex.AuthServerMeta{
		Issuer:                        issuer,
		AuthorizationEndpoint:         issuer + "/authorize",
		TokenEndpoint:                 issuer + "/token",
		RegistrationEndpoint:          issuer + "/register",
		CodeChallengeMethodsSupported: []string{"S256"},
		ResponseTypesSupported:        []string{"code"},
	}}
}

// discoverIssuer fetches and checks an authorization server's metadata
// (RFC 8414): exact issuer, S256 PKCE, every endpoint https (or loopback
// http) with a safe scheme. When every location answers 404 it returns
// an error wrapping errNoAuthServerMetadata.
func (c *Client) discoverIssuer(ctx context.Context, issuer string) (*authServer, error) {
	iu, err := checkEndpoint("issuer", issuer)
	if err != nil {
		return nil, err
	}
	var lastErr error
	absent := true
	for _, cand := range authServerMetadataURLs(iu) {
		var asm authServer
		if err := c.getJSON(ctx, cand, &asm); err != nil {
			if errors.Is(err, netpolicy.ErrRefused) {
				return nil, policyError("authorization discovery", err)
			}
			var hs *httpStatus
			if !errors.As(err, &hs) || hs.code != http.StatusNotFound {
				absent = false
			}
			lastErr = err
			continue
		}
		if err := checkAuthServer(issuer, &asm); err != nil {
			return nil, err
		}
		return &asm, nil
	}
	if ctx.Err() != nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryTimeout, Message: "authorization discovery: the metadata of " + sanitizeText("%s", issuer) + " did not arrive in time", Err: ctx.Err()}
	}
	derr := discoveryErrorf("no authorization server metadata found for %s (%s)", issuer, describe(lastErr))
	if absent {
		derr.Err = errNoAuthServerMetadata
	}
	return nil, derr
}

// checkAuthServer checks the metadata document of issuer: it names
// exactly that issuer, supports PKCE with S256, and its endpoints follow
// the endpoint rules.
func checkAuthServer(issuer string, asm *authServer) error {
	if asm.Issuer != issuer {
		return discoveryErrorf("authorization server metadata names issuer %q, expected exactly %q; refusing it", asm.Issuer, issuer)
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return discoveryErrorf("authorization server %s does not support PKCE with S256; refusing it", issuer)
	}
	endpoints := []struct{ name, value string }{
		{"authorization_endpoint", asm.AuthorizationEndpoint},
		{"token_endpoint", asm.TokenEndpoint},
		{"registration_endpoint", asm.RegistrationEndpoint},
		{"revocation_endpoint", asm.RevocationEndpoint},
	}
	for _, e := range endpoints {
		if e.value == "" {
			if e.name == "authorization_endpoint" || e.name == "token_endpoint" {
				return discoveryErrorf("authorization server %s has no %s", issuer, e.name)
			}
			continue
		}
		if _, err := checkEndpoint(e.name, e.value); err != nil {
			return err
		}
	}
	return nil
}

// chooseIssuer picks the authorization server: the one the person chose,
// else the only one listed. With several and no choice it never guesses.
func chooseIssuer(md *metadata, chosen string) (string, error) {
	if chosen != "" {
		if !slices.Contains(md.issuers, chosen) {
			return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "issuer %s is not one of the server's authorization servers: %s", sanitizeText("%q", chosen), issuerList(md.issuers))
		}
		return chosen, nil
	}
	if len(md.issuers) > 1 {
		return "", &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "choose_issuer",
			Message: "the server accepts several authorization servers; choose one with --issuer: " + issuerList(md.issuers)}
	}
	return md.issuers[0], nil
}

// maxListedIssuers bounds the issuers a message names.
const maxListedIssuers = 10

// issuerList names the authorization servers a server listed, for a
// message: each sanitized and bounded, and at most maxListedIssuers.
func issuerList(issuers []string) string {
	var names []string
	for i, is := range issuers {
		if i == maxListedIssuers {
			names = append(names, fmt.Sprintf("and %d more", len(issuers)-i))
			break
		}
		names = append(names, sanitizeText("%s", is))
	}
	return strings.Join(names, ", ")
}
