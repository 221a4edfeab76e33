package fake_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// loopbackRedirect is the redirect URI the tests register; the port is
// never listened on, since the tests read the authorize redirect themselves.
const loopbackRedirect = "http://127.0.0.1:8976/callback"

// noRedirects is an HTTP client that hands back redirects instead of
// following them.
var noRedirects = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// getJSON GETs u and decodes a JSON answer into v; it returns the status.
func getJSON(t *testing.T, u string, v any) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("decoding %s: %v", u, err)
		}
	}
	return resp.StatusCode
}

// register does dynamic client registration with the given metadata.
func register(t *testing.T, a *fake.AuthServer, meta map[string]any) (status int, resp map[string]any) {
	t.Helper()
	body, _ := json.Marshal(meta)
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, a.RegistrationEndpoint, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	json.NewDecoder(r.Body).Decode(&resp)
	return r.StatusCode, resp
}

// publicClient registers a public client that may refresh.
func publicClient(t *testing.T, a *fake.AuthServer) string {
	t.Helper()
	status, resp := register(t, a, map[string]any{
		"redirect_uris":              []string{loopbackRedirect},
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"client_name":                "fake test",
	})
	if status != http.StatusCreated {
		t.Fatalf("registration answered %d %v", status, resp)
	}
	return resp["client_id"].(string)
}

// authorize sends the person's browser to the authorize endpoint and
// returns the redirect it answers with.
func authorize(t *testing.T, endpoint string, q url.Values) *url.URL {
	t.Helper()
	return visitAuthorize(t, endpoint+"?"+q.Encode())
}

// visitAuthorize GETs an authorization URL and returns its redirect.
func visitAuthorize(t *testing.T, u string) *url.URL {
	t.Helper()
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, u, nil)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("authorize answered %d %s, want 302", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// authorizeQuery is a valid authorization request for a public client.
func authorizeQuery(clientID, verifier, resource, scope string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {loopbackRedirect},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"S256"},
		"state":                 {"st-" + rand.Text()},
		"resource":              {resource},
		"scope":                 {scope},
	}
}

// tokenResponse is a token endpoint answer, success or error.
type tokenResponse struct {
	Status       int
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
	Header       http.Header
}

// postForm posts a form to an OAuth endpoint, with Basic credentials when
// user is not empty.
func postForm(t *testing.T, endpoint string, form url.Values, user, pass string) tokenResponse {
	t.Helper()
	tr, err := doForm(testContext(t), endpoint, form, user, pass)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func doForm(ctx context.Context, endpoint string, form url.Values, user, pass string) (tokenResponse, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return tokenResponse{}, err
	}
	defer resp.Body.Close()
	tr := tokenResponse{Status: resp.StatusCode, Header: resp.Header}
	body, _ := io.ReadAll(resp.Body)
	if len(body) > 0 {
		if err := json.Unmarshal(body, &tr); err != nil {
			return tr, fmt.Errorf("token endpoint answered %d %q: %v", resp.StatusCode, body, err)
		}
	}
	return tr, nil
}

func (tr tokenResponse) wantError(t *testing.T, code string) {
	t.Helper()
	if tr.Error != code || tr.AccessToken != "" {
		t.Errorf("answered %d error=%q (%s) token=%q, want error %q", tr.Status, tr.Error, tr.Description, tr.AccessToken, code)
	}
}

// login runs a public client's whole authorization code flow and returns
// the token response.
func login(t *testing.T, a *fake.AuthServer, clientID, resource, scope string) tokenResponse {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	loc := authorize(t, a.AuthorizationEndpoint, authorizeQuery(clientID, verifier, resource, scope))
	tr := postForm(t, a.TokenEndpoint, url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {loc.Query().Get("code")},
		"redirect_uri":  {loopbackRedirect},
		"code_verifier": {verifier},
		"client_id":     {clientID},
		"resource":      {resource},
	}, "", "")
	if tr.Status != http.StatusOK {
		t.Fatalf("exchange answered %d %s: %s", tr.Status, tr.Error, tr.Description)
	}
	return tr
}

// bearer is an HTTP client sending an access token.
func bearer(token string) *http.Client {
	return &http.Client{Transport: headerTransport{"Authorization": {"Bearer " + token}}}
}

// challengeParams parses the single Bearer challenge of a response.
func challengeParams(t *testing.T, resp *http.Response) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(cs) != 1 || cs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: %v %v", resp.Header.Values("WWW-Authenticate"), cs, err)
	}
	return cs[0].Params
}

