package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store"
)

// TestHostileAuthorizationRefused: each hostile server breaks one rule; the
// login is refused with an attributed error naming it, nothing is stored,
// and no code or token request goes where the rule forbids.
func TestHostileAuthorizationRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode    fake.HostileAuthMode
		want    string // in the error
		browser bool   // whether the browser may have been opened
	}{
		{fake.HostilePRMOtherOrigin, "another origin", false},
		{fake.HostilePRMWrongResource, "names resource", false},
		{fake.HostileIssuerMismatch, "names issuer", false},
		{fake.HostileNoS256, "S256", false},
		{fake.HostileInsecureTokenEndpoint, "non-loopback", false},
		{fake.HostileFileAuthorizeEndpoint, "authorization_endpoint", false},
		{fake.HostileJavascriptAuthorizeEndpoint, "authorization_endpoint", false},
		{fake.HostileEmptyClientID, "empty client_id", false},
		{fake.HostileLongClientID, "client_id of 300 bytes", false},
		{fake.HostileWrongState, "wrong state", true},
		{fake.HostileWrongIss, "iss mismatch", true},
		{fake.HostileMissingIss, "iss mismatch", true},
		{fake.HostileTokenHuge, "size bound", true},
		{fake.HostileTokenErrorText, "HTTP 400", true},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			h := fake.StartHostileAuth(t, tc.mode)
			e := newEnv(t)
			st, c := e.open()
			cfg := oauthCfg("s", h.Server.URL)
			_, b, err := login(t, c, cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("login against %s: %v, want an error mentioning %q", tc.mode, err, tc.want)
			}
			if c := mcpgate.CategoryOf(err); c == mcpgate.CategoryInternal {
				t.Errorf("unattributed error %v", err)
			}
			if !tc.browser && len(b.opened) > 0 {
				t.Errorf("the browser was opened with %q", b.opened)
			}
			if _, err := st.GetCredential(context.Background(), "", "s"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a credential was stored: %v", err)
			}
			if tc.mode == fake.HostileWrongState || tc.mode == fake.HostileWrongIss || tc.mode == fake.HostileMissingIss {
				if n := h.Auth.TokenRequests(fake.GrantAuthorizationCode); n != 0 {
					t.Errorf("the code was exchanged %d times after a forged redirect", n)
				}
			}
			if tc.mode == fake.HostilePRMOtherOrigin && h.OtherOriginRequests() != 0 {
				t.Errorf("fetched metadata from the other origin %d times", h.OtherOriginRequests())
			}
			noSecrets(t, h.Auth.Secrets(), err.Error())
			if tc.mode == fake.HostileTokenErrorText {
				// Remote text of any shape but a code's is no error code.
				if code(err) != "" || strings.Contains(err.Error(), "IGNORE") || strings.ContainsAny(err.Error(), "\x1b\r\n\x00") {
					t.Errorf("remote error text passed through: code %q, message %q", code(err), err.Error())
				}
			}
		})
	}
}

