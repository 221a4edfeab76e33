package oauth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestResourceAtOrigin: a server whose only protected resource metadata is
// at the root well-known location, naming its origin as the resource
// (RFC 9728 §3.1). The login sends that identifier exactly as published,
// no slash added, at authorize and exchange; the credential is bound to it
// and is sent to the server, which lies within it.
func TestResourceAtOrigin(t *testing.T) {
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as, OmitResourceMetadata: true})
	srv.Protect(fake.Protection{OriginResource: true})
	origin := strings.TrimSuffix(srv.URL, fake.Endpoint)
	e := newEnv(t)
	st, c := e.open()
	cfg := oauthCfg("s", srv.URL)

	_, b, err := login(t, c, cfg, nil)
	if err != nil {
		t.Fatalf("login to a server identified by its origin: %v", err)
	}
	if got := query(b.opened[0]).Get("resource"); got != origin {
		t.Errorf("authorize resource %q, want the origin %q exactly", got, origin)
	}
	if got := as.LastTokenRequest(fake.GrantAuthorizationCode).Get("resource"); got != origin {
		t.Errorf("exchange resource %q, want %q", got, origin)
	}
	cred, err := st.GetCredential(context.Background(), "", "s")
	if err != nil || cred.Resource != origin {
		t.Fatalf("credential bound to %q (%v), want %q", cred.Resource, err, origin)
	}
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
		t.Fatalf("call with the origin's credential: %v", err)
	}
	as.ExpireAccessTokens()
	if _, err := call(t, m, "s", "echo", `{"text":"y"}`); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if got := as.LastTokenRequest(fake.GrantRefreshToken).Get("resource"); got != origin {
		t.Errorf("refresh resource %q, want %q", got, origin)
	}
}
