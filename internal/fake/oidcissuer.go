package fake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// OIDCIssuer is an OpenID Connect provider as a resource server sees one:
// a discovery document at /.well-known/openid-configuration, its signing
// keys (RS256) as a JWK set at /jwks, and the tokens it signs. It issues
// nothing over HTTP; a test asks it for tokens directly ([OIDCIssuer.Token]).
//
// Keys rotate as a real provider's do: [OIDCIssuer.Rotate] publishes a new
// key and signs with it from then on, while the old one stays published
// until [OIDCIssuer.Retire]. All methods are safe for concurrent use.
type OIDCIssuer struct {
	// Issuer is the issuer URL (http://127.0.0.1:port), as iss says it.
	Issuer string
	// JWKSURI is where the keys are published.
	JWKSURI string

	http *httptest.Server

	mu        sync.Mutex
	keys      []*issuerKey      // published, oldest first
	current   *issuerKey        // signs new tokens
	held      []*rsa.PrivateKey // every key it took, given back when it stops
	jwksGets  int
	discovery int
	down      bool

	forgerOnce sync.Once
	forger     *issuerKey // never published; made on first use, under forgerOnce
}

type issuerKey struct {
	kid  string
	priv *rsa.PrivateKey
}

// newIssuerKey takes a key no running issuer holds, under a new kid, and
// records it as o's until o's test ends.
func (o *OIDCIssuer) newIssuerKey() *issuerKey {
	k := &issuerKey{kid: "key-" + rand.Text()[:10], priv: rsaKeys.take()}
	o.mu.Lock()
	o.held = append(o.held, k.priv)
	o.mu.Unlock()
	return k
}

// rsaKeys are the RSA keys no running issuer holds. Making a 2048-bit key
// takes a while (a fifth of the hosted gateway's test CPU went to making
// one per issuer); a key is an issuer's own while it runs, and when its
// test ends the key goes back for a later issuer, which publishes it
// under a kid of its own. Issuers running at once never share a key.
var rsaKeys keyPool

type keyPool struct {
	mu   sync.Mutex
	free []*rsa.PrivateKey
}

func (p *keyPool) take() *rsa.PrivateKey {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		k := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return k
	}
	p.mu.Unlock()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}

func (p *keyPool) give(ks []*rsa.PrivateKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, ks...)
}

// StartOIDCIssuer starts an [OIDCIssuer] on 127.0.0.1 with one key, and
// stops it when the test ends.
func StartOIDCIssuer(t testing.TB) *OIDCIssuer {
	t.Helper()
	o := &OIDCIssuer{}
	t.Cleanup(func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		rsaKeys.give(o.held)
		o.held = nil
	})
	o.current = o.newIssuerKey()
	o.keys = []*issuerKey{o.current}
	hs, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(o.serveHTTP))
	if err != nil {
		t.Fatal(err)
	}
	o.http, o.Issuer, o.JWKSURI = hs, base, base+"/jwks"
	hs.Start()
	t.Cleanup(hs.Close)
	return o
}

func (o *OIDCIssuer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	down := o.down
	o.mu.Unlock()
	if down {
		http.Error(w, "the identity provider is down", http.StatusServiceUnavailable)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		o.mu.Lock()
		o.discovery++
		o.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                o.Issuer,
			"authorization_endpoint":                o.Issuer + "/authorize",
			"token_endpoint":                        o.Issuer + "/token",
			"jwks_uri":                              o.JWKSURI,
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	case "/jwks":
		o.mu.Lock()
		o.jwksGets++
		keys := make([]map[string]string, 0, len(o.keys))
		for _, k := range o.keys {
			keys = append(keys, publicJWK(k))
		}
		o.mu.Unlock()
		w.Header().Set("Cache-Control", "public, max-age=300")
		writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
	default:
		http.NotFound(w, r)
	}
}

func publicJWK(k *issuerKey) map[string]string {
	pub := k.priv.PublicKey
	return map[string]string{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.kid,
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}
}

// Claims are the usual claims of a token for audience: iss, sub, aud,
// iat, exp (after ttl; negative for one that has expired) and a jti. Add
// or replace members before signing.
func (o *OIDCIssuer) Claims(subject, audience string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{"iss": o.Issuer, "sub": subject, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(), "jti": rand.Text()}
}

// Token signs claims with the current key (RS256, its kid in the header).
func (o *OIDCIssuer) Token(claims map[string]any) string {
	o.mu.Lock()
	k := o.current
	o.mu.Unlock()
	return SignRS256(k.priv, map[string]any{"alg": "RS256", "typ": "JWT", "kid": k.kid}, claims)
}

// Forge signs claims with a key the issuer never published, under kid:
// what an attacker who knows the key IDs can make.
func (o *OIDCIssuer) Forge(kid string, claims map[string]any) string {
	o.forgerOnce.Do(func() { o.forger = o.newIssuerKey() })
	return SignRS256(o.forger.priv, map[string]any{"alg": "RS256", "typ": "JWT", "kid": kid}, claims)
}

// PublicKey is the current signing key's public half (for tests of
// algorithm confusion, which sign with it as an HMAC secret).
func (o *OIDCIssuer) PublicKey() *rsa.PublicKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	return &o.current.priv.PublicKey
}

// KeyID is the current signing key's kid.
func (o *OIDCIssuer) KeyID() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.current.kid
}

// Rotate publishes a new key and signs with it from now on; the previous
// keys stay published. It returns the new kid.
func (o *OIDCIssuer) Rotate() string {
	k := o.newIssuerKey()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.keys = append(o.keys, k)
	o.current = k
	return k.kid
}

// Retire stops publishing the key kid; tokens it signed no longer verify
// for anyone who fetches the keys again.
func (o *OIDCIssuer) Retire(kid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.keys = slices.DeleteFunc(o.keys, func(k *issuerKey) bool { return k.kid == kid })
}

// SetDown makes every request fail with 503 (down) or work again.
func (o *OIDCIssuer) SetDown(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
}

// JWKSRequests is how many times the keys were fetched.
func (o *OIDCIssuer) JWKSRequests() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.jwksGets
}

// DiscoveryRequests is how many times the discovery document was fetched.
func (o *OIDCIssuer) DiscoveryRequests() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.discovery
}

// SignRS256 makes a compact JWS of header and claims signed with key
// (RSASSA-PKCS1-v1_5 with SHA-256). header should say alg RS256.
func SignRS256(key *rsa.PrivateKey, header, claims map[string]any) string {
	signed := jwtSegment(header) + "." + jwtSegment(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func jwtSegment(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
