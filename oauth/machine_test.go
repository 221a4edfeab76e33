package oauth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// writeToken writes a token where a platform would, and returns the path.
func writeToken(t *testing.T, path, tok string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWorkloadIdentity: a workload signs in with the JWT its platform put
// in a file (SEP-1933, a jwt-bearer assertion), by itself at the first
// call; when the token expires it reads the file again, where the platform
// has put a new JWT. A JWT the authorization server refused is not sent
// again until the file holds a new one, and the refusal is not a
// needs-auth (a sign-in cannot fix it).
func TestWorkloadIdentity(t *testing.T) {
	t.Parallel()
	platform := fake.NewJWTIssuer("https://platform.example")
	as := fake.StartAuth(t, &fake.AuthOptions{NoDCR: true})
	as.TrustWorkloads(platform)
	as.AddClient(fake.AuthClient{ID: "workload-client"})
	srv := fake.Start(t, &fake.Options{Auth: as})
	file := filepath.Join(t.TempDir(), "token")
	writeToken(t, file, platform.Workload("ci-runner", as.Issuer, 10*time.Minute))

	_, c := newEnv(t).open()
	cfg := oauthCfg("s", srv.URL)
	cfg.Grant, cfg.ClientID, cfg.AssertionFile, cfg.Issuer = mcpgate.GrantJWTBearer, "workload-client", file, as.Issuer
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
		t.Fatalf("workload call: %v", err)
	}
	r := as.LastTokenRequest(fake.GrantJWTBearer)
	if r.Get("assertion") == "" || r.Get("resource") != srv.URL || r.Get("client_id") != "workload-client" {
		t.Errorf("jwt-bearer request %v", r)
	}
	if as.Authorizations() != 0 {
		t.Error("a workload went through the authorize endpoint")
	}

	// The platform rotates the token; the next grant uses the new one.
	rotated := platform.Workload("ci-runner", as.Issuer, 10*time.Minute)
	writeToken(t, file, rotated)
	as.ExpireAccessTokens()
	if _, err := call(t, m, "s", "echo", `{"text":"y"}`); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if got := as.LastTokenRequest(fake.GrantJWTBearer).Get("assertion"); got != rotated {
		t.Error("the grant after expiry did not read the rotated token")
	}

	// A token for another audience is refused, once.
	writeToken(t, file, platform.Workload("ci-runner", "https://elsewhere.example", 10*time.Minute))
	as.ExpireAccessTokens()
	before := as.TokenRequests(fake.GrantJWTBearer)
	_, err := call(t, m, "s", "echo", `{"text":"z"}`)
	if err == nil || category(err) == mcpgate.CategoryAuth || code(err) != "invalid_grant" || !strings.Contains(err.Error(), file) {
		t.Fatalf("call with a refused token: %v, want an invalid_grant error, not needs-auth, naming the file", err)
	}
	for range 2 {
		call(t, m, "s", "echo", `{"text":"again"}`)
	}
	if n := as.TokenRequests(fake.GrantJWTBearer) - before; n != 1 {
		t.Errorf("the refused token was sent %d times, want once", n)
	}
	writeToken(t, file, platform.Workload("ci-runner", as.Issuer, 10*time.Minute))
	if _, err := call(t, m, "s", "echo", `{"text":"fixed"}`); err != nil {
		t.Fatalf("call once the file holds a good token: %v", err)
	}
	noSecrets(t, as.Secrets(), err.Error())
}

// TestWorkloadIdentityFromEnv: the token may come from a variable, and a
// missing one says where it was looked for.
func TestWorkloadIdentityFromEnv(t *testing.T) {
	platform := fake.NewJWTIssuer("https://platform.example")
	as := fake.StartAuth(t, nil)
	as.TrustWorkloads(platform)
	srv := fake.Start(t, &fake.Options{Auth: as})
	cfg := oauthCfg("s", srv.URL)
	cfg.Grant, cfg.AssertionEnv, cfg.Issuer = mcpgate.GrantJWTBearer, "MCPGATE_TEST_WORKLOAD_JWT", as.Issuer
	_, c := newEnv(t).open()
	if _, _, err := login(t, c, cfg, nil); !errors.Is(err, mcpgate.ErrInvalid) || !strings.Contains(err.Error(), "$MCPGATE_TEST_WORKLOAD_JWT") {
		t.Errorf("login without the variable: %v", err)
	}
	t.Setenv("MCPGATE_TEST_WORKLOAD_JWT", platform.Workload("job", as.Issuer, time.Minute))
	res, _, err := login(t, c, cfg, nil)
	if err != nil || res.Refresh {
		t.Fatalf("login: %+v %v", res, err)
	}
	if r := as.LastTokenRequest(fake.GrantJWTBearer); r.Has("client_id") {
		t.Errorf("a client_id was sent though none is configured: %v", r)
	}
}

