package fake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Assertion grants: an authorization server that takes a JWT someone else
// issued as the grant (RFC 7523 jwt-bearer). Two kinds of issuer are
// trusted, each for its own kind of JWT:
//
//   - a workload's platform (workload identity federation, MCP SEP-1933):
//     its JWTs name the workload as sub and the authorization server as
//     aud; see [AuthServer.TrustWorkloads] and [JWTIssuer];
//   - a company's identity provider (enterprise-managed authorization, MCP
//     SEP-990): its identity assertion grants (ID-JAG, typ
//     oauth-id-jag+jwt), got by exchanging a person's ID token at the
//     provider, name the MCP client and the resource; see [IdP].

// Grant types of assertion grants, as counted by [AuthServer.TokenRequests]
// and [IdP.TokenExchanges].
const (
	GrantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// Token types of the token exchange (RFC 8693 §3, SEP-990).
const (
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeIDJAG   = "urn:ietf:params:oauth:token-type:id-jag"
)

// maxGrantLifetime bounds how far in the future an assertion grant may
// expire.
const maxGrantLifetime = time.Hour

// JWTIssuer signs JWTs with an ES256 key of its own, as a workload's
// platform (Kubernetes, a cloud's metadata service, a CI system) issues
// the tokens its workloads present.
type JWTIssuer struct {
	Issuer string
	key    *ecdsa.PrivateKey
}

// NewJWTIssuer makes an issuer named issuer (a URL, which is never
// fetched).
func NewJWTIssuer(issuer string) *JWTIssuer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return &JWTIssuer{Issuer: issuer, key: k}
}

// Workload returns a token for a workload: iss the issuer, sub subject,
// aud audience, issued now, expiring after ttl (negative for one that has
// expired), with a fresh jti.
func (j *JWTIssuer) Workload(subject, audience string, ttl time.Duration) string {
	now := time.Now()
	return j.Sign("JWT", map[string]any{"iss": j.Issuer, "sub": subject, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(), "jti": rand.Text()})
}

// Sign signs claims as a compact JWS with the given typ.
func (j *JWTIssuer) Sign(typ string, claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := enc(map[string]string{"alg": "ES256", "typ": typ}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, j.key, sum[:])
	if err != nil {
		panic(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...))
}

// grantClaims are the claims of an assertion grant.
type grantClaims struct {
	Iss      string          `json:"iss"`
	Sub      string          `json:"sub"`
	Aud      json.RawMessage `json:"aud"`
	Exp      *float64        `json:"exp"`
	JTI      string          `json:"jti"`
	ClientID string          `json:"client_id"` // ID-JAG
	Resource string          `json:"resource"`  // ID-JAG
	Scope    string          `json:"scope"`     // ID-JAG
}

// verifyES256 checks a compact JWS signed by key and decodes its header's
// typ and its claims.
func verifyES256(jwt string, key *ecdsa.PublicKey, claims any) (typ string, err error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", errors.New("not a compact JWS")
	}
	var header struct {
		Alg  string   `json:"alg"`
		Typ  string   `json:"typ"`
		Crit []string `json:"crit"`
	}
	if decodeSegment(parts[0], &header) != nil || header.Alg != "ES256" || len(header.Crit) > 0 {
		return "", errors.New("the header must say alg ES256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || len(sig) != 64 || !ecdsa.Verify(key, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("bad signature")
	}
	if decodeSegment(parts[1], claims) != nil {
		return "", errors.New("bad claims")
	}
	return header.Typ, nil
}

// unverifiedIssuer is the iss claim of a JWT, to find the key to verify it
// with.
func unverifiedIssuer(jwt string) string {
	parts := strings.Split(jwt, ".")
	var c grantClaims
	if len(parts) != 3 || decodeSegment(parts[1], &c) != nil {
		return ""
	}
	return c.Iss
}

