package inbound_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/store"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	goleak.VerifyTestMain(m)
}

const audience = "mcpgate-test"

// keyStore is an in-memory store.APIKeyStore that behaves as the
// PostgreSQL one does.
type keyStore struct {
	mu      sync.Mutex
	keys    map[string]store.APIKey
	touches int
	err     error // when set, every read fails with it (the database is down)
}

var _ store.APIKeyStore = (*keyStore)(nil)

func newKeyStore() *keyStore { return &keyStore{keys: make(map[string]store.APIKey)} }

func (s *keyStore) CreateAPIKey(_ context.Context, k *store.APIKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.ID]; ok {
		return store.ErrExists
	}
	s.keys[k.ID] = *k
	return nil
}

func (s *keyStore) APIKey(_ context.Context, id string) (*store.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	k, ok := s.keys[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &k, nil
}

func (s *keyStore) APIKeys(_ context.Context, tenant string) ([]*store.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*store.APIKey
	for _, k := range s.keys {
		if k.Tenant == tenant {
			out = append(out, &k)
		}
	}
	return out, nil
}

func (s *keyStore) RevokeAPIKey(_ context.Context, tenant, id string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok || k.Tenant != tenant {
		return store.ErrNotFound
	}
	if k.RevokedAt.IsZero() {
		k.RevokedAt = at
	}
	s.keys[id] = k
	return nil
}

func (s *keyStore) TouchAPIKey(_ context.Context, id string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[id]
	if at.After(k.LastUsedAt) {
		k.LastUsedAt = at
	}
	s.keys[id] = k
	s.touches++
	return nil
}

func (s *keyStore) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// clock is a movable clock over the real one, so tokens the issuer
// signs with real times stay valid.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// env is one test's gateway side: an issuer, a deployment with tenants
// acme and globex (whose tenant claim value is "org_GLOBEX"), keys, and
// the audit events.
type env struct {
	t      *testing.T
	idp    *fake.OIDCIssuer
	keys   *keyStore
	auth   *inbound.Authenticator
	clock  *clock
	deploy *config.Deployment

	mu     sync.Mutex
	events []inbound.Event
}

type envOptions struct {
	auth          string // the deployment's "auth" object; {} for the default
	minKeyRefresh time.Duration
}

func newEnv(t *testing.T, o *envOptions) *env {
	t.Helper()
	if o == nil {
		o = &envOptions{}
	}
	e := &env{t: t, idp: fake.StartOIDCIssuer(t), keys: newKeyStore(), clock: &clock{}}
	inbound.SetNow(t, e.clock.now)
	auth := o.auth
	if auth == "" {
		auth = fmt.Sprintf(`{"apiKeys": true, "oidc": {"issuer": %q, "audience": %q, "tenantClaim": "org", "userClaim": "email"}}`, e.idp.Issuer, audience)
	}
	doc := `{"publicURL": "http://127.0.0.1:9", "database": "postgres://unused", "auth": ` + auth + `,
		"tenants": {"acme": {}, "globex": {"tenantClaimValue": "org_GLOBEX"}}}`
	d, err := config.ParseDeployment("deploy.json", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.deploy = d
	e.auth, err = inbound.New(&inbound.Options{
		Deployment: d, Keys: e.keys, MinKeyRefresh: o.minKeyRefresh,
		Audit: func(ev inbound.Event) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.events = append(e.events, ev)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.auth.Close)
	return e
}

// key makes and stores an API key.
func (e *env) key(tenant, user string) (string, *store.APIKey) {
	e.t.Helper()
	key, rec, err := inbound.NewKey(tenant, user, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.keys.CreateAPIKey(e.t.Context(), rec); err != nil {
		e.t.Fatal(err)
	}
	return key, rec
}

// claims are a valid token's for the person in tenant claim org.
func (e *env) claims(org string) map[string]any {
	c := e.idp.Claims("user-123", audience, time.Hour)
	c["org"], c["email"] = org, "alice@example.com"
	return c
}

func (e *env) lastEvent() inbound.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.events) == 0 {
		e.t.Fatal("no audit event")
	}
	return e.events[len(e.events)-1]
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

func (e *env) authenticate(h http.Header) (inbound.Principal, error) {
	r := httptest.NewRequestWithContext(e.t.Context(), http.MethodPost, "http://127.0.0.1:9/mcp", nil)
	r.Header = h
	return e.auth.Authenticate(r)
}

// refused checks that h is refused with ErrUnauthenticated itself, and
// that the audit hook got reason and nothing secret.
func (e *env) refused(h http.Header, reason inbound.Reason, secrets ...string) {
	e.t.Helper()
	p, err := e.authenticate(h)
	if err != inbound.ErrUnauthenticated {
		e.t.Fatalf("got %+v, %v; want ErrUnauthenticated itself", p, err)
	}
	if p != (inbound.Principal{}) {
		e.t.Errorf("a refusal came with a principal: %+v", p)
	}
	ev := e.lastEvent()
	if ev.Accepted || ev.Reason != reason {
		e.t.Errorf("audit: %+v, want reason %s", ev, reason)
	}
	dump := fmt.Sprintf("%+v", ev)
	for _, s := range append(secrets, h.Values("Authorization")...) {
		if len(s) > 8 && strings.Contains(dump, s) {
			e.t.Errorf("the audit event holds a secret: %s", dump)
		}
	}
}

func (e *env) accepted(h http.Header, want inbound.Principal) {
	e.t.Helper()
	p, err := e.authenticate(h)
	if err != nil {
		e.t.Fatalf("refused: %v (audit %+v)", err, e.lastEvent())
	}
	if p != want {
		e.t.Errorf("principal %+v, want %+v", p, want)
	}
	if ev := e.lastEvent(); !ev.Accepted || ev.Reason != "" || ev.Tenant != want.Tenant || ev.User != want.User || ev.Via != want.Via || ev.KeyID != want.KeyID {
		e.t.Errorf("audit: %+v", ev)
	}
}

func TestAPIKeys(t *testing.T) {
	e := newEnv(t, nil)
	key, rec := e.key("acme", "")
	alice, aliceRec := e.key("acme", "alice@example.com")
	e.accepted(bearer(key), inbound.Principal{Tenant: "acme", User: "key:" + rec.ID, Via: inbound.ViaKey, KeyID: rec.ID})
	e.accepted(bearer(alice), inbound.Principal{Tenant: "acme", User: "alice@example.com", Via: inbound.ViaKey, KeyID: aliceRec.ID})
	// The scheme is case-insensitive (RFC 9110).
	e.accepted(http.Header{"Authorization": {"bearer " + key}}, inbound.Principal{Tenant: "acme", User: "key:" + rec.ID, Via: inbound.ViaKey, KeyID: rec.ID})

	id, secret, _ := strings.Cut(strings.TrimPrefix(key, inbound.KeyPrefix), "_")
	other, _, _ := inbound.NewKey("acme", "", "")
	_, otherSecret, _ := strings.Cut(strings.TrimPrefix(other, inbound.KeyPrefix), "_")
	otherID, _ := inbound.KeyID(other)

	e.refused(http.Header{}, inbound.ReasonMissing)
	e.refused(http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("acme:"+key))}}, inbound.ReasonScheme, secret)
	e.refused(http.Header{"Authorization": {key}}, inbound.ReasonScheme, secret)
	for _, bad := range []string{"", "   ", "mgk_", key[:len(key)-1], key + "a", strings.ToUpper(key), inbound.KeyPrefix + id + "-" + secret, key + " " + key} {
		e.refused(bearer(bad), inbound.ReasonMalformed, secret)
	}
	e.refused(http.Header{"Authorization": {"Bearer " + key, "Bearer " + key}}, inbound.ReasonMalformed, secret)
	e.refused(bearer(other), inbound.ReasonUnknownKey)
	if ev := e.lastEvent(); ev.KeyID != otherID || ev.Via != inbound.ViaKey {
		t.Errorf("audit of an unknown key: %+v", ev)
	}
	e.refused(bearer(inbound.KeyPrefix+id+"_"+otherSecret), inbound.ReasonWrongSecret, otherSecret)

	if err := e.keys.RevokeAPIKey(t.Context(), "acme", rec.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	e.refused(bearer(key), inbound.ReasonRevoked, secret)
	// The other key of the tenant still works.
	e.accepted(bearer(alice), inbound.Principal{Tenant: "acme", User: "alice@example.com", Via: inbound.ViaKey, KeyID: aliceRec.ID})
}

// A key whose tenant has left the deployment opens nothing.
func TestAPIKeyOfARemovedTenant(t *testing.T) {
	e := newEnv(t, nil)
	key, rec, _ := inbound.NewKey("initech", "", "left in March")
	if err := e.keys.CreateAPIKey(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	e.refused(bearer(key), inbound.ReasonTenant)
}

func TestAPIKeysDisabled(t *testing.T) {
	e := newEnv(t, &envOptions{auth: `{"apiKeys": false, "oidc": {"issuer": "http://127.0.0.1:1", "audience": "a", "tenant": "acme"}}`})
	key, _ := e.key("acme", "")
	e.refused(bearer(key), inbound.ReasonDisabled)
}

// A store that fails is the gateway's problem, not a wrong key: the
// caller must not be told to throw a good key away.
func TestAPIKeyStoreDown(t *testing.T) {
	e := newEnv(t, nil)
	key, _ := e.key("acme", "")
	e.keys.setErr(errors.New("connection refused"))
	_, err := e.authenticate(bearer(key))
	if !errors.Is(err, inbound.ErrUnavailable) || errors.Is(err, inbound.ErrUnauthenticated) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if ev := e.lastEvent(); ev.Accepted || ev.Reason != inbound.ReasonUnavailable {
		t.Errorf("audit: %+v", ev)
	}
}

// A key's use is recorded for `mcpgate keys list`, but not on every
// request.
func TestAPIKeyUseIsRecorded(t *testing.T) {
	e := newEnv(t, nil)
	key, rec := e.key("acme", "")
	for range 3 {
		if _, err := e.authenticate(bearer(key)); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := e.keys.APIKey(t.Context(), rec.ID)
	if e.keys.touches != 1 || first.LastUsedAt.IsZero() {
		t.Fatalf("%d writes of last use for 3 requests within a minute, want 1", e.keys.touches)
	}
	e.clock.advance(inbound.TouchEvery + time.Second)
	if _, err := e.authenticate(bearer(key)); err != nil {
		t.Fatal(err)
	}
	got, _ := e.keys.APIKey(t.Context(), rec.ID)
	if e.keys.touches != 2 || got.LastUsedAt.Sub(first.LastUsedAt) < inbound.TouchEvery {
		t.Errorf("%d writes, last used %v after %v", e.keys.touches, got.LastUsedAt, first.LastUsedAt)
	}
}

func TestNewKey(t *testing.T) {
	key, rec, err := inbound.NewKey("acme", "alice", "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "mgk_") || len(key) != 4+16+1+52 {
		t.Errorf("key %d bytes: %.8s…", len(key), key)
	}
	id, err := inbound.KeyID(key)
	if err != nil || id != rec.ID || !inbound.ValidKeyID(id) {
		t.Errorf("KeyID = %q, %v; record ID %q", id, err, rec.ID)
	}
	secret := key[len("mgk_")+17:]
	if strings.Contains(string(rec.Hash), secret) || len(rec.Hash) != sha256.Size || rec.Tenant != "acme" || rec.User != "alice" || rec.Name != "laptop" || rec.CreatedAt.IsZero() {
		t.Errorf("record %+v", rec)
	}
	again, rec2, _ := inbound.NewKey("acme", "alice", "laptop")
	if again == key || rec2.ID == rec.ID {
		t.Error("two keys are the same")
	}
	for _, bad := range []struct{ tenant, user, name string }{
		{"Acme", "", ""}, {"acme", "", "a\x1b[2Jb"}, {"acme", "alice\n", ""}, {"acme", "", strings.Repeat("x", 129)}, {"acme", " alice", ""},
	} {
		if _, _, err := inbound.NewKey(bad.tenant, bad.user, bad.name); err == nil {
			t.Errorf("NewKey(%q, %q, %q) accepted", bad.tenant, bad.user, bad.name)
		}
	}
	if _, err := inbound.KeyID("mgk_short"); err == nil {
		t.Error("KeyID of a malformed key")
	}
}

func TestJWT(t *testing.T) {
	e := newEnv(t, nil)
	e.accepted(bearer(e.idp.Token(e.claims("acme"))), inbound.Principal{Tenant: "acme", User: "alice@example.com", Via: inbound.ViaJWT})
	// The tenant claim's value chooses a tenant by its tenantClaimValue;
	// aud may be a list.
	c := e.claims("org_GLOBEX")
	c["aud"] = []string{"another-api", audience}
	e.accepted(bearer(e.idp.Token(c)), inbound.Principal{Tenant: "globex", User: "alice@example.com", Via: inbound.ViaJWT})

	with := func(edit func(map[string]any)) string {
		c := e.claims("acme")
		edit(c)
		return e.idp.Token(c)
	}
	other := fake.StartOIDCIssuer(t)
	fromOther := other.Claims("user-123", audience, time.Hour)
	fromOther["org"], fromOther["email"] = "acme", "alice@example.com"

	valid := e.idp.Token(e.claims("acme"))
	parts := strings.Split(valid, ".")
	tampered := e.claims("org_GLOBEX")
	payload, _ := json.Marshal(tampered)

	tests := []struct {
		name   string
		token  string
		reason inbound.Reason
	}{
		{"expired", with(func(c map[string]any) { c["exp"] = time.Now().Add(-2 * time.Minute).Unix() }), inbound.ReasonExpired},
		{"no exp", with(func(c map[string]any) { delete(c, "exp") }), inbound.ReasonExpired},
		{"not yet valid", with(func(c map[string]any) { c["nbf"] = time.Now().Add(10 * time.Minute).Unix() }), inbound.ReasonNotYetValid},
		{"wrong issuer", other.Token(fromOther), inbound.ReasonIssuer},
		{"issuer with a slash", with(func(c map[string]any) { c["iss"] = e.idp.Issuer + "/" }), inbound.ReasonIssuer},
		{"foreign audience", with(func(c map[string]any) { c["aud"] = "another-api" }), inbound.ReasonAudience},
		{"no audience", with(func(c map[string]any) { delete(c, "aud") }), inbound.ReasonAudience},
		{"unconfigured tenant", with(func(c map[string]any) { c["org"] = "initech" }), inbound.ReasonTenant},
		{"tenant by ID when it has a claim value", with(func(c map[string]any) { c["org"] = "globex" }), inbound.ReasonTenant},
		{"no tenant claim", with(func(c map[string]any) { delete(c, "org") }), inbound.ReasonClaim},
		{"tenant claim not a string", with(func(c map[string]any) { c["org"] = []string{"acme"} }), inbound.ReasonClaim},
		{"no user claim", with(func(c map[string]any) { delete(c, "email") }), inbound.ReasonClaim},
		{"user claim not a string", with(func(c map[string]any) { c["email"] = 42 }), inbound.ReasonClaim},
		{"user claim with control characters", with(func(c map[string]any) { c["email"] = "alice\x1b[2J" }), inbound.ReasonClaim},
		{"sender-constrained", with(func(c map[string]any) { c["cnf"] = map[string]string{"jkt": "abc"} }), inbound.ReasonBound},
		{"unsigned (alg none)", segment(map[string]any{"alg": "none", "typ": "JWT"}) + "." + parts[1] + ".", inbound.ReasonSignature},
		{"HS256 with the public key", hs256WithPublicKey(e.idp, e.claims("acme")), inbound.ReasonSignature},
		{"no signature", parts[0] + "." + parts[1] + ".", inbound.ReasonSignature},
		{"unknown key ID", e.idp.Forge("key-unknown", e.claims("acme")), inbound.ReasonSignature},
		{"a published key ID, another key", e.idp.Forge(e.idp.KeyID(), e.claims("acme")), inbound.ReasonSignature},
		{"claims changed after signing", parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2], inbound.ReasonSignature},
		{"not base64", parts[0] + ".%%%." + parts[2], inbound.ReasonMalformed},
		{"JSON serialization", `{"payload":"a.b.c","signatures":[]}`, inbound.ReasonMalformed},
		{"critical header", segment(map[string]any{"alg": "RS256", "crit": []string{"exp"}, "exp": 1}) + "." + parts[1] + "." + parts[2], inbound.ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			e.refused(bearer(tt.token), tt.reason, tt.token)
			if ev := e.lastEvent(); ev.Via != inbound.ViaJWT && tt.reason != inbound.ReasonMalformed {
				t.Errorf("audit via %q", ev.Via)
			}
		})
	}
	e.t = t
	if n := other.JWKSRequests() + other.DiscoveryRequests(); n != 0 {
		t.Errorf("another issuer's token made %d requests to that issuer", n)
	}
}

func segment(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hs256WithPublicKey is the classic algorithm confusion: an HMAC made
// with the issuer's public key, which everybody has, as its secret.
func hs256WithPublicKey(idp *fake.OIDCIssuer, claims map[string]any) string {
	der, err := x509.MarshalPKIXPublicKey(idp.PublicKey())
	if err != nil {
		panic(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	signed := segment(map[string]any{"alg": "HS256", "typ": "JWT", "kid": idp.KeyID()}) + "." + segment(claims)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// The issuer rotates its key: a token of the new key is accepted once the
// keys are fetched again, tokens of the old one still verify while it is
// published, and a made-up key ID is refused without hammering the
// issuer.
func TestJWTKeyRotation(t *testing.T) {
	e := newEnv(t, nil)
	want := inbound.Principal{Tenant: "acme", User: "alice@example.com", Via: inbound.ViaJWT}
	oldToken := e.idp.Token(e.claims("acme"))
	e.accepted(bearer(oldToken), want)
	if n := e.idp.JWKSRequests(); n != 1 {
		t.Fatalf("%d key fetches for the first token", n)
	}

	oldKID := e.idp.KeyID()
	e.idp.Rotate()
	newToken := e.idp.Token(e.claims("acme"))
	e.clock.advance(inbound.DefaultKeyRefresh + time.Second)
	// go-oidc hands a fetch's keys over a moment before it forgets the
	// fetch, and a token arriving in between is answered from that fetch
	// (the first, without the new key): on a loaded machine the first try
	// of the new token may be refused so, and the next one fetches.
	deadline := time.Now().Add(5 * time.Second)
	for e.idp.JWKSRequests() < 2 && time.Now().Before(deadline) {
		e.authenticate(bearer(newToken))
	}
	e.accepted(bearer(newToken), want)
	e.accepted(bearer(oldToken), want)
	if n := e.idp.JWKSRequests(); n != 2 {
		t.Fatalf("%d key fetches after the rotation, want 2", n)
	}

	// Forged key IDs: refused, and the keys are fetched at most once per
	// MinKeyRefresh however many arrive.
	for i := range 20 {
		e.refused(bearer(e.idp.Forge(fmt.Sprintf("made-up-%d", i), e.claims("acme"))), inbound.ReasonSignature)
	}
	if n := e.idp.JWKSRequests(); n != 2 {
		t.Errorf("20 forged tokens made %d key fetches in all, want still 2", n)
	}
	e.clock.advance(inbound.DefaultKeyRefresh + time.Second)
	// As above: the first forged token may be answered from the fetch
	// before, and not fetch again yet.
	deadline = time.Now().Add(5 * time.Second)
	for e.idp.JWKSRequests() < 3 && time.Now().Before(deadline) {
		e.refused(bearer(e.idp.Forge("made-up", e.claims("acme"))), inbound.ReasonSignature)
	}
	if n := e.idp.JWKSRequests(); n != 3 {
		t.Errorf("%d key fetches, want one more once the floor passed", n)
	}

	// The old key retired: its tokens fail once the keys are fetched again.
	e.idp.Retire(oldKID)
	e.clock.advance(inbound.DefaultKeyRefresh + time.Second)
	// An unknown key ID fetches the keys; as above, the first may still be
	// answered from the fetch before, which had the old key.
	before := e.idp.JWKSRequests()
	deadline = time.Now().Add(5 * time.Second)
	for e.idp.JWKSRequests() == before && time.Now().Before(deadline) {
		e.refused(bearer(e.idp.Forge("made-up-again", e.claims("acme"))), inbound.ReasonSignature)
	}
	if e.idp.JWKSRequests() == before {
		t.Fatal("no key fetch after the old key retired")
	}
	e.accepted(bearer(newToken), want)
	// go-oidc hands a fetch's keys to the caller that waited for it a
	// moment before it caches them, so the old key may verify once more.
	deadline = time.Now().Add(5 * time.Second)
	for {
		if _, err := e.authenticate(bearer(oldToken)); err == inbound.ErrUnauthenticated || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	e.refused(bearer(oldToken), inbound.ReasonSignature)
}

// An unreachable issuer makes JWTs unavailable, not wrong; API keys go on
// working; once the issuer is back, after the retry interval, JWTs work.
func TestJWTIssuerDown(t *testing.T) {
	e := newEnv(t, nil)
	key, rec := e.key("acme", "")
	e.idp.SetDown(true)
	token := e.idp.Token(e.claims("acme"))
	for range 3 {
		if _, err := e.authenticate(bearer(token)); !errors.Is(err, inbound.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	}
	if n := e.idp.DiscoveryRequests(); n != 0 {
		t.Fatalf("the fake counted %d discoveries while down", n)
	}
	e.accepted(bearer(key), inbound.Principal{Tenant: "acme", User: "key:" + rec.ID, Via: inbound.ViaKey, KeyID: rec.ID})

	e.idp.SetDown(false)
	if _, err := e.authenticate(bearer(token)); !errors.Is(err, inbound.ErrUnavailable) {
		t.Fatalf("within the retry interval: %v, want the remembered failure", err)
	}
	if n := e.idp.DiscoveryRequests(); n != 0 {
		t.Fatalf("discovery was retried at once (%d)", n)
	}
	e.clock.advance(inbound.DiscoveryRetry + time.Second)
	e.accepted(bearer(token), inbound.Principal{Tenant: "acme", User: "alice@example.com", Via: inbound.ViaJWT})
}

// Many first requests at once share one discovery and one key fetch.
func TestJWTConcurrentFirstRequests(t *testing.T) {
	e := newEnv(t, nil)
	token := e.idp.Token(e.claims("acme"))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			_, err := e.authenticate(bearer(token))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d, k := e.idp.DiscoveryRequests(), e.idp.JWKSRequests(); d != 1 || k != 1 {
		t.Errorf("%d discoveries and %d key fetches for 16 concurrent requests, want 1 and 1", d, k)
	}
}

// One issuer for one tenant: no tenant claim needed, and a token's "org"
// claim (whatever it says) chooses nothing.
func TestJWTFixedTenant(t *testing.T) {
	idp := fake.StartOIDCIssuer(t)
	e := newEnv(t, &envOptions{auth: fmt.Sprintf(`{"apiKeys": false, "oidc": {"issuer": %q, "audience": %q, "tenant": "globex"}}`, idp.Issuer, audience)})
	e.idp = idp
	c := idp.Claims("user-9", audience, time.Hour)
	c["org"] = "acme"
	e.accepted(bearer(idp.Token(c)), inbound.Principal{Tenant: "globex", User: "user-9", Via: inbound.ViaJWT})
	key, _, _ := inbound.NewKey("acme", "", "")
	e.refused(bearer(key), inbound.ReasonDisabled)
}

func TestJWTsDisabled(t *testing.T) {
	e := newEnv(t, &envOptions{auth: `{"apiKeys": true}`})
	e.refused(bearer(e.idp.Token(e.claims("acme"))), inbound.ReasonDisabled)
	if n := e.idp.DiscoveryRequests(); n != 0 {
		t.Errorf("%d discoveries with OIDC off", n)
	}
}

// What the caller sees of any refusal: 401, WWW-Authenticate: Bearer, an
// empty body. The same for every reason.
func TestUnauthorized(t *testing.T) {
	e := newEnv(t, nil)
	other, _, _ := inbound.NewKey("acme", "", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := e.auth.Authenticate(r); err != nil {
			inbound.Unauthorized(w)
			return
		}
		io.WriteString(w, "welcome")
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	var first http.Header
	for _, h := range []http.Header{
		{}, bearer("garbage"), bearer(other), bearer(e.idp.Forge("x", e.claims("acme"))),
		bearer(e.idp.Token(e.claims("initech"))), {"Authorization": {"Basic YTpi"}},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, nil)
		req.Header = h
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(body) != 0 || resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%v: %d %q, WWW-Authenticate %q", h, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
		}
		resp.Header.Del("Date")
		if first == nil {
			first = resp.Header
		} else if fmt.Sprint(resp.Header) != fmt.Sprint(first) {
			t.Errorf("refusals differ: %v and %v", resp.Header, first)
		}
	}
}