// TestEnterpriseManagedAuthorization: a person's ID token from the
// company's identity provider (SEP-990) is exchanged there for an
// identity assertion grant for the MCP server's authorization server,
// which mcpgate's client there presents as a jwt-bearer assertion. No
// browser; again by itself when the token expires.
func TestEnterpriseManagedAuthorization(t *testing.T) {
	as := fake.StartAuth(t, &fake.AuthOptions{NoDCR: true})
	as.AddClient(fake.AuthClient{ID: "mcp-client", Secret: "mcp-client-secret-123"})
	idp := fake.StartIdP(t)
	idp.Federate(as, "mcp-client")
	srv := fake.Start(t, &fake.Options{Auth: as})
	file := writeToken(t, filepath.Join(t.TempDir(), "id_token"), idp.IDToken("ada@example.com", time.Hour))
	t.Setenv("MCP_CLIENT_SECRET", "mcp-client-secret-123")

	_, c := newEnv(t).open()
	cfg := oauthCfg("s", srv.URL)
	cfg.Grant, cfg.ClientID, cfg.ClientSecretEnv, cfg.Issuer = mcpgate.GrantEnterprise, "mcp-client", "MCP_CLIENT_SECRET", as.Issuer
	cfg.IDTokenFile, cfg.IDPTokenEndpoint, cfg.IDPClientID = file, idp.TokenEndpoint, idp.ClientID
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
		t.Fatalf("call: %v", err)
	}
	ex := idp.LastExchange()
	for k, want := range map[string]string{
		"grant_type": fake.GrantTokenExchange, "requested_token_type": fake.TokenTypeIDJAG, "subject_token_type": fake.TokenTypeIDToken,
		"audience": as.Issuer, "resource": srv.URL, "client_id": idp.ClientID,
	} {
		if ex.Get(k) != want {
			t.Errorf("token exchange %s = %q, want %q", k, ex.Get(k), want)
		}
	}
	if as.TokenRequests(fake.GrantJWTBearer) != 1 || as.Authorizations() != 0 {
		t.Errorf("%d jwt-bearer requests, %d authorizations", as.TokenRequests(fake.GrantJWTBearer), as.Authorizations())
	}
	as.ExpireAccessTokens()
	if _, err := call(t, m, "s", "echo", `{"text":"y"}`); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if idp.TokenExchanges() != 2 {
		t.Errorf("%d token exchanges, want 2 (one per token)", idp.TokenExchanges())
	}

	// An expired ID token: the provider refuses; the person must get a
	// new one there, which mcpgate says.
	writeToken(t, file, idp.IDToken("ada@example.com", -time.Minute))
	as.ExpireAccessTokens()
	_, err := call(t, m, "s", "echo", `{"text":"z"}`)
	if err == nil || category(err) == mcpgate.CategoryAuth || !strings.Contains(err.Error(), "new ID token") {
		t.Fatalf("call with an expired ID token: %v", err)
	}
	noSecrets(t, append(as.Secrets(), "mcp-client-secret-123"), err.Error())
}

// TestMachineGrantsWithDPoP: a machine grant binds its tokens with DPoP
// too, and keeps the key when it asks again.
func TestMachineGrantsWithDPoP(t *testing.T) {
	t.Parallel()
	platform := fake.NewJWTIssuer("https://platform.example")
	as := fake.StartAuth(t, &fake.AuthOptions{DPoP: true, DPoPNonce: "n1"})
	as.TrustWorkloads(platform)
	srv := fake.Start(t, &fake.Options{Auth: as})
	srv.Protect(fake.Protection{DPoP: true})
	file := writeToken(t, filepath.Join(t.TempDir(), "token"), platform.Workload("job", as.Issuer, 10*time.Minute))
	st, c := newEnv(t).open()
	cfg := oauthCfg("s", srv.URL)
	cfg.Grant, cfg.AssertionFile, cfg.DPoP, cfg.Issuer = mcpgate.GrantJWTBearer, file, true, as.Issuer
	if res := mustLogin(t, c, cfg); !res.DPoP {
		t.Fatalf("login %+v, want DPoP", res)
	}
	first, _ := st.GetCredential(context.Background(), "", "s")
	cs, err := session(t, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(t, cs); err != nil {
		t.Fatal(err)
	}
	writeToken(t, file, platform.Workload("job", as.Issuer, 10*time.Minute))
	as.ExpireAccessTokens()
	if err := echo(t, cs); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if next, _ := st.GetCredential(context.Background(), "", "s"); next.DPoPKey != first.DPoPKey || next.AccessToken == first.AccessToken {
		t.Error("the new token is not bound to the credential's key")
	}
}
