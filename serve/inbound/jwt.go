package inbound

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/sync/singleflight"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

const (
	// clockSkew is how far the issuer's clock and ours may disagree when
	// exp and nbf are checked.
	clockSkew = time.Minute
	// issuerTimeout bounds every request to the issuer.
	issuerTimeout = 10 * time.Second
	// discoveryRetry is how long a failed discovery is remembered: JWTs
	// are answered with ErrUnavailable meanwhile instead of each asking
	// an issuer that just failed.
	discoveryRetry = 10 * time.Second
	// defaultKeyRefresh is Options.MinKeyRefresh's default.
	defaultKeyRefresh = 10 * time.Second
	// maxIssuerBody bounds a discovery document or key set.
	maxIssuerBody = 1 << 20
)

// signingAlgs are the algorithms a token may name: go-oidc's, all
// asymmetric. A token saying "none" or HS256 (signed, say, with the
// issuer's public key as an HMAC secret) is refused before anything is
// fetched; the verifier narrows them further to those the issuer says
// it uses.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// issuer verifies the JWTs of the deployment's OpenID Connect issuer.
type issuer struct {
	cfg    config.OIDC
	client *http.Client
	keys   *keysTransport
	own    *http.Transport // the transport made here, closed by close; nil if the caller's

	group singleflight.Group

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier // nil until discovered
	failedAt time.Time             // of the last failed discovery
	failure  error
}

func newIssuer(cfg config.OIDC, hc *http.Client, minRefresh time.Duration) *issuer {
	if minRefresh <= 0 {
		minRefresh = defaultKeyRefresh
	}
	i := &issuer{cfg: cfg}
	var c http.Client
	if hc != nil {
		c = *hc
	}
	next := c.Transport
	if next == nil {
		i.own = http.DefaultTransport.(*http.Transport).Clone()
		next = i.own
	}
	if c.Timeout == 0 {
		// go-oidc fetches keys with a context that is never cancelled.
		c.Timeout = issuerTimeout
	}
	i.keys = &keysTransport{next: next, floor: minRefresh}
	c.Transport = i.keys
	i.client = &c
	return i
}

func (i *issuer) close() {
	if i.own != nil {
		i.own.CloseIdleConnections()
	}
}

// claims are a JWT's claims as sent.
type claims map[string]json.RawMessage

func (a *Authenticator) jwt(ctx context.Context, token string, ev *Event) (Principal, Reason, error) {
	i := a.oidc
	unverified, reason := parseJWT(token)
	if reason != "" {
		return Principal{}, reason, nil
	}
	// Claims are checked before the signature too, so a token of another
	// issuer, or an old one, costs no fetch of the issuer's keys.
	if reason := i.check(unverified); reason != "" {
		return Principal{}, reason, nil
	}
	v, err := i.verifierFor(ctx)
	if err != nil {
		return Principal{}, "", errors.Join(ErrUnavailable, err)
	}
	tok, err := v.Verify(oidc.ClientContext(ctx, i.client), token)
	if err != nil {
		if ctx.Err() != nil {
			return Principal{}, "", errors.Join(ErrUnavailable, ctx.Err())
		}
		return Principal{}, ReasonSignature, nil
	}
	var c claims
	if err := tok.Claims(&c); err != nil {
		return Principal{}, ReasonMalformed, nil
	}
	if reason := i.check(c); reason != "" {
		return Principal{}, reason, nil
	}
	tenant := i.cfg.Tenant
	if tenant == "" {
		var value string
		if json.Unmarshal(c[i.cfg.TenantClaim], &value) != nil || value == "" {
			return Principal{}, ReasonClaim, nil
		}
		var ok bool
		if tenant, ok = a.deploy.TenantForClaim(value); !ok {
			return Principal{}, ReasonTenant, nil
		}
	}
	ev.Tenant = tenant
	var user string
	if json.Unmarshal(c[i.cfg.UserClaim], &user) != nil || user == "" || checkLabel("user", user, MaxKeyUser) != nil {
		return Principal{}, ReasonClaim, nil
	}
	return Principal{Tenant: tenant, User: user, Via: ViaJWT}, "", nil
}

// parseJWT reads a compact JWS's claims without verifying it, refusing
// what no verification could accept.
func parseJWT(token string) (claims, Reason) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, ReasonMalformed
	}
	var header struct {
		Alg  string          `json:"alg"`
		Crit json.RawMessage `json:"crit"`
	}
	if decodeSegment(parts[0], &header) != nil || header.Crit != nil {
		return nil, ReasonMalformed
	}
	if !slices.Contains(signingAlgs, header.Alg) || parts[2] == "" {
		return nil, ReasonSignature
	}
	var c claims
	if decodeSegment(parts[1], &c) != nil || c == nil {
		return nil, ReasonMalformed
	}
	return c, ""
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// check applies the rules every token must pass: issuer, audience,
// lifetime, and no binding to a key.
func (i *issuer) check(c claims) Reason {
	now := timeNow()
	var iss string
	if json.Unmarshal(c["iss"], &iss) != nil || iss != i.cfg.Issuer {
		return ReasonIssuer
	}
	if !hasAudience(c["aud"], i.cfg.Audience) {
		return ReasonAudience
	}
	exp, ok := numericDate(c["exp"])
	if !ok || !now.Before(exp.Add(clockSkew)) {
		return ReasonExpired
	}
	if raw, present := c["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok || now.Add(clockSkew).Before(nbf) {
			return ReasonNotYetValid
		}
	}
	if _, bound := c["cnf"]; bound {
		return ReasonBound
	}
	return ""
}

