package fake

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// oauthError is an error response of the token and revocation endpoints
// (RFC 6749 §5.2).
type oauthError struct {
	status      int
	code        string
	description string
	basic       bool   // the client tried HTTP Basic: answer with a Basic challenge
	nonce       string // a DPoP-Nonce to hand out (RFC 9449 §8)
}

func invalidRequest(description string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: description}
}

func invalidGrant(description string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: "invalid_grant", description: description}
}

func invalidDPoPProof(description string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: "invalid_dpop_proof", description: description}
}

func (e *oauthError) write(w http.ResponseWriter) {
	if e.basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
	}
	if e.nonce != "" {
		w.Header().Set("DPoP-Nonce", e.nonce)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, e.status, map[string]string{"error": e.code, "error_description": e.description})
}

// readForm reads an application/x-www-form-urlencoded POST body, refusing
// repeated parameters (RFC 6749 §3.2).
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	if r.Method != http.MethodPost {
		return nil, &oauthError{status: http.StatusMethodNotAllowed, code: "invalid_request", description: "use POST"}
	}
	ct := r.Header.Get("Content-Type")
	if ct, _, _ = strings.Cut(ct, ";"); strings.TrimSpace(ct) != "application/x-www-form-urlencoded" {
		return nil, invalidRequest("the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return nil, invalidRequest("the body is not a valid form")
	}
	return r.PostForm, nil
}

func repeated(form url.Values) *oauthError {
	for name, vs := range form {
		if len(vs) > 1 {
			return invalidRequest(name + " is repeated")
		}
	}
	return nil
}

// serveToken is the token endpoint.
func (a *AuthServer) serveToken(w http.ResponseWriter, r *http.Request) {
	form, oerr := readForm(w, r)
	if oerr != nil {
		oerr.write(w)
		return
	}
	grant := form.Get("grant_type")
	a.mu.Lock()
	a.tokenRequests[grant]++
	a.lastToken[grant] = cloneValues(form)
	if v := form.Get("code_verifier"); v != "" {
		a.secrets = append(a.secrets, v)
	}
	takeOver := a.hooks.beforeToken
	a.mu.Unlock()
	if takeOver != nil && takeOver(w, r) {
		return
	}

	resp, oerr := a.token(r, form, grant)
	if oerr != nil {
		oerr.write(w)
		return
	}
	a.mu.Lock()
	edit := a.hooks.tokenSuccess
	a.mu.Unlock()
	if edit != nil {
		edit(resp)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, resp)
}

