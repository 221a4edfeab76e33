package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/oauth"
)

// TestConfiguredClientStaysWithItsIssuer: a client configured with its
// ID, secret or key, or a workload's JWT, is pinned to the authorization
// server it belongs to. A server that names another one (it moved, or it
// lies) gets none of them: the sign-in fails, before anything is sent
// there, with an error that names both issuers; no browser opens.
func TestConfiguredClientStaysWithItsIssuer(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	platform := fake.NewJWTIssuer("https://platform.example")
	home := fake.StartAuth(t, &fake.AuthOptions{
		ClientCredentials: map[string]string{"machine": "s3cret-machine"},
		JWTClients:        map[string]crypto.PublicKey{"jwt-machine": &key.PublicKey},
		NoDCR:             true,
	})
	home.AddClient(fake.AuthClient{ID: "console-app", RedirectURIs: []string{"http://127.0.0.1/callback"}})
	home.TrustWorkloads(platform)
	elsewhere := fake.StartAuth(t, nil) // the one the server names
	srv := fake.Start(t, &fake.Options{Auth: elsewhere})
	t.Setenv("MACHINE_SECRET", "s3cret-machine")
	workload := writeToken(t, filepath.Join(t.TempDir(), "token"), platform.Workload("ci", home.Issuer, 10*time.Minute))

	pinned := func(edit func(*mcpgate.ServerConfig)) mcpgate.ServerConfig {
		cfg := oauthCfg("s", srv.URL)
		cfg.Issuer = home.Issuer
		edit(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for name, cfg := range map[string]mcpgate.ServerConfig{
		"client secret": pinned(func(c *mcpgate.ServerConfig) {
			c.Grant, c.ClientID, c.ClientSecretEnv = mcpgate.GrantClientCredentials, "machine", "MACHINE_SECRET"
		}),
		"private key": pinned(func(c *mcpgate.ServerConfig) {
			c.Grant, c.ClientID, c.PrivateKeyFile = mcpgate.GrantClientCredentials, "jwt-machine", writeKey(t, key)
		}),
		"workload token":  pinned(func(c *mcpgate.ServerConfig) { c.Grant, c.AssertionFile = mcpgate.GrantJWTBearer, workload }),
		"person's client": pinned(func(c *mcpgate.ServerConfig) { c.ClientID = "console-app" }),
	} {
		t.Run(name, func(t *testing.T) {
			_, c := newEnv(t).open()
			_, b, err := login(t, c, cfg, nil)
			if code(err) != "issuer_mismatch" || !strings.Contains(err.Error(), home.Issuer) || !strings.Contains(err.Error(), elsewhere.Issuer) {
				t.Fatalf("sign-in where the server names another issuer: %v, want issuer_mismatch naming both", err)
			}
			if category(err) == mcpgate.CategoryAuth {
				t.Errorf("category %s: signing in again cannot fix it", category(err))
			}
			if len(b.opened) != 0 {
				t.Errorf("a browser was opened for %q", b.opened)
			}
			// Nor does a machine grant, by itself, at a call (a person's
			// client only ever signs in when the person asks).
			m := newManager(t, c, cfg)
			if _, err := call(t, m, "s", "echo", `{"text":"x"}`); cfg.Grant.Machine() && code(err) != "issuer_mismatch" {
				t.Errorf("call: %v, want issuer_mismatch", err)
			}
			for _, g := range []string{fake.GrantClientCredentials, fake.GrantJWTBearer, fake.GrantAuthorizationCode} {
				if n := elsewhere.TokenRequests(g); n != 0 {
					t.Errorf("%d %s requests reached the issuer the server named", n, g)
				}
			}
			if n := elsewhere.Authorizations(); n != 0 {
				t.Errorf("%d authorizations at the issuer the server named", n)
			}
		})
	}
}

// TestPinnedIssuer: the pinned issuer also chooses among several without
// --issuer, refuses an --issuer that differs from it, and a credential
// from another issuer (the pin changed since) is not sent.
func TestPinnedIssuer(t *testing.T) {
	t.Parallel()
	h := fake.StartHostileAuth(t, fake.HostileTwoIssuers)
	_, c := newEnv(t).open()
	cfg := oauthCfg("s", h.Server.URL)
	cfg.Issuer = h.Auth2.Issuer
	res, _, err := login(t, c, cfg, nil)
	if err != nil || res.Issuer != h.Auth2.Issuer {
		t.Fatalf("sign-in with a pinned issuer among two: %+v %v", res, err)
	}
	if _, _, err := login(t, c, cfg, &oauth.LoginOptions{Issuer: h.Auth.Issuer}); code(err) != "issuer_mismatch" {
		t.Errorf("--issuer other than the pinned one: %v, want issuer_mismatch", err)
	}
	repinned := cfg
	repinned.Issuer = h.Auth.Issuer
	if info, err := c.Credential(context.Background(), repinned); err != nil || info.Bound {
		t.Errorf("the credential from %s, seen with %s pinned: %+v %v, want it not bound", h.Auth2.Issuer, h.Auth.Issuer, info, err)
	}
	if _, err := call(t, newManager(t, c, repinned), "s", "echo", `{"text":"x"}`); category(err) != mcpgate.CategoryAuth {
		t.Errorf("call with the pin changed: %v, want a sign-in asked for", err)
	}
}
