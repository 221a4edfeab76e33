package fake_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// TestProtectionOriginResource: the server is the protected resource of
// its whole origin: root metadata naming the origin, tokens for the origin
// accepted, tokens for the endpoint's own URL refused.
func TestProtectionOriginResource(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a})
	srv.Protect(fake.Protection{OriginResource: true})
	origin := strings.TrimSuffix(srv.URL, fake.Endpoint)

	if srv.ResourceMetadataURL() != origin+"/.well-known/oauth-protected-resource" {
		t.Errorf("ResourceMetadataURL() = %s", srv.ResourceMetadataURL())
	}
	var prm oauthex.ProtectedResourceMetadata
	if status := getJSON(t, srv.ResourceMetadataURL(), &prm); status != http.StatusOK || prm.Resource != origin {
		t.Errorf("root PRM: %d %+v, want resource %q", status, prm, origin)
	}
	if status := getJSON(t, origin+fake.ResourceMetadataPath, nil); status != http.StatusNotFound {
		t.Errorf("path-aware PRM answered %d, want 404", status)
	}
	if ch := challengeParams(t, post(t, srv.URL, initializeBody, nil)); ch["resource_metadata"] != srv.ResourceMetadataURL() {
		t.Errorf("challenge %v", ch)
	}

	a.AddClient(fake.AuthClient{ID: "c", RedirectURIs: []string{loopbackRedirect}})
	forOrigin, _ := a.Mint("c", origin, "read")
	forURL, _ := a.Mint("c", srv.URL, "read")
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + forOrigin}}); resp.StatusCode != http.StatusOK {
		t.Errorf("a token for the origin: %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + forURL}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token for another resource identifier: %d, want 401", resp.StatusCode)
	}
}