const toolsCallAdmin = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"admin_reset","arguments":{}}}`

// TestAuthFlow walks what an MCP client does, by hand: discovery from the
// 401, registration, authorization with PKCE, exchange, calls, refresh with
// rotation, and revocation.
func TestAuthFlow(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a, ToolScopes: map[string]string{"admin_reset": "admin"}})
	ctx := testContext(t)

	// Without a token: 401 pointing at the protected resource metadata.
	resp := post(t, srv.URL, initializeBody, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %d, want 401", resp.StatusCode)
	}
	ch := challengeParams(t, resp)
	wantPRM := strings.TrimSuffix(srv.URL, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
	if ch["resource_metadata"] != wantPRM || srv.ResourceMetadataURL() != wantPRM || ch["scope"] != "read" || ch["error"] != "" {
		t.Errorf("challenge %v, want resource_metadata %s and scope read, no error", ch, wantPRM)
	}

	var prm oauthex.ProtectedResourceMetadata
	if status := getJSON(t, ch["resource_metadata"], &prm); status != http.StatusOK {
		t.Fatalf("PRM: %d", status)
	}
	if prm.Resource != srv.URL || !slices.Equal(prm.AuthorizationServers, []string{a.Issuer}) ||
		!slices.Equal(prm.BearerMethodsSupported, []string{"header"}) || !slices.Equal(prm.ScopesSupported, []string{"read", "write", "admin"}) {
		t.Errorf("PRM = %+v", prm)
	}

	var asm oauthex.AuthServerMeta
	if status := getJSON(t, a.Issuer+"/.well-known/oauth-authorization-server", &asm); status != http.StatusOK {
		t.Fatalf("AS metadata: %d", status)
	}
	if asm.Issuer != a.Issuer || asm.AuthorizationEndpoint != a.AuthorizationEndpoint || asm.TokenEndpoint != a.TokenEndpoint ||
		asm.RegistrationEndpoint != a.RegistrationEndpoint || asm.RevocationEndpoint != a.RevocationEndpoint ||
		!slices.Equal(asm.CodeChallengeMethodsSupported, []string{"S256"}) || !asm.AuthorizationResponseIssParameterSupported ||
		!slices.Contains(asm.ScopesSupported, "offline_access") || !slices.Equal(asm.ResponseTypesSupported, []string{"code"}) {
		t.Errorf("AS metadata = %+v", asm)
	}

	// Registration: a public client, as the test's helper does it.
	clientID := publicClient(t, a)
	if a.Registrations() != 1 {
		t.Errorf("Registrations() = %d", a.Registrations())
	}

	// Authorization with golang.org/x/oauth2 building the URL; the redirect
	// is read by hand, at a different loopback port than registered.
	conf := &oauth2.Config{
		ClientID:    clientID,
		Endpoint:    oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: "http://127.0.0.1:40404/callback",
		Scopes:      []string{"read", "offline_access", "unknown"},
	}
	verifier := oauth2.GenerateVerifier()
	resource := oauth2.SetAuthURLParam("resource", prm.Resource)
	loc := visitAuthorize(t, conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier), resource))
	got := loc.Query()
	if loc.Host != "127.0.0.1:40404" || loc.Path != "/callback" || got.Get("state") != "state-1" || got.Get("iss") != a.Issuer || got.Get("code") == "" {
		t.Fatalf("redirect to %s", loc)
	}
	last := a.LastAuthorizeRequest()
	if last.Get("resource") != srv.URL || last.Get("code_challenge_method") != "S256" || last.Get("state") != "state-1" || a.Authorizations() != 1 {
		t.Errorf("LastAuthorizeRequest() = %v, Authorizations() = %d", last, a.Authorizations())
	}

	tok, err := conf.Exchange(ctx, got.Get("code"), oauth2.VerifierOption(verifier), resource)
	if err != nil {
		t.Fatal(err)
	}
	if scope := tok.Extra("scope"); scope != "read offline_access" {
		t.Errorf("granted scope %v, want the supported ones requested", scope)
	}
	if tok.RefreshToken == "" || tok.Expiry.IsZero() || tok.TokenType != "Bearer" {
		t.Errorf("token %+v", tok)
	}
	if r := a.LastTokenRequest("authorization_code"); r.Get("resource") != srv.URL || r.Get("code_verifier") != verifier {
		t.Errorf("LastTokenRequest(authorization_code) = %v", r)
	}
	if !slices.Contains(a.IssuedTokens(), tok.AccessToken) || !slices.Contains(a.IssuedTokens(), tok.RefreshToken) {
		t.Errorf("IssuedTokens() misses the token")
	}
	for _, secret := range []string{tok.AccessToken, got.Get("code"), verifier, "state-1"} {
		if !slices.Contains(a.Secrets(), secret) {
			t.Errorf("Secrets() misses %q", secret)
		}
	}

	// The go-sdk client with the token: tools work, admin_reset needs admin.
	cs := connect(t, srv.URL, nil, bearer(tok.AccessToken))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "authorized"}})
	if err != nil || text(res) != "authorized" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "admin_reset"}); err == nil {
		t.Error("admin_reset without the admin scope succeeded")
	}
	resp = post(t, srv.URL, toolsCallAdmin, http.Header{"Authorization": {"Bearer " + tok.AccessToken}, "Mcp-Session-Id": {cs.ID()}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("admin_reset: %d, want 403", resp.StatusCode)
	}
	ch = challengeParams(t, resp)
	if ch["error"] != "insufficient_scope" || ch["scope"] != "read admin" || ch["resource_metadata"] != wantPRM {
		t.Errorf("403 challenge %v", ch)
	}
	if srv.Forbidden() != 2 || srv.Requests("tools/call") != 1 {
		t.Errorf("Forbidden() = %d, Requests(tools/call) = %d, want 2 and 1", srv.Forbidden(), srv.Requests("tools/call"))
	}

	// Refresh, with resource, by hand (x/oauth2 cannot add it): rotation.
	refresh := func(rt string) tokenResponse {
		return postForm(t, a.TokenEndpoint, url.Values{
			"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}, "resource": {srv.URL},
		}, "", "")
	}
	r1 := refresh(tok.RefreshToken)
	if r1.Status != http.StatusOK || r1.RefreshToken == "" || r1.RefreshToken == tok.RefreshToken || r1.Scope != "read offline_access" {
		t.Fatalf("refresh: %+v", r1)
	}
	if r := a.LastTokenRequest("refresh_token"); r.Get("resource") != srv.URL || a.TokenRequests("refresh_token") != 1 {
		t.Errorf("LastTokenRequest(refresh_token) = %v", r)
	}
	refresh(tok.RefreshToken).wantError(t, "invalid_grant")
	// Reusing a rotated token revokes the chain (RFC 9700 §4.14.2).
	refresh(r1.RefreshToken).wantError(t, "invalid_grant")
	// Access tokens of the chain stay valid until they expire.
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + r1.AccessToken}}); resp.StatusCode != http.StatusOK {
		t.Errorf("refreshed access token: %d", resp.StatusCode)
	}

	// Revocation of a refresh token takes its access tokens with it.
	tr := login(t, a, clientID, srv.URL, "read")
	rv := postForm(t, a.RevocationEndpoint, url.Values{"token": {tr.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {clientID}}, "", "")
	if rv.Status != http.StatusOK || a.Revocations() != 1 {
		t.Errorf("revocation: %d, Revocations() = %d", rv.Status, a.Revocations())
	}
	refresh(tr.RefreshToken).wantError(t, "invalid_grant")
	resp = post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + tr.AccessToken}})
	if ch := challengeParams(t, resp); resp.StatusCode != http.StatusUnauthorized || ch["error"] != "invalid_token" {
		t.Errorf("revoked access token: %d %v", resp.StatusCode, ch)
	}
	if rv := postForm(t, a.RevocationEndpoint, url.Values{"token": {"no-such-token"}, "client_id": {clientID}}, "", ""); rv.Status != http.StatusOK {
		t.Errorf("revoking an unknown token: %d, want 200 (RFC 7009)", rv.Status)
	}
}

// TestAuthRefusals: what a strict authorization server refuses.
func TestAuthRefusals(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	const resource = "http://127.0.0.1:1/mcp"
	clientID := publicClient(t, a)
	verifier := oauth2.GenerateVerifier()

	t.Run("authorize", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			edit func(url.Values)
			want string // error in the redirect
		}{
			{"missing resource", func(q url.Values) { q.Del("resource") }, "invalid_request"},
			{"relative resource", func(q url.Values) { q.Set("resource", "/mcp") }, "invalid_target"},
			{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain"); q.Set("code_challenge", verifier) }, "invalid_request"},
			{"no PKCE method", func(q url.Values) { q.Del("code_challenge_method") }, "invalid_request"},
			{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "invalid_request"},
			{"token response type", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
			{"repeated parameter", func(q url.Values) { q.Add("scope", "admin") }, "invalid_request"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				q := authorizeQuery(clientID, verifier, resource, "read")
				tc.edit(q)
				got := authorize(t, a.AuthorizationEndpoint, q).Query()
				if got.Get("error") != tc.want || got.Get("code") != "" || got.Get("state") != q.Get("state") || got.Get("iss") != a.Issuer {
					t.Errorf("redirect %v, want error %s with state and iss", got, tc.want)
				}
			})
		}
		// Unknown clients and redirect URIs are never redirected to.
		for name, edit := range map[string]func(url.Values){
			"unknown client":       func(q url.Values) { q.Set("client_id", "nobody") },
			"unregistered path":    func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:8976/other") },
			"unregistered host":    func(q url.Values) { q.Set("redirect_uri", "http://localhost:8976/callback") },
			"https instead":        func(q url.Values) { q.Set("redirect_uri", "https://127.0.0.1:8976/callback") },
			"missing redirect_uri": func(q url.Values) { q.Del("redirect_uri") },
		} {
			t.Run(name, func(t *testing.T) {
				q := authorizeQuery(clientID, verifier, resource, "read")
				edit(q)
				resp, err := noRedirects.Get(a.AuthorizationEndpoint + "?" + q.Encode())
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
					t.Errorf("answered %d to %s, want 400 without redirect", resp.StatusCode, resp.Header.Get("Location"))
				}
			})
		}
	})

	t.Run("exchange", func(t *testing.T) {
		code := func() string {
			return authorize(t, a.AuthorizationEndpoint, authorizeQuery(clientID, verifier, resource, "read")).Query().Get("code")
		}
		form := func(code string) url.Values {
			return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {loopbackRedirect},
				"code_verifier": {verifier}, "client_id": {clientID}, "resource": {resource}}
		}
		for _, tc := range []struct {
			name string
			edit func(url.Values)
			want string
		}{
			{"wrong verifier", func(f url.Values) { f.Set("code_verifier", oauth2.GenerateVerifier()) }, "invalid_grant"},
			{"challenge as verifier", func(f url.Values) { f.Set("code_verifier", oauth2.S256ChallengeFromVerifier(verifier)) }, "invalid_grant"},
			{"no verifier", func(f url.Values) { f.Del("code_verifier") }, "invalid_request"},
			{"missing resource", func(f url.Values) { f.Del("resource") }, "invalid_request"},
			{"other resource", func(f url.Values) { f.Set("resource", "http://127.0.0.1:2/mcp") }, "invalid_target"},
			{"other redirect_uri", func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:9999/callback") }, "invalid_grant"},
			{"other client", func(f url.Values) { f.Set("client_id", publicClient(t, a)) }, "invalid_grant"},
			{"secret for a public client", func(f url.Values) { f.Set("client_secret", "x") }, "invalid_client"},
			{"unknown grant", func(f url.Values) { f.Set("grant_type", "password") }, "unsupported_grant_type"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := form(code())
				tc.edit(f)
				postForm(t, a.TokenEndpoint, f, "", "").wantError(t, tc.want)
			})
		}
		t.Run("code reuse", func(t *testing.T) {
			f := form(code())
			first := postForm(t, a.TokenEndpoint, f, "", "")
			if first.Status != http.StatusOK {
				t.Fatalf("first exchange: %+v", first)
			}
			postForm(t, a.TokenEndpoint, f, "", "").wantError(t, "invalid_grant")
			// RFC 6749 §4.1.2: what the code bought is revoked too.
			postForm(t, a.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken},
				"client_id": {clientID}, "resource": {resource}}, "", "").wantError(t, "invalid_grant")
		})
	})

	t.Run("refresh", func(t *testing.T) {
		tr := login(t, a, clientID, resource, "read write")
		base := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}, "client_id": {clientID}, "resource": {resource}}
		for _, tc := range []struct {
			name string
			edit func(url.Values)
			want string
		}{
			{"missing resource", func(f url.Values) { f.Del("resource") }, "invalid_request"},
			{"other resource", func(f url.Values) { f.Set("resource", "http://127.0.0.1:2/mcp") }, "invalid_target"},
			{"more scope", func(f url.Values) { f.Set("scope", "read admin") }, "invalid_scope"},
			{"unknown token", func(f url.Values) { f.Set("refresh_token", "rt-nope") }, "invalid_grant"},
			{"access token", func(f url.Values) { f.Set("refresh_token", tr.AccessToken) }, "invalid_grant"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := cloneForm(base)
				tc.edit(f)
				postForm(t, a.TokenEndpoint, f, "", "").wantError(t, tc.want)
			})
		}
		f := cloneForm(base)
		f.Set("scope", "read")
		if r := postForm(t, a.TokenEndpoint, f, "", ""); r.Status != http.StatusOK || r.Scope != "read" {
			t.Errorf("narrowing refresh: %+v", r)
		}
	})
}

func cloneForm(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

func TestAuthRegistration(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	for _, tc := range []struct {
		name string
		meta map[string]any
		want string // error code, "" for success
	}{
		{"loopback", map[string]any{"redirect_uris": []string{"http://127.0.0.1:1/cb", "http://[::1]/cb", "http://localhost:5/cb"}}, ""},
		{"https", map[string]any{"redirect_uris": []string{"https://app.example/cb"}}, ""},
		{"no redirect_uris", map[string]any{}, "invalid_redirect_uri"},
		{"loopback without path", map[string]any{"redirect_uris": []string{"http://127.0.0.1:5"}}, "invalid_redirect_uri"},
		{"http elsewhere", map[string]any{"redirect_uris": []string{"http://app.example/cb"}}, "invalid_redirect_uri"},
		{"custom scheme", map[string]any{"redirect_uris": []string{"com.example.app:/cb"}}, "invalid_redirect_uri"},
		{"fragment", map[string]any{"redirect_uris": []string{"https://app.example/cb#x"}}, "invalid_redirect_uri"},
		{"javascript", map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
		{"private_key_jwt", map[string]any{"redirect_uris": []string{loopbackRedirect}, "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"},
		{"implicit", map[string]any{"redirect_uris": []string{loopbackRedirect}, "grant_types": []string{"implicit"}}, "invalid_client_metadata"},
		{"public client_credentials", map[string]any{"grant_types": []string{"client_credentials"}, "token_endpoint_auth_method": "none"}, "invalid_client_metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, resp := register(t, a, tc.meta)
			if tc.want == "" {
				if status != http.StatusCreated || resp["client_id"] == "" {
					t.Errorf("answered %d %v, want 201", status, resp)
				}
				return
			}
			if status != http.StatusBadRequest || resp["error"] != tc.want {
				t.Errorf("answered %d %v, want 400 %s", status, resp, tc.want)
			}
		})
	}

	// RFC 7591 §2: without token_endpoint_auth_method, client_secret_basic.
	status, resp := register(t, a, map[string]any{"redirect_uris": []string{loopbackRedirect}})
	if status != http.StatusCreated || resp["token_endpoint_auth_method"] != "client_secret_basic" || resp["client_secret"] == nil ||
		resp["client_secret_expires_at"] != 0.0 || !slices.Equal(toStrings(resp["grant_types"]), []string{"authorization_code"}) {
		t.Errorf("default registration %v", resp)
	}
	if status, resp := register(t, a, map[string]any{"redirect_uris": []string{loopbackRedirect}, "token_endpoint_auth_method": "none"}); status != http.StatusCreated || resp["client_secret"] != nil {
		t.Errorf("public registration %d %v", status, resp)
	}

	// Without the refresh_token grant type, no refresh token.
	id, secret := resp["client_id"].(string), resp["client_secret"].(string)
	verifier := oauth2.GenerateVerifier()
	code := authorize(t, a.AuthorizationEndpoint, authorizeQuery(id, verifier, "http://127.0.0.1:1/mcp", "read offline_access")).Query().Get("code")
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {loopbackRedirect},
		"code_verifier": {verifier}, "resource": {"http://127.0.0.1:1/mcp"}}
	// The registered method is Basic; the post method is refused.
	post := cloneForm(exchange)
	post.Set("client_id", id)
	post.Set("client_secret", secret)
	if tr := postForm(t, a.TokenEndpoint, post, "", ""); tr.Error != "invalid_client" || tr.Status != http.StatusUnauthorized {
		t.Errorf("client_secret_post for a Basic client: %+v", tr)
	}
	if tr := postForm(t, a.TokenEndpoint, exchange, id, "wrong"); tr.Error != "invalid_client" || !strings.HasPrefix(tr.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("wrong secret: %+v", tr)
	}
	tr := postForm(t, a.TokenEndpoint, exchange, id, secret)
	if tr.Status != http.StatusOK || tr.RefreshToken != "" || tr.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("exchange by a client without refresh_token grant: %+v", tr)
	}
	if a.Registrations() != 4 {
		t.Errorf("Registrations() = %d, want 4", a.Registrations())
	}

	t.Run("NoDCR", func(t *testing.T) {
		a := fake.StartAuth(t, &fake.AuthOptions{NoDCR: true, NoRevocation: true})
		var m map[string]any
		getJSON(t, a.MetadataURL, &m)
		if _, ok := m["registration_endpoint"]; ok || a.RegistrationEndpoint != "" || a.RevocationEndpoint != "" || m["revocation_endpoint"] != nil {
			t.Errorf("metadata %v advertises registration or revocation", m)
		}
		if status := getJSON(t, a.Issuer+"/register", nil); status != http.StatusNotFound {
			t.Errorf("/register answered %d", status)
		}
		// A configured client ID with a secret, posting it.
		a.AddClient(fake.AuthClient{ID: "configured", Secret: "s3cr3t", AuthMethod: fake.AuthMethodSecretPost, RedirectURIs: []string{"http://127.0.0.1/callback"}})
		verifier := oauth2.GenerateVerifier()
		q := authorizeQuery("configured", verifier, "http://127.0.0.1:1/mcp", "read")
		code := authorize(t, a.AuthorizationEndpoint, q).Query().Get("code")
		tr := postForm(t, a.TokenEndpoint, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {loopbackRedirect},
			"code_verifier": {verifier}, "resource": {"http://127.0.0.1:1/mcp"}, "client_id": {"configured"}, "client_secret": {"s3cr3t"}}, "", "")
		if tr.Status != http.StatusOK || tr.RefreshToken == "" || !slices.Contains(a.Secrets(), "s3cr3t") {
			t.Errorf("configured client: %+v", tr)
		}
	})
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestAuthMetadataLocations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts    fake.AuthOptions
		path    string // where the metadata is, relative to the origin
		missing []string
	}{
		{fake.AuthOptions{}, "/.well-known/oauth-authorization-server", []string{"/.well-known/openid-configuration"}},
		{fake.AuthOptions{IssuerPath: "/tenant1"}, "/.well-known/oauth-authorization-server/tenant1",
			[]string{"/.well-known/oauth-authorization-server", "/tenant1/.well-known/oauth-authorization-server", "/.well-known/openid-configuration/tenant1"}},
		{fake.AuthOptions{IssuerPath: "/tenant1", MetadataAt: fake.MetadataOpenID}, "/.well-known/openid-configuration/tenant1",
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/tenant1/.well-known/openid-configuration"}},
		{fake.AuthOptions{IssuerPath: "/tenant1", MetadataAt: fake.MetadataOpenIDAppended}, "/tenant1/.well-known/openid-configuration",
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			a := fake.StartAuth(t, &tc.opts)
			origin := strings.TrimSuffix(a.Issuer, tc.opts.IssuerPath)
			if a.MetadataURL != origin+tc.path {
				t.Errorf("MetadataURL = %s, want %s", a.MetadataURL, origin+tc.path)
			}
			var m oauthex.AuthServerMeta
			if status := getJSON(t, origin+tc.path, &m); status != http.StatusOK || m.Issuer != a.Issuer || m.TokenEndpoint != a.Issuer+"/token" {
				t.Errorf("metadata %d %+v", status, m)
			}
			for _, p := range tc.missing {
				if status := getJSON(t, origin+p, nil); status != http.StatusNotFound {
					t.Errorf("%s answered %d, want 404", p, status)
				}
			}
			// The flow works under the issuer's path too.
			id := publicClient(t, a)
			if tr := login(t, a, id, "http://127.0.0.1:1/mcp", "read"); tr.AccessToken == "" {
				t.Error("no token")
			}
		})
	}
	if _, err := panics(func() { fake.NewAuth(&fake.AuthOptions{IssuerPath: "tenant"}) }); err == nil {
		t.Error("NewAuth accepted an IssuerPath without a leading slash")
	}
}

// panics runs f and returns what it panicked with as an error.
func panics(f func()) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("panic")
		}
	}()
	f()
	return true, nil
}

func TestAuthExpiryAndRevokeAll(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, &fake.AuthOptions{AccessTTL: 10 * time.Millisecond, NoRotate: true})
	srv := fake.Start(t, &fake.Options{Auth: a, JSONResponse: true})
	id := publicClient(t, a)
	tr := login(t, a, id, srv.URL, "read offline_access")
	if tr.ExpiresIn != 1 {
		t.Errorf("expires_in = %d, want 1 (rounded up)", tr.ExpiresIn)
	}
	auth := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	waitFor(t, "the access token to expire", func() bool {
		return post(t, srv.URL, initializeBody, auth(tr.AccessToken)).StatusCode == http.StatusUnauthorized
	})

	// Without rotation the refresh token stays, and is not sent again.
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}, "client_id": {id}, "resource": {srv.URL}}
	for range 2 {
		r := postForm(t, a.TokenEndpoint, form, "", "")
		if r.Status != http.StatusOK || r.RefreshToken != "" {
			t.Fatalf("refresh without rotation: %+v", r)
		}
	}

	// A token for another resource is refused.
	other := login(t, a, id, "http://127.0.0.1:1/mcp", "read")
	if resp := post(t, srv.URL, initializeBody, auth(other.AccessToken)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("token for another resource: %d", resp.StatusCode)
	}

	a2 := fake.StartAuth(t, nil)
	srv2 := fake.Start(t, &fake.Options{Auth: a2})
	id2 := publicClient(t, a2)
	tr2 := login(t, a2, id2, srv2.URL, "read")
	if resp := post(t, srv2.URL, initializeBody, auth(tr2.AccessToken)); resp.StatusCode != http.StatusOK {
		t.Fatalf("fresh token: %d", resp.StatusCode)
	}
	// A token of another authorization server is refused.
	if resp := post(t, srv.URL, initializeBody, auth(tr2.AccessToken)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("token of another AS: %d", resp.StatusCode)
	}
	a2.ExpireAccessTokens()
	if resp := post(t, srv2.URL, initializeBody, auth(tr2.AccessToken)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after ExpireAccessTokens: %d", resp.StatusCode)
	}
	r := postForm(t, a2.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr2.RefreshToken}, "client_id": {id2}, "resource": {srv2.URL}}, "", "")
	if r.Status != http.StatusOK {
		t.Fatalf("refresh: %+v", r)
	}
	a2.RevokeAll()
	if resp := post(t, srv2.URL, initializeBody, auth(r.AccessToken)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after RevokeAll: %d", resp.StatusCode)
	}
	postForm(t, a2.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}, "client_id": {id2}, "resource": {srv2.URL}}, "", "").
		wantError(t, "invalid_grant")
}

func TestAuthStepUp(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a, ToolScopes: map[string]string{"admin_reset": "admin", "echo": "read"}, OmitChallengeScope: true})
	id := publicClient(t, a)

	resp := post(t, srv.URL, initializeBody, nil)
	if ch := challengeParams(t, resp); ch["scope"] != "" {
		t.Errorf("OmitChallengeScope: challenge %v", ch)
	}
	// A token without scopes: asked for just the missing one.
	bare := login(t, a, id, srv.URL, "")
	if bare.Scope != "" {
		t.Errorf("granted %q without asking", bare.Scope)
	}
	resp = post(t, srv.URL, toolsCallAdmin, http.Header{"Authorization": {"Bearer " + bare.AccessToken}})
	if ch := challengeParams(t, resp); resp.StatusCode != http.StatusForbidden || ch["scope"] != "admin" {
		t.Errorf("bare token: %d %v", resp.StatusCode, ch)
	}

	up := login(t, a, id, srv.URL, "read admin offline_access")
	cs := connect(t, srv.URL, nil, bearer(up.AccessToken))
	ctx := testContext(t)
	for _, p := range []*mcp.CallToolParams{{Name: "admin_reset"}, {Name: "echo", Arguments: map[string]any{"text": "x"}}} {
		if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
			t.Errorf("%s with admin: %v, %v", p.Name, res, err)
		}
	}
	// Step-up asks for what the token holds (bar offline_access) plus the need.
	readOnly := login(t, a, id, srv.URL, "offline_access admin")
	resp = post(t, srv.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		http.Header{"Authorization": {"Bearer " + readOnly.AccessToken}})
	if ch := challengeParams(t, resp); resp.StatusCode != http.StatusForbidden || ch["scope"] != "admin read" || ch["error"] != "insufficient_scope" {
		t.Errorf("echo without read: %d %v", resp.StatusCode, ch)
	}
}

func TestProtectedOptions(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	for name, opts := range map[string]*fake.Options{
		"auth and bearer":      {Auth: a, BearerToken: "x"},
		"tool scopes, no auth": {ToolScopes: map[string]string{"echo": "read"}},
	} {
		if _, err := panics(func() { fake.NewServer(opts).Close() }); err == nil {
			t.Errorf("%s: NewServer accepted it", name)
		}
	}

	// Discovery variants: no resource_metadata in the challenge, root PRM.
	srv := fake.Start(t, &fake.Options{Auth: a, OmitResourceMetadata: true, RootResourceMetadata: true})
	origin := strings.TrimSuffix(srv.URL, "/mcp")
	if ch := challengeParams(t, post(t, srv.URL, initializeBody, nil)); ch["resource_metadata"] != "" || ch["scope"] != "read" {
		t.Errorf("challenge %v", ch)
	}
	var prm oauthex.ProtectedResourceMetadata
	if status := getJSON(t, origin+"/.well-known/oauth-protected-resource", &prm); status != http.StatusOK || prm.Resource != srv.URL {
		t.Errorf("root PRM: %d %+v", status, prm)
	}
	if status := getJSON(t, origin+"/.well-known/oauth-protected-resource/mcp", nil); status != http.StatusNotFound {
		t.Errorf("path-aware PRM answered %d, want 404", status)
	}
	if srv.ResourceMetadataURL() != origin+"/.well-known/oauth-protected-resource" {
		t.Errorf("ResourceMetadataURL() = %s", srv.ResourceMetadataURL())
	}

	// Mint seeds credentials without a flow.
	a.AddClient(fake.AuthClient{ID: "seeded", RedirectURIs: []string{loopbackRedirect}})
	at, rt := a.Mint("seeded", srv.URL, "read", "bogus")
	cs := connect(t, srv.URL, nil, bearer(at))
	if _, err := cs.ListTools(testContext(t), nil); err != nil {
		t.Errorf("minted token: %v", err)
	}
	r := postForm(t, a.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"seeded"}, "resource": {srv.URL}}, "", "")
	if r.Status != http.StatusOK || r.Scope != "read" {
		t.Errorf("minted refresh token: %+v", r)
	}
}

// signJWT signs a JWT with an ECDSA P-256 key, or RS256 with an RSA key.
func signJWT(t *testing.T, key crypto.Signer, alg string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := enc(map[string]string{"alg": alg, "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signed))
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	case *rsa.PrivateKey:
		var err error
		if alg == "PS256" {
			sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, sum[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestAuthClientCredentials(t *testing.T) {
	t.Parallel()
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	a := fake.StartAuth(t, &fake.AuthOptions{
		ClientCredentials: map[string]string{"svc": "pa ss&word"},
		JWTClients:        map[string]crypto.PublicKey{"jwt-ec": &ecKey.PublicKey, "jwt-rsa": &rsaKey.PublicKey},
	})
	srv := fake.Start(t, &fake.Options{Auth: a})
	var m oauthex.AuthServerMeta
	getJSON(t, a.MetadataURL, &m)
	if !slices.Contains(m.TokenEndpointAuthMethodsSupported, "private_key_jwt") || !slices.Contains(m.GrantTypesSupported, "client_credentials") {
		t.Errorf("metadata %+v", m)
	}
	grant := url.Values{"grant_type": {"client_credentials"}, "resource": {srv.URL}, "scope": {"read write"}}

	// Secrets, Basic (form-urlencoded first, RFC 6749 §2.3.1) and post.
	tr := postForm(t, a.TokenEndpoint, grant, "svc", "pa ss&word")
	if tr.Status != http.StatusOK || tr.RefreshToken != "" || tr.Scope != "read write" {
		t.Fatalf("client_secret_basic: %+v", tr)
	}
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + tr.AccessToken}}); resp.StatusCode != http.StatusOK {
		t.Errorf("client credentials token: %d", resp.StatusCode)
	}
	f := cloneForm(grant)
	f.Set("client_id", "svc")
	f.Set("client_secret", "pa ss&word")
	if tr := postForm(t, a.TokenEndpoint, f, "", ""); tr.Status != http.StatusOK {
		t.Errorf("client_secret_post: %+v", tr)
	}
	postForm(t, a.TokenEndpoint, grant, "svc", "wrong").wantError(t, "invalid_client")
	postForm(t, a.TokenEndpoint, f, "svc", "pa ss&word").wantError(t, "invalid_request") // two methods
	noResource := cloneForm(grant)
	noResource.Del("resource")
	postForm(t, a.TokenEndpoint, noResource, "svc", "pa ss&word").wantError(t, "invalid_request")

	// private_key_jwt.
	claims := func(sub string, aud any) map[string]any {
		return map[string]any{"iss": sub, "sub": sub, "aud": aud, "exp": time.Now().Add(time.Minute).Unix(), "jti": rand.Text()}
	}
	assertion := func(jwt string) url.Values {
		f := cloneForm(grant)
		f.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		f.Set("client_assertion", jwt)
		return f
	}
	ok := []struct {
		name string
		jwt  string
	}{
		{"ES256, aud issuer", signJWT(t, ecKey, "ES256", claims("jwt-ec", a.Issuer))},
		{"ES256, aud [issuer]", signJWT(t, ecKey, "ES256", claims("jwt-ec", []string{a.Issuer}))},
		{"RS256", signJWT(t, rsaKey, "RS256", claims("jwt-rsa", a.Issuer))},
		{"PS256", signJWT(t, rsaKey, "PS256", claims("jwt-rsa", a.Issuer))},
	}
	for _, tc := range ok {
		if tr := postForm(t, a.TokenEndpoint, assertion(tc.jwt), "", ""); tr.Status != http.StatusOK {
			t.Errorf("%s: %+v", tc.name, tr)
		}
	}
	// Replaying an assertion (same jti) fails.
	postForm(t, a.TokenEndpoint, assertion(ok[0].jwt), "", "").wantError(t, "invalid_client")

	expired := claims("jwt-ec", a.Issuer)
	expired["exp"] = time.Now().Add(-time.Minute).Unix()
	farFuture := claims("jwt-ec", a.Issuer)
	farFuture["exp"] = time.Now().Add(24 * time.Hour).Unix()
	noJTI := claims("jwt-ec", a.Issuer)
	delete(noJTI, "jti")
	otherIss := claims("jwt-ec", a.Issuer)
	otherIss["iss"] = "someone"
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))
	body, _ := json.Marshal(claims("jwt-ec", a.Issuer))
	for name, jwt := range map[string]string{
		"wrong key":          signJWT(t, otherKey, "ES256", claims("jwt-ec", a.Issuer)),
		"wrong aud":          signJWT(t, ecKey, "ES256", claims("jwt-ec", srv.URL)),
		"aud token endpoint": signJWT(t, ecKey, "ES256", claims("jwt-ec", a.TokenEndpoint)),
		"expired":            signJWT(t, ecKey, "ES256", expired),
		"far future":         signJWT(t, ecKey, "ES256", farFuture),
		"no jti":             signJWT(t, ecKey, "ES256", noJTI),
		"iss not sub":        signJWT(t, ecKey, "ES256", otherIss),
		"alg none":           header + "." + base64.RawURLEncoding.EncodeToString(body) + ".",
		"RS256 for EC key":   signJWT(t, rsaKey, "RS256", claims("jwt-ec", a.Issuer)),
		"unknown client":     signJWT(t, ecKey, "ES256", claims("nobody", a.Issuer)),
		"secret client":      signJWT(t, ecKey, "ES256", claims("svc", a.Issuer)),
	} {
		t.Run(name, func(t *testing.T) {
			postForm(t, a.TokenEndpoint, assertion(jwt), "", "").wantError(t, "invalid_client")
		})
	}
	// JWT clients may not use secrets, nor the authorization code grant.
	postForm(t, a.TokenEndpoint, grant, "jwt-ec", "").wantError(t, "invalid_client")
	if n := a.TokenRequests("client_credentials"); n < 10 {
		t.Errorf("TokenRequests(client_credentials) = %d", n)
	}
	if r := a.LastTokenRequest("client_credentials"); r.Get("resource") != srv.URL {
		t.Errorf("LastTokenRequest(client_credentials) = %v", r)
	}
}

func TestAuthClientIDMetadataDocument(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, &fake.AuthOptions{ClientIDMetadataDocuments: true, NoDCR: true})
	var (
		mu  sync.Mutex
		doc map[string]any
	)
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(docs.Close)
	clientID := docs.URL + "/client.json"
	mu.Lock()
	doc = map[string]any{"client_id": clientID, "client_name": "fake test", "redirect_uris": []string{loopbackRedirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"}
	mu.Unlock()

	var m map[string]any
	getJSON(t, a.MetadataURL, &m)
	if m["client_id_metadata_document_supported"] != true {
		t.Errorf("metadata %v", m)
	}
	tr := login(t, a, clientID, "http://127.0.0.1:1/mcp", "read")
	if tr.RefreshToken == "" || a.MetadataDocumentFetches() != 1 {
		t.Errorf("login with a metadata document: %+v, fetches %d", tr, a.MetadataDocumentFetches())
	}

	// A document naming another client is refused, without a redirect.
	mu.Lock()
	doc["client_id"] = "https://elsewhere.example/client.json"
	mu.Unlock()
	q := authorizeQuery(docs.URL+"/other.json", oauth2.GenerateVerifier(), "http://127.0.0.1:1/mcp", "read")
	resp, err := noRedirects.Get(a.AuthorizationEndpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("mismatched document: %d", resp.StatusCode)
	}
}

// TestAuthConcurrentRefresh: two refreshes racing with one token: exactly
// one wins, and the loser's reuse kills the winner's chain.
func TestAuthConcurrentRefresh(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	id := publicClient(t, a)
	tr := login(t, a, id, "http://127.0.0.1:1/mcp", "read")
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}, "client_id": {id}, "resource": {"http://127.0.0.1:1/mcp"}}
	results := make(chan tokenResponse, 2)
	ctx := testContext(t)
	for range 2 {
		go func() {
			tr, err := doForm(ctx, a.TokenEndpoint, form, "", "")
			if err != nil {
				t.Error(err)
			}
			results <- tr
		}()
	}
	r1, r2 := <-results, <-results
	if (r1.Status == http.StatusOK) == (r2.Status == http.StatusOK) {
		t.Fatalf("statuses %d and %d, want one success", r1.Status, r2.Status)
	}
	winner := r1
	if r2.Status == http.StatusOK {
		winner = r2
	}
	form.Set("refresh_token", winner.RefreshToken)
	postForm(t, a.TokenEndpoint, form, "", "").wantError(t, "invalid_grant")
}

// TestAuthExpiresInJSON: the expires_in member is sent as given, and the
// token still lasts AccessTTL.
func TestAuthExpiresInJSON(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, &fake.AuthOptions{ExpiresInJSON: `"3599"`, ClientCredentials: map[string]string{"m": "s3cret-s3cret"}})
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, a.TokenEndpoint,
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "resource": {"http://127.0.0.1:1/mcp"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("m", "s3cret-s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("token answer %d: %v", resp.StatusCode, err)
	}
	if body["expires_in"] != "3599" {
		t.Errorf("expires_in = %#v, want the string \"3599\"", body["expires_in"])
	}
	if _, err := panics(func() { fake.NewAuth(&fake.AuthOptions{ExpiresInJSON: "soon"}) }); err == nil {
		t.Error("NewAuth accepted ExpiresInJSON that is not JSON")
	}
}

// TestAuthNoAccessTokenRevocation: like a provider with JWT access
// tokens, the server revokes refresh tokens, refuses access tokens with
// unsupported_token_type, and the access tokens of a revoked grant still
// work until they expire.
func TestAuthNoAccessTokenRevocation(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, &fake.AuthOptions{NoAccessTokenRevocation: true})
	srv := fake.Start(t, &fake.Options{Auth: a, JSONResponse: true})
	clientID := publicClient(t, a)
	tr := login(t, a, clientID, srv.URL, "read offline_access")
	revoke := func(tok, hint string) tokenResponse {
		return postForm(t, a.RevocationEndpoint, url.Values{"token": {tok}, "token_type_hint": {hint}, "client_id": {clientID}}, "", "")
	}
	if rv := revoke(tr.RefreshToken, "refresh_token"); rv.Status != http.StatusOK {
		t.Errorf("revoking the refresh token: %d", rv.Status)
	}
	if rv := revoke(tr.AccessToken, "access_token"); rv.Status != http.StatusBadRequest || rv.Error != "unsupported_token_type" {
		t.Errorf("revoking the access token: %d %q, want 400 unsupported_token_type", rv.Status, rv.Error)
	}
	if rv := revoke(tr.AccessToken, "refresh_token"); rv.Error != "unsupported_token_type" {
		t.Errorf("revoking the access token with a wrong hint: %d %q", rv.Status, rv.Error)
	}
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + tr.AccessToken}}); resp.StatusCode != http.StatusOK {
		t.Errorf("the access token of the revoked grant: %d, want it to work until it expires", resp.StatusCode)
	}
	refresh := postForm(t, a.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}, "client_id": {clientID}, "resource": {srv.URL}}, "", "")
	refresh.wantError(t, "invalid_grant")
}

// TestAuthHold: a held endpoint answers only once released; the others
// answer meanwhile.
func TestAuthHold(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, &fake.AuthOptions{ClientCredentials: map[string]string{"m": "s3cret-s3cret"}})
	arrived, release := a.Hold(fake.AuthTokenEndpoint)
	answered := make(chan tokenResponse, 1)
	go func() {
		tr, _ := doForm(testContext(t), a.TokenEndpoint, url.Values{"grant_type": {"client_credentials"}, "resource": {"http://127.0.0.1:1/mcp"}}, "m", "s3cret-s3cret")
		answered <- tr
	}()
	<-arrived
	if status := getJSON(t, a.MetadataURL, nil); status != http.StatusOK {
		t.Errorf("metadata while the token endpoint is held: %d", status)
	}
	select {
	case <-answered:
		t.Fatal("the held token request was answered")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	release()
	if tr := <-answered; tr.Status != http.StatusOK || tr.AccessToken == "" {
		t.Errorf("after release: %d %s", tr.Status, tr.Error)
	}
	if tr := postForm(t, a.TokenEndpoint, url.Values{"grant_type": {"client_credentials"}, "resource": {"http://127.0.0.1:1/mcp"}}, "m", "s3cret-s3cret"); tr.Status != http.StatusOK {
		t.Errorf("a request after release: %d", tr.Status)
	}
}