func TestHangingTokenEndpointTimesOut(t *testing.T) {
	t.Parallel()
	h := fake.StartHostileAuth(t, fake.HostileTokenHang)
	e := newEnv(t)
	_, c := e.open()
	start := time.Now()
	_, _, err := login(t, c, oauthCfg("s", h.Server.URL), &oauth.LoginOptions{Timeout: 2 * time.Second})
	if !errors.Is(err, mcpgate.ErrTimeout) {
		t.Fatalf("hanging token endpoint: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestShellMetacharactersNeverReachAShell opens the hostile authorization
// URL with the real launcher and the fake browser as $BROWSER: the browser
// gets the URL as its one argument, and the canary a shell would create
// never appears.
func TestShellMetacharactersNeverReachAShell(t *testing.T) {
	logPath := fake.UseBrowser(t)
	h := fake.StartHostileAuth(t, fake.HostileShellAuthorizeEndpoint)
	e := newEnv(t)
	_, c := e.open()
	var opened string
	open := func(ctx context.Context, raw string) error {
		opened = raw
		return oauth.OpenBrowser(raw, os.Getenv)
	}
	if _, _, err := login(t, c, oauthCfg("s", h.Server.URL), &oauth.LoginOptions{Open: open}); err != nil {
		t.Fatalf("login through the metacharacter endpoint (it is a valid URL): %v", err)
	}
	runs := fake.BrowserLog(logPath)
	if len(runs) != 1 || len(runs[0]) != 1 || runs[0][0] != opened {
		t.Fatalf("browser runs %q, want exactly one run with the URL as its only argument", runs)
	}
	if !strings.Contains(query(opened).Get("x"), "$(touch") {
		t.Fatalf("the test URL lost its metacharacters: %q", opened)
	}
	if _, err := os.Stat(h.Canary); !os.IsNotExist(err) {
		t.Fatalf("the canary exists: a shell ran part of the URL (%v)", err)
	}
}

func TestClientCredentials(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := writeKey(t, key)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaFile := writeKey(t, rsaKey)

	as := fake.StartAuth(t, &fake.AuthOptions{
		ClientCredentials: map[string]string{"machine": "s3cret-machine"},
		JWTClients:        map[string]crypto.PublicKey{"jwt-machine": &key.PublicKey, "rsa-machine": &rsaKey.PublicKey},
	})
	srv := fake.Start(t, &fake.Options{Auth: as})
	t.Setenv("MACHINE_SECRET", "s3cret-machine")

	for name, cfg := range map[string]mcpgate.ServerConfig{
		"secret": {ID: "s", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantClientCredentials, ClientID: "machine", ClientSecretEnv: "MACHINE_SECRET", Issuer: as.Issuer},
		"jwt":    {ID: "s", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantClientCredentials, ClientID: "jwt-machine", PrivateKeyFile: keyFile, Issuer: as.Issuer},
		"jwt PS256": {ID: "s", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantClientCredentials, ClientID: "rsa-machine",
			PrivateKeyFile: rsaFile, PrivateKeyAlg: "PS256", Issuer: as.Issuer},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			_, c := e.open()
			before := as.TokenRequests(fake.GrantClientCredentials)
			// No person: the first call gets a token by itself.
			m := newManager(t, c, cfg)
			if _, err := call(t, m, "s", "echo", `{"text":"machine"}`); err != nil {
				t.Fatalf("machine call: %v", err)
			}
			as.ExpireAccessTokens()
			if _, err := call(t, m, "s", "echo", `{"text":"again"}`); err != nil {
				t.Fatalf("machine call after expiry: %v", err)
			}
			if n := as.TokenRequests(fake.GrantClientCredentials) - before; n != 2 {
				t.Errorf("client_credentials requests %d, want 2", n)
			}
			if as.Authorizations() != 0 {
				t.Error("a machine login went through the authorize endpoint")
			}
		})
	}
}

// TestClientAssertionRefusals: a key that cannot sign with the configured
// algorithm, or an algorithm the authorization server does not list, is
// refused before anything is sent, with an error naming it.
func TestClientAssertionRefusals(t *testing.T) {
	t.Parallel()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	as := fake.StartAuth(t, &fake.AuthOptions{JWTClients: map[string]crypto.PublicKey{"jwt-machine": &key.PublicKey}})
	srv := fake.Start(t, &fake.Options{Auth: as})
	for alg, want := range map[string]string{"RS256": "cannot sign with RS256", "ES384": "cannot sign with ES384"} {
		cfg := mcpgate.ServerConfig{ID: "s", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantClientCredentials,
			ClientID: "jwt-machine", PrivateKeyFile: writeKey(t, key), PrivateKeyAlg: alg, Issuer: as.Issuer}
		_, c := newEnv(t).open()
		_, _, err := login(t, c, cfg, nil)
		if !errors.Is(err, mcpgate.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with a P-256 key: %v, want %q", alg, err, want)
		}
	}
	if n := as.TokenRequests(fake.GrantClientCredentials); n != 0 {
		t.Errorf("%d token requests with an unusable key", n)
	}
}

// writeKey writes key as a PKCS #8 PEM file and returns its path.
func writeKey(t *testing.T, key crypto.Signer) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCredentialBoundToItsServer(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	a := fake.Start(t, &fake.Options{Auth: as})
	b := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	_, c := e.open()
	mustLogin(t, c, oauthCfg("s", a.URL))
	// The same server ID now points elsewhere: the credential must not go there.
	m := newManager(t, c, oauthCfg("s", b.URL))
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); category(err) != mcpgate.CategoryAuth {
		t.Fatalf("call to another URL with a credential bound to the first: %v", err)
	}
	if n := b.Unauthorized(); n == 0 {
		t.Fatal("no request reached the new server")
	}
	info, err := c.Credential(context.Background(), oauthCfg("s", b.URL))
	if err != nil || info.Bound {
		t.Errorf("credential info %+v %v, want not bound", info, err)
	}
}

func TestStoredBearer(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, &fake.Options{BearerToken: "bearer-tok-123456"})
	e := newEnv(t)
	_, c := e.open()
	cfg := mcpgate.ServerConfig{ID: "s", URL: srv.URL, Auth: mcpgate.AuthBearer, Enabled: true}
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); category(err) != mcpgate.CategoryAuth {
		t.Fatalf("call without a stored token: %v", err)
	}
	if err := c.SetBearer(context.Background(), cfg, "bearer-tok-123456\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
		t.Fatalf("call with the stored token: %v", err)
	}
	if err := c.SetBearer(context.Background(), cfg, "two words"); !errors.Is(err, mcpgate.ErrInvalid) {
		t.Errorf("a token with a space: %v", err)
	}
}