const discoverBody = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`

// TestProtectionOpenInitialize: initialize passes without a token, every
// other request is challenged, and the challenges are recorded.
func TestProtectionOpenInitialize(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a})
	srv.Protect(fake.Protection{OpenInitialize: true})
	if resp := post(t, srv.URL, initializeBody, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("initialize without a token: %d, want 200", resp.StatusCode)
	}
	resp := post(t, srv.URL, discoverBody, http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"server/discover"}})
	if resp.StatusCode != http.StatusUnauthorized || challengeParams(t, resp)["scope"] != fake.ChallengeScope {
		t.Errorf("server/discover without a token: %d %v", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	want := []fake.Challenged{{Method: "server/discover", ProtocolVersion: "2026-07-28", MethodHeader: "server/discover"}}
	if got := srv.Challenges(); !slices.Equal(got, want) {
		t.Errorf("Challenges() = %+v, want %+v", got, want)
	}
}

// TestProtectionRefuseDiscover: server/discover gets 400 before any token
// check; initialize is challenged as usual.
func TestProtectionRefuseDiscover(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a})
	srv.Protect(fake.Protection{RefuseDiscover: true})
	if resp := post(t, srv.URL, discoverBody, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("server/discover: %d, want 400", resp.StatusCode)
	}
	if resp := post(t, srv.URL, initializeBody, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("initialize: %d, want 401", resp.StatusCode)
	}
}

// TestProtectionStepUpChallenges: what a 403 names with ChallengeMissingOnly,
// and NeverEnoughScope refusing a token that holds the scope.
func TestProtectionStepUpChallenges(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	a.AddClient(fake.AuthClient{ID: "c", RedirectURIs: []string{loopbackRedirect}})
	for name, tc := range map[string]struct {
		p      fake.Protection
		scopes []string
		status int
		scope  string
	}{
		"default names held and missing": {fake.Protection{}, []string{"read"}, http.StatusForbidden, "read admin"},
		"missing only":                   {fake.Protection{ChallengeMissingOnly: true}, []string{"read"}, http.StatusForbidden, "admin"},
		"never enough":                   {fake.Protection{NeverEnoughScope: true}, []string{"read", "admin"}, http.StatusForbidden, "read admin"},
		"enough":                         {fake.Protection{}, []string{"read", "admin"}, http.StatusOK, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fake.Start(t, &fake.Options{Auth: a, ToolScopes: map[string]string{"admin_reset": "admin"}})
			srv.Protect(tc.p)
			at, _ := a.Mint("c", srv.URL, tc.scopes...)
			cs := connect(t, srv.URL, nil, bearer(at))
			_, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "admin_reset"})
			if tc.status == http.StatusOK {
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				return
			}
			resp := post(t, srv.URL, toolsCallAdmin, http.Header{"Authorization": {"Bearer " + at}})
			if resp.StatusCode != tc.status {
				t.Fatalf("raw call: %d, want %d", resp.StatusCode, tc.status)
			}
			if ch := challengeParams(t, resp); ch["error"] != "insufficient_scope" || ch["scope"] != tc.scope {
				t.Errorf("challenge %v, want scope %q", ch, tc.scope)
			}
		})
	}
}

// TestProtectionShiftingScope: every refusal names a scope never named
// before, whatever the token holds.
func TestProtectionShiftingScope(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	a.AddClient(fake.AuthClient{ID: "c", RedirectURIs: []string{loopbackRedirect}})
	srv := fake.Start(t, &fake.Options{Auth: a, ToolScopes: map[string]string{"admin_reset": "admin"}})
	srv.Protect(fake.Protection{ShiftingScope: true, ChallengeMissingOnly: true})
	at, _ := a.Mint("c", srv.URL, "read", "admin")
	for _, want := range []string{"admin-1", "admin-2", "admin-3"} {
		resp := post(t, srv.URL, toolsCallAdmin, http.Header{"Authorization": {"Bearer " + at}})
		if ch := challengeParams(t, resp); resp.StatusCode != http.StatusForbidden || ch["error"] != "insufficient_scope" || ch["scope"] != want {
			t.Errorf("refusal %d %v, want 403 insufficient_scope for %q", resp.StatusCode, ch, want)
		}
	}
}

// TestStartLegacy: a 2025-03-26 server serves no protected resource
// metadata, challenges with a bare Bearer, and hosts its authorization
// server on its own origin: metadata at the root (endpoints under /oauth),
// or nothing and the default endpoints.
func TestStartLegacy(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]fake.LegacyAuth{"metadata": fake.LegacyMetadata, "defaults": fake.LegacyDefaults} {
		t.Run(name, func(t *testing.T) {
			srv, a := fake.StartLegacy(t, mode, nil)
			origin := strings.TrimSuffix(srv.URL, fake.Endpoint)
			if status := getJSON(t, origin+fake.ResourceMetadataPath, nil); status != http.StatusNotFound {
				t.Errorf("path-aware PRM: %d", status)
			}
			if status := getJSON(t, origin+"/.well-known/oauth-protected-resource", nil); status != http.StatusNotFound {
				t.Errorf("root PRM: %d", status)
			}
			if got := post(t, srv.URL, initializeBody, nil).Header.Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("challenge %q, want a bare Bearer", got)
			}
			var m map[string]any
			status := getJSON(t, origin+"/.well-known/oauth-authorization-server", &m)
			wantAuthorize := origin + "/authorize"
			if mode == fake.LegacyMetadata {
				wantAuthorize = origin + "/oauth/authorize"
				if status != http.StatusOK || m["issuer"] != origin || m["authorization_endpoint"] != wantAuthorize {
					t.Errorf("metadata %d %v", status, m)
				}
			} else if status != http.StatusNotFound {
				t.Errorf("metadata answered %d, want 404", status)
			}
			if a.Issuer != origin || a.AuthorizationEndpoint != wantAuthorize {
				t.Errorf("issuer %s, authorization endpoint %s", a.Issuer, a.AuthorizationEndpoint)
			}
			client := publicClient(t, a)
			tr := login(t, a, client, srv.URL, "read")
			if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + tr.AccessToken}}); resp.StatusCode != http.StatusOK {
				t.Errorf("initialize with the token: %d", resp.StatusCode)
			}
		})
	}
}

// TestMoveAuth: after the move the metadata names the new authorization
// server, whose tokens are accepted, and the old one's are refused.
func TestMoveAuth(t *testing.T) {
	t.Parallel()
	a1, a2 := fake.StartAuth(t, nil), fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a1})
	for _, a := range []*fake.AuthServer{a1, a2} {
		a.AddClient(fake.AuthClient{ID: "c", RedirectURIs: []string{loopbackRedirect}})
	}
	t1, _ := a1.Mint("c", srv.URL, "read")
	t2, _ := a2.Mint("c", srv.URL, "read")
	srv.MoveAuth(a2)
	var prm oauthex.ProtectedResourceMetadata
	if getJSON(t, srv.ResourceMetadataURL(), &prm); !slices.Equal(prm.AuthorizationServers, []string{a2.Issuer}) {
		t.Errorf("authorization_servers %v, want only %s", prm.AuthorizationServers, a2.Issuer)
	}
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + t1}}); resp.StatusCode != http.StatusUnauthorized || challengeParams(t, resp)["error"] != "invalid_token" {
		t.Errorf("the old server's token: %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + t2}}); resp.StatusCode != http.StatusOK {
		t.Errorf("the new server's token: %d", resp.StatusCode)
	}
}

// TestRegistrationApplicationType: a registration that says what kind of
// client it is must redirect accordingly; one that does not say is not
// checked.
func TestRegistrationApplicationType(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	for _, tc := range []struct {
		appType  any
		redirect string
		ok       bool
	}{
		{"native", loopbackRedirect, true},
		{"native", "https://app.example/callback", false},
		{"web", "https://app.example/callback", true},
		{"web", loopbackRedirect, false},
		{"desktop", loopbackRedirect, false},
		{nil, loopbackRedirect, true},
	} {
		meta := map[string]any{"redirect_uris": []string{tc.redirect}, "token_endpoint_auth_method": "none"}
		if tc.appType != nil {
			meta["application_type"] = tc.appType
		}
		status, resp := register(t, a, meta)
		if (status == http.StatusCreated) != tc.ok {
			t.Errorf("application_type %v with %s: %d %v", tc.appType, tc.redirect, status, resp)
		}
		if got := a.LastRegistration()["application_type"]; got != tc.appType {
			t.Errorf("LastRegistration application_type %v, want %v", got, tc.appType)
		}
	}
}

// dpopSigner makes DPoP proofs for the fake tests.
type dpopSigner struct{ key *ecdsa.PrivateKey }

func newDPoPSigner(t *testing.T) dpopSigner {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return dpopSigner{k}
}

func (d dpopSigner) proof(t *testing.T, method, htu, token, nonce string, edit func(h, c map[string]any)) string {
	t.Helper()
	raw, _ := d.key.PublicKey.Bytes()
	h := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": map[string]string{"kty": "EC", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(raw[1:33]), "y": base64.RawURLEncoding.EncodeToString(raw[33:])}}
	c := map[string]any{"jti": rand.Text(), "htm": method, "htu": htu, "iat": time.Now().Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		c["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		c["nonce"] = nonce
	}
	if edit != nil {
		edit(h, c)
	}
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	signed := enc(h) + "." + enc(c)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, d.key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...))
}

// TestDPoPFakes: the authorization server binds a token to the proof's key
// and asks for its nonce; the server takes the bound token only with the
// DPoP scheme and a fresh, exact proof by that key.
func TestDPoPFakes(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, &fake.AuthOptions{DPoP: true, DPoPNonce: "as-n"})
	srv := fake.Start(t, &fake.Options{Auth: a})
	srv.Protect(fake.Protection{DPoP: true, DPoPNonce: "rs-n"})
	var m map[string]any
	if getJSON(t, a.MetadataURL, &m); !equalJSON(m["dpop_signing_alg_values_supported"], []any{"ES256"}) {
		t.Errorf("metadata %v", m["dpop_signing_alg_values_supported"])
	}
	if ch := post(t, srv.URL, initializeBody, nil).Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, `DPoP algs="ES256"`) {
		t.Errorf("challenge %q, want the DPoP scheme", ch)
	}

	client := publicClient(t, a)
	d := newDPoPSigner(t)
	tokenWith := func(proof string) tokenResponse {
		verifier := oauth2.GenerateVerifier()
		loc := authorize(t, a.AuthorizationEndpoint, authorizeQuery(client, verifier, srv.URL, "read"))
		form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {loopbackRedirect},
			"code_verifier": {verifier}, "client_id": {client}, "resource": {srv.URL}}
		req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, a.TokenEndpoint, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("DPoP", proof)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		tr := tokenResponse{Status: resp.StatusCode, Header: resp.Header}
		json.NewDecoder(resp.Body).Decode(&tr)
		return tr
	}
	tr := tokenWith(d.proof(t, "POST", a.TokenEndpoint, "", "", nil))
	if tr.Error != "use_dpop_nonce" || tr.Header.Get("DPoP-Nonce") != "as-n" {
		t.Fatalf("token request without the nonce: %+v", tr)
	}
	if tr := tokenWith(d.proof(t, "POST", a.TokenEndpoint+"x", "", "as-n", nil)); tr.Error != "invalid_dpop_proof" {
		t.Errorf("a proof for another URI: %+v", tr)
	}
	tr = tokenWith(d.proof(t, "POST", a.TokenEndpoint, "", "as-n", nil))
	if tr.Status != http.StatusOK || tr.TokenType != "DPoP" {
		t.Fatalf("token request with the nonce: %+v", tr)
	}

	call := func(auth, proof string) *http.Response {
		h := http.Header{"Authorization": {auth}}
		if proof != "" {
			h.Set("DPoP", proof)
		}
		return post(t, srv.URL, initializeBody, h)
	}
	at := tr.AccessToken
	if r := call("Bearer "+at, ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("the bound token as Bearer: %d", r.StatusCode)
	}
	r := call("DPoP "+at, d.proof(t, "POST", srv.URL, at, "", nil))
	if r.StatusCode != http.StatusUnauthorized || r.Header.Get("DPoP-Nonce") != "rs-n" || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="use_dpop_nonce"`) {
		t.Errorf("without the server's nonce: %d %v", r.StatusCode, r.Header)
	}
	other := newDPoPSigner(t)
	for name, proof := range map[string]string{
		"another key":   other.proof(t, "POST", srv.URL, at, "rs-n", nil),
		"another token": d.proof(t, "POST", srv.URL, "at-other", "rs-n", nil),
		"GET":           d.proof(t, "GET", srv.URL, at, "rs-n", nil),
		"old":           d.proof(t, "POST", srv.URL, at, "rs-n", func(_, c map[string]any) { c["iat"] = time.Now().Add(-time.Hour).Unix() }),
		"typ JWT":       d.proof(t, "POST", srv.URL, at, "rs-n", func(h, _ map[string]any) { h["typ"] = "JWT" }),
	} {
		if r := call("DPoP "+at, proof); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, r.StatusCode)
		}
	}
	good := d.proof(t, "POST", srv.URL, at, "rs-n", nil)
	if r := call("DPoP "+at, good); r.StatusCode != http.StatusOK {
		t.Errorf("a good proof: %d", r.StatusCode)
	}
	if r := call("DPoP "+at, good); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("the same proof again: %d, want 401", r.StatusCode)
	}
	if got := srv.DPoP(); got.Accepted != 1 || got.NonceChallenges != 1 || got.Refused < 6 {
		t.Errorf("DPoP() = %+v", got)
	}
	if proofs, challenged := a.DPoPTokenRequests(); proofs != 3 || challenged != 1 {
		t.Errorf("DPoPTokenRequests() = %d, %d", proofs, challenged)
	}
}