// audienceOf reads aud as a string or an array of strings.
func audienceOf(raw json.RawMessage) []string {
	var aud []string
	if json.Unmarshal(raw, &aud) == nil {
		return aud
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	return nil
}

// checkLifetime checks exp, and a jti not seen before (remembered in seen
// until exp).
func checkLifetime(c *grantClaims, seen map[string]time.Time, now time.Time) error {
	if c.Exp == nil {
		return errors.New("exp is required")
	}
	exp := time.Unix(int64(*c.Exp), 0)
	switch {
	case !now.Before(exp):
		return errors.New("the assertion has expired")
	case exp.After(now.Add(maxGrantLifetime)):
		return errors.New("exp is too far in the future")
	case c.JTI == "":
		return errors.New("jti is required")
	}
	for k, until := range seen {
		if now.After(until) {
			delete(seen, k)
		}
	}
	key := c.Iss + "\x00" + c.JTI
	if _, ok := seen[key]; ok {
		return errors.New("the assertion was used before")
	}
	seen[key] = exp
	return nil
}

// TrustWorkloads makes the authorization server accept, as jwt-bearer
// grants (SEP-1933), JWTs issued by iss (signed by its key, aud the
// issuer, exp within the hour, a fresh jti). The token is issued for the
// request's resource; the client, if the request names one, must be
// registered. Workload JWTs are recorded as secrets.
func (a *AuthServer) TrustWorkloads(iss *JWTIssuer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workloads == nil {
		a.workloads = make(map[string]*ecdsa.PublicKey)
	}
	a.workloads[iss.Issuer] = &iss.key.PublicKey
}

// trustIdentityProvider makes the server accept ID-JAGs issued by iss.
func (a *AuthServer) trustIdentityProvider(iss string, key *ecdsa.PublicKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.idps == nil {
		a.idps = make(map[string]*ecdsa.PublicKey)
	}
	a.idps[iss] = key
}

// jwtBearerLocked is the jwt-bearer grant: a workload's JWT, or an ID-JAG
// whose client_id is the client that authenticated.
func (a *AuthServer) jwtBearerLocked(c *authClient, form url.Values, jkt string) (map[string]any, *oauthError) {
	assertion := form.Get("assertion")
	if assertion == "" {
		return nil, invalidRequest("assertion is required")
	}
	a.secrets = append(a.secrets, assertion)
	iss := unverifiedIssuer(assertion)
	now := time.Now()
	var claims grantClaims
	var resource string
	switch {
	case a.idps[iss] != nil:
		typ, err := verifyES256(assertion, a.idps[iss], &claims)
		if err != nil {
			return nil, invalidGrant("ID-JAG: " + err.Error())
		}
		if typ != "oauth-id-jag+jwt" {
			return nil, invalidGrant("ID-JAG: typ must be oauth-id-jag+jwt")
		}
		if c == nil || c.secret == "" && c.key == nil {
			return nil, &oauthError{status: http.StatusUnauthorized, code: "invalid_client", description: "an ID-JAG needs an authenticated confidential client"}
		}
		if claims.ClientID != c.id {
			return nil, invalidGrant("ID-JAG: client_id is not the authenticated client")
		}
		resource = claims.Resource
		if r := form.Get("resource"); r != "" && r != resource {
			return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_target", description: "resource differs from the ID-JAG's"}
		}
	case a.workloads[iss] != nil:
		if _, err := verifyES256(assertion, a.workloads[iss], &claims); err != nil {
			return nil, invalidGrant("workload assertion: " + err.Error())
		}
		resource = form.Get("resource")
	default:
		return nil, invalidGrant("the assertion's issuer is not trusted")
	}
	if !slices.Contains(audienceOf(claims.Aud), a.Issuer) {
		return nil, invalidGrant("aud must be the issuer " + a.Issuer)
	}
	if err := checkLifetime(&claims, a.jtis, now); err != nil {
		return nil, invalidGrant(err.Error())
	}
	if !validResource(resource) {
		return nil, invalidRequest("resource is required (RFC 8707)")
	}
	clientID := ""
	if c != nil {
		clientID = c.id
	}
	a.families++
	return a.issueLocked(clientID, resource, a.grantable(form.Get("scope")), a.families, false, jkt), nil
}

// IdP is a company's identity provider for enterprise-managed
// authorization (SEP-990), on its own 127.0.0.1 origin: it issues ID
// tokens for people ([IdP.IDToken]) and, at its token endpoint, exchanges
// one for an identity assertion grant (RFC 8693 token exchange,
// requested_token_type id-jag) for an authorization server it is
// federated with ([IdP.Federate]), naming the MCP client's ID there.
//
// All methods are safe for concurrent use.
type IdP struct {
	Issuer, TokenEndpoint string
	// ClientID is mcpgate's client at the identity provider: ID tokens
	// are issued to it (their aud) and it makes the exchanges.
	ClientID string

	signer *JWTIssuer
	http   *httptest.Server

	mu        sync.Mutex
	federated map[string]string // authorization server issuer → the MCP client's ID there
	exchanges int
	last      url.Values
}

// StartIdP starts an [IdP] for a test and stops it when the test ends.
func StartIdP(t testing.TB) *IdP {
	t.Helper()
	p := &IdP{ClientID: "idp-client-" + rand.Text()[:8], federated: make(map[string]string)}
	hs, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(p.serveHTTP))
	if err != nil {
		t.Fatal(err)
	}
	p.http, p.Issuer, p.TokenEndpoint = hs, base, base+"/token"
	p.signer = &JWTIssuer{Issuer: base, key: NewJWTIssuer(base).key}
	hs.Start()
	t.Cleanup(hs.Close)
	return p
}