func (a *AuthServer) token(r *http.Request, form url.Values, grant string) (map[string]any, *oauthError) {
	if oerr := repeated(form); oerr != nil {
		return nil, oerr
	}
	if grant == "" {
		return nil, invalidRequest("grant_type is required")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	assertions := len(a.workloads) > 0 || len(a.idps) > 0
	if grant != GrantAuthorizationCode && grant != GrantRefreshToken && grant != GrantClientCredentials && (grant != GrantJWTBearer || !assertions) {
		return nil, &oauthError{status: http.StatusBadRequest, code: "unsupported_grant_type", description: "unsupported grant_type"}
	}
	jkt, oerr := a.dpopLocked(r)
	if oerr != nil {
		return nil, oerr
	}
	if grant == GrantJWTBearer && !hasClientAuthentication(r, form) {
		// RFC 7523 §3.1: the assertion may stand alone.
		return a.jwtBearerLocked(nil, form, jkt)
	}
	c, oerr := a.authenticateLocked(r, form)
	if oerr != nil {
		return nil, oerr
	}
	if grant == GrantJWTBearer {
		// Any client this server knows may present an assertion it trusts.
		return a.jwtBearerLocked(c, form, jkt)
	}
	if !c.can(grant) {
		return nil, &oauthError{status: http.StatusBadRequest, code: "unauthorized_client", description: "this client may not use the " + grant + " grant"}
	}
	switch grant {
	case GrantAuthorizationCode:
		return a.exchangeLocked(c, form, jkt)
	case GrantRefreshToken:
		return a.refreshLocked(c, form, jkt)
	default:
		return a.clientCredentialsLocked(c, form, jkt)
	}
}

// dpopLocked checks the DPoP proof of a token request when the server
// binds tokens (AuthOptions.DPoP), and returns the thumbprint of its key:
// the token will be bound to it. A request without a proof gets a Bearer
// token ("" here).
func (a *AuthServer) dpopLocked(r *http.Request) (string, *oauthError) {
	proofs := r.Header.Values("DPoP")
	if !a.opts.DPoP || len(proofs) == 0 {
		return "", nil
	}
	a.dpopTokenRequests++
	if len(proofs) > 1 {
		return "", invalidDPoPProof("more than one DPoP header")
	}
	now := time.Now()
	p, err := verifyDPoPProof(proofs[0], http.MethodPost, a.TokenEndpoint, "", now)
	if err != nil {
		return "", invalidDPoPProof(err.Error())
	}
	if n := a.opts.DPoPNonce; n != "" && p.nonce != n {
		a.dpopNonceChallenges++
		return "", &oauthError{status: http.StatusBadRequest, code: "use_dpop_nonce", description: "the proof must carry the server's nonce", nonce: n}
	}
	if !a.dpopJTIs.fresh(p, now) {
		return "", invalidDPoPProof("the proof was used before")
	}
	return p.jkt, nil
}

func (a *AuthServer) exchangeLocked(c *authClient, form url.Values, jkt string) (map[string]any, *oauthError) {
	code := a.codes[form.Get("code")]
	if code == nil || code.clientID != c.id {
		return nil, invalidGrant("unknown authorization code")
	}
	if code.used {
		// RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
		a.revokeFamilyLocked(code.family, true)
		return nil, invalidGrant("authorization code already used")
	}
	if !time.Now().Before(code.expires) {
		return nil, invalidGrant("authorization code expired")
	}
	if form.Get("redirect_uri") != code.redirectURI {
		return nil, invalidGrant("redirect_uri differs from the authorization request")
	}
	verifier := form.Get("code_verifier")
	if verifier == "" {
		return nil, invalidRequest("code_verifier is required")
	}
	if !validVerifier(verifier) || s256(verifier) != code.challenge {
		return nil, invalidGrant("code_verifier does not match the code_challenge")
	}
	resource := form.Get("resource")
	if resource == "" {
		return nil, invalidRequest("resource is required (RFC 8707)")
	}
	if resource != code.resource {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_target", description: "resource differs from the authorization request"}
	}
	code.used = true
	a.families++
	code.family = a.families
	return a.issueLocked(c.id, code.resource, code.scopes, code.family, c.can(GrantRefreshToken), jkt), nil
}

func (a *AuthServer) refreshLocked(c *authClient, form url.Values, jkt string) (map[string]any, *oauthError) {
	old := a.tokens[form.Get("refresh_token")]
	if old == nil || !old.refresh || old.clientID != c.id {
		return nil, invalidGrant("unknown refresh token")
	}
	if old.rotated {
		// Reuse of a rotated-away token: someone else may hold the chain.
		a.revokeFamilyLocked(old.family, false)
		return nil, invalidGrant("refresh token already used")
	}
	if old.revoked {
		return nil, invalidGrant("refresh token revoked")
	}
	if old.jkt != "" && jkt != old.jkt {
		// RFC 9449 §5: a bound refresh token needs a proof by its key.
		return nil, invalidDPoPProof("the refresh token is bound to another DPoP key")
	}
	resource := form.Get("resource")
	if resource == "" {
		return nil, invalidRequest("resource is required (RFC 8707)")
	}
	if resource != old.resource {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_target", description: "resource differs from the original grant"}
	}
	scopes := old.scopes
	if s, ok := form["scope"]; ok {
		scopes = strings.Fields(s[0])
		for _, s := range scopes {
			if !slices.Contains(old.scopes, s) {
				return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_scope", description: "a refresh cannot add scopes"}
			}
		}
	}
	if a.opts.NoRotate {
		return a.issueLocked(c.id, old.resource, scopes, old.family, false, jkt), nil
	}
	old.revoked, old.rotated = true, true
	return a.issueLocked(c.id, old.resource, scopes, old.family, true, jkt), nil
}

func (a *AuthServer) clientCredentialsLocked(c *authClient, form url.Values, jkt string) (map[string]any, *oauthError) {
	resource := form.Get("resource")
	if resource == "" {
		return nil, invalidRequest("resource is required (RFC 8707)")
	}
	if !validResource(resource) {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_target", description: "resource must be an absolute URI without a fragment"}
	}
	a.families++
	// RFC 6749 §4.4.3: no refresh token for client credentials.
	return a.issueLocked(c.id, resource, a.grantable(form.Get("scope")), a.families, false, jkt), nil
}

// issueLocked issues an access token, and a refresh token when asked, and
// returns the token response. With jkt both are bound to that DPoP key.
func (a *AuthServer) issueLocked(clientID, resource string, scopes []string, family int, refresh bool, jkt string) map[string]any {
	access := "at-" + rand.Text()
	a.tokens[access] = &issuedToken{clientID: clientID, resource: resource, scopes: scopes,
		expires: time.Now().Add(a.opts.AccessTTL), family: family, jkt: jkt}
	a.issued = append(a.issued, access)
	a.secrets = append(a.secrets, access)
	resp := map[string]any{
		"access_token": access,
		"token_type":   "Bearer",
		"expires_in":   max(1, int(math.Ceil(a.opts.AccessTTL.Seconds()))),
	}
	if jkt != "" {
		resp["token_type"] = "DPoP"
	}
	if raw := a.opts.ExpiresInJSON; raw != "" {
		resp["expires_in"] = json.RawMessage(raw)
	}
	if len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	if refresh {
		rt := "rt-" + rand.Text()
		a.tokens[rt] = &issuedToken{refresh: true, clientID: clientID, resource: resource, scopes: scopes, family: family, jkt: jkt}
		a.issued = append(a.issued, rt)
		a.secrets = append(a.secrets, rt)
		resp["refresh_token"] = rt
	}
	return resp
}

// revokeFamilyLocked revokes the refresh tokens of one grant, and its access
// tokens too when withAccess is set.
func (a *AuthServer) revokeFamilyLocked(family int, withAccess bool) {
	if family == 0 {
		return
	}
	for _, t := range a.tokens {
		if t.family == family && (t.refresh || withAccess) {
			t.revoked = true
		}
	}
}

func validVerifier(v string) bool {
	// RFC 7636 §4.1: 43 to 128 unreserved characters.
	return len(v) >= 43 && len(v) <= 128 && strings.Trim(v, base64URLAlphabet+".~") == ""
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authenticateLocked authenticates the client of a token or revocation
// request with exactly one method, which must be one the client registered
// (RFC 6749 §2.3).
func (a *AuthServer) authenticateLocked(r *http.Request, form url.Values) (*authClient, *oauthError) {
	var used, id, secret string
	n := 0
	if user, pass, ok := r.BasicAuth(); ok {
		n++
		used = AuthMethodSecretBasic
		// RFC 6749 §2.3.1: both are form-urlencoded before Basic encoding.
		id, secret = formUnescape(user), formUnescape(pass)
		if form.Has("client_id") && form.Get("client_id") != id {
			return nil, invalidRequest("client_id differs from the Basic credentials")
		}
	}
	if form.Has("client_secret") {
		n++
		used = AuthMethodSecretPost
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if form.Has("client_assertion") || form.Has("client_assertion_type") {
		n++
		used = AuthMethodPrivateKeyJWT
		if form.Get("client_assertion_type") != jwtBearerAssertion {
			return nil, invalidRequest("client_assertion_type must be " + jwtBearerAssertion)
		}
		id = assertionSubject(form.Get("client_assertion"))
		if form.Has("client_id") && form.Get("client_id") != id {
			return nil, invalidRequest("client_id differs from the assertion's subject")
		}
	}
	if n > 1 {
		return nil, invalidRequest("more than one client authentication method")
	}
	if n == 0 {
		used, id = AuthMethodNone, form.Get("client_id")
	}
	bad := &oauthError{status: http.StatusUnauthorized, code: "invalid_client", description: "client authentication failed", basic: used == AuthMethodSecretBasic}
	if id == "" {
		if used == AuthMethodNone {
			return nil, invalidRequest("client_id is required")
		}
		return nil, bad
	}
	c := a.clients[id]
	if c == nil {
		return nil, bad
	}
	if !slices.Contains(c.methods, used) {
		bad.description = "this client must authenticate with " + strings.Join(c.methods, " or ")
		return nil, bad
	}
	switch used {
	case AuthMethodSecretBasic, AuthMethodSecretPost:
		if subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) != 1 {
			return nil, bad
		}
	case AuthMethodPrivateKeyJWT:
		now := time.Now()
		// RFC 7523bis: the audience is the issuer identifier alone, so an
		// assertion for this server's token endpoint URL is refused.
		jti, exp, err := verifyAssertion(form.Get("client_assertion"), c.key, c.id, []string{a.Issuer}, now)
		if err != nil {
			bad.description = "client assertion: " + err.Error()
			return nil, bad
		}
		for k, until := range a.jtis {
			if now.After(until) {
				delete(a.jtis, k)
			}
		}
		key := c.id + "\x00" + jti
		if _, seen := a.jtis[key]; seen {
			bad.description = "client assertion: jti already used"
			return nil, bad
		}
		a.jtis[key] = exp
	}
	return c, nil
}

// hasClientAuthentication reports whether a token request names or
// authenticates a client at all.
func hasClientAuthentication(r *http.Request, form url.Values) bool {
	_, _, basic := r.BasicAuth()
	return basic || form.Has("client_id") || form.Has("client_secret") || form.Has("client_assertion")
}

func formUnescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// serveRevoke is token revocation (RFC 7009): revoking a refresh token also
// revokes the access tokens of its grant; unknown tokens are not an error.
func (a *AuthServer) serveRevoke(w http.ResponseWriter, r *http.Request) {
	form, oerr := readForm(w, r)
	if oerr == nil {
		oerr = repeated(form)
	}
	if oerr != nil {
		oerr.write(w)
		return
	}
	a.mu.Lock()
	c, oerr := a.authenticateLocked(r, form)
	if oerr == nil && form.Get("token") == "" {
		oerr = invalidRequest("token is required")
	}
	if oerr != nil {
		a.mu.Unlock()
		oerr.write(w)
		return
	}
	a.revocations++
	t := a.tokens[form.Get("token")]
	if a.opts.NoAccessTokenRevocation && (t != nil && !t.refresh || t == nil && form.Get("token_type_hint") == "access_token") {
		a.mu.Unlock()
		(&oauthError{status: http.StatusBadRequest, code: "unsupported_token_type", description: "access tokens are not revocable here"}).write(w)
		return
	}
	if t != nil && t.clientID == c.id {
		t.revoked = true
		if t.refresh {
			a.revokeFamilyLocked(t.family, !a.opts.NoAccessTokenRevocation)
		}
	}
	a.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}