// hasAudience reports whether aud, a string or an array of strings,
// includes want.
func hasAudience(raw json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == want
	}
	var many []string
	return json.Unmarshal(raw, &many) == nil && slices.Contains(many, want)
}

// numericDate reads a JWT time: seconds since 1970, maybe fractional.
func numericDate(raw json.RawMessage) (time.Time, bool) {
	var secs float64
	if json.Unmarshal(raw, &secs) != nil || secs < 0 || secs > 1<<40 {
		return time.Time{}, false
	}
	whole, frac := math.Modf(secs)
	return time.Unix(int64(whole), int64(frac*1e9)), true
}

// verifierFor returns the verifier, discovering the issuer first if need
// be. Concurrent callers share one discovery, which runs on its own
// deadline so that one caller giving up does not fail the others.
func (i *issuer) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	if v, err, ok := i.known(); ok {
		return v, err
	}
	ch := i.group.DoChan("discover", func() (any, error) { return i.discover() })
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*oidc.IDTokenVerifier), nil
	}
}

// known reports what a discovery left: its verifier, or its failure while
// it is remembered (ok false: discover).
func (i *issuer) known() (v *oidc.IDTokenVerifier, err error, ok bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.verifier != nil {
		return i.verifier, nil, true
	}
	if !i.failedAt.IsZero() && timeNow().Sub(i.failedAt) < discoveryRetry {
		return nil, i.failure, true
	}
	return nil, nil, false
}

// discover runs the discovery, unless one that ended since the caller
// looked has answered already: a caller that saw no verifier may reach
// the group after the discovery it would have joined is done.
func (i *issuer) discover() (*oidc.IDTokenVerifier, error) {
	if v, err, ok := i.known(); ok {
		return v, err
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(context.Background(), i.client), issuerTimeout)
	defer cancel()
	v, err := i.newVerifier(ctx)
	i.mu.Lock()
	defer i.mu.Unlock()
	if err != nil {
		i.failedAt, i.failure = timeNow(), err
		return nil, err
	}
	i.verifier, i.failure = v, nil
	return v, nil
}

func (i *issuer) newVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	p, err := oidc.NewProvider(ctx, i.cfg.Issuer)
	if err != nil {
		// go-oidc's message may quote the issuer's answer: bound it.
		return nil, fmt.Errorf("discovering the OpenID Connect issuer %s: %s", i.cfg.Issuer, bounded(err.Error(), 200))
	}
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || mcpgate.ValidateURL(meta.JWKSURI) != nil {
		return nil, fmt.Errorf("discovering the OpenID Connect issuer %s: its jwks_uri must be an https URL", i.cfg.Issuer)
	}
	i.keys.setURL(meta.JWKSURI)
	// go-oidc verifies the signature with the issuer's keys and
	// algorithms; check verifies the claims, so each refusal has its
	// own reason.
	return p.VerifierContext(oidc.ClientContext(context.Background(), i.client), &oidc.Config{
		SkipClientIDCheck: true, SkipExpiryCheck: true, SkipIssuerCheck: true,
	}), nil
}

func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// keysTransport carries every request to the issuer, bounding its
// answers. go-oidc fetches the key set again whenever a token names a key
// it does not have (which is how it notices a rotation); keysTransport
// lets that happen at most once per floor and answers the fetches in
// between with the last key set, so forged tokens with made-up key IDs
// cannot turn the gateway against its issuer.
type keysTransport struct {
	next  http.RoundTripper
	floor time.Duration

	mu     sync.Mutex
	url    string // the jwks_uri, once discovered
	at     time.Time
	body   []byte // of the last key set fetched
	header http.Header
}

func (t *keysTransport) setURL(u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.url = u
}

func (t *keysTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	isKeys := t.url != "" && req.URL.String() == t.url
	if isKeys && !t.at.IsZero() && timeNow().Sub(t.at) < t.floor {
		body, header := t.body, t.header
		t.mu.Unlock()
		if body == nil {
			return nil, fmt.Errorf("the issuer's keys were fetched less than %v ago", t.floor)
		}
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: header.Clone(), Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		}, nil
	}
	if isKeys {
		t.at = timeNow()
	}
	t.mu.Unlock()

	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = http.MaxBytesReader(nil, resp.Body, maxIssuerBody)
	if !isKeys || resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the issuer's keys: %w", err)
	}
	t.mu.Lock()
	t.body, t.header = body, resp.Header.Clone()
	t.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