// Federate makes the identity provider issue ID-JAGs for the authorization
// server as, naming clientID (the MCP client's ID at as), and as accept
// them.
func (p *IdP) Federate(as *AuthServer, clientID string) {
	p.mu.Lock()
	p.federated[as.Issuer] = clientID
	p.mu.Unlock()
	as.trustIdentityProvider(p.Issuer, &p.signer.key.PublicKey)
}

// IDToken issues an ID token for subject, to ClientID, valid for ttl
// (negative for one that has expired).
func (p *IdP) IDToken(subject string, ttl time.Duration) string {
	now := time.Now()
	return p.signer.Sign("JWT", map[string]any{"iss": p.Issuer, "sub": subject, "aud": p.ClientID, "email": subject,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(), "jti": rand.Text()})
}

// TokenExchanges returns how many requests reached the token endpoint.
func (p *IdP) TokenExchanges() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanges
}

// LastExchange returns the form of the latest token exchange request.
func (p *IdP) LastExchange() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cloneValues(p.last)
}

func (p *IdP) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/token" {
		http.NotFound(w, r)
		return
	}
	form, oerr := readForm(w, r)
	if oerr == nil {
		oerr = repeated(form)
	}
	if oerr != nil {
		oerr.write(w)
		return
	}
	p.mu.Lock()
	p.exchanges++
	p.last = cloneValues(form)
	p.mu.Unlock()
	resp, oerr := p.exchange(r, form)
	if oerr != nil {
		oerr.write(w)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
}

func (p *IdP) exchange(r *http.Request, form url.Values) (map[string]any, *oauthError) {
	switch {
	case form.Get("grant_type") != GrantTokenExchange:
		return nil, &oauthError{status: http.StatusBadRequest, code: "unsupported_grant_type", description: "only token exchange"}
	case form.Get("subject_token_type") != TokenTypeIDToken:
		return nil, invalidRequest("subject_token_type must be " + TokenTypeIDToken)
	case form.Get("requested_token_type") != TokenTypeIDJAG:
		return nil, invalidRequest("requested_token_type must be " + TokenTypeIDJAG)
	case !validResource(form.Get("resource")):
		return nil, invalidRequest("resource is required")
	}
	client := form.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok {
		client = formUnescape(user)
	}
	if client != p.ClientID {
		return nil, &oauthError{status: http.StatusUnauthorized, code: "invalid_client", description: "unknown client"}
	}
	var claims grantClaims
	if _, err := verifyES256(form.Get("subject_token"), &p.signer.key.PublicKey, &claims); err != nil || claims.Iss != p.Issuer {
		return nil, invalidGrant("the subject token is not an ID token of this provider")
	}
	if !slices.Contains(audienceOf(claims.Aud), p.ClientID) {
		return nil, invalidGrant("the ID token was issued to another client")
	}
	// An ID token may be exchanged as often as needed while it is valid:
	// it is the person's sign-in, not a one-time grant.
	if claims.Exp == nil || !time.Now().Before(time.Unix(int64(*claims.Exp), 0)) {
		return nil, invalidGrant("the ID token has expired")
	}
	p.mu.Lock()
	mcpClient, ok := p.federated[form.Get("audience")]
	p.mu.Unlock()
	if !ok {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_target", description: fmt.Sprintf("no federation with %q", form.Get("audience"))}
	}
	now := time.Now()
	jag := p.signer.Sign("oauth-id-jag+jwt", map[string]any{"iss": p.Issuer, "sub": claims.Sub, "aud": form.Get("audience"),
		"client_id": mcpClient, "resource": form.Get("resource"), "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": rand.Text()})
	return map[string]any{"access_token": jag, "issued_token_type": TokenTypeIDJAG, "token_type": "N_A", "expires_in": 300}, nil
}
