package oauth_test

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestCredentialKindFollowsAuth: a credential is sent only while the
// server is configured for its kind. A bearer token stored for a server
// that is now auth oauth is not sent (the server asks for a sign-in), and
// an OAuth sign-in is neither sent nor refreshed for a server that is now
// auth bearer.
func TestCredentialKindFollowsAuth(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	as.AddClient(fake.AuthClient{ID: "console", RedirectURIs: []string{"http://127.0.0.1/callback"}})
	// A token the server accepts, stored as the server's bearer token.
	accepted, _ := as.Mint("console", srv.URL, "read")

	bearer := mcpgate.ServerConfig{ID: "s", URL: srv.URL, Auth: mcpgate.AuthBearer, Enabled: true}
	oauthOne := oauthCfg("s", srv.URL)
	e := newEnv(t)
	_, c := e.open()
	if err := c.SetBearer(context.Background(), bearer, accepted); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, newManager(t, c, bearer), "s", "echo", `{"text":"x"}`); err != nil {
		t.Fatalf("the stored bearer token, server auth bearer: %v", err)
	}
	_, err := call(t, newManager(t, c, oauthOne), "s", "echo", `{"text":"x"}`)
	if category(err) != mcpgate.CategoryAuth {
		t.Fatalf("the server is now auth oauth: %v, want a sign-in asked for, not the bearer token sent", err)
	}
	if info, err := c.Credential(context.Background(), oauthOne); err != nil || info.Bound {
		t.Errorf("the bearer token, seen for auth oauth: %+v %v, want it not bound", info, err)
	}

	// The other way: signed in, then the server becomes auth bearer.
	mustLogin(t, c, oauthOne)
	as.ExpireAccessTokens()
	_, err = call(t, newManager(t, c, bearer), "s", "echo", `{"text":"x"}`)
	if category(err) != mcpgate.CategoryAuth {
		t.Fatalf("the server is now auth bearer: %v, want no bearer token stored", err)
	}
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 0 {
		t.Errorf("the OAuth sign-in was refreshed %d times for an auth bearer server", n)
	}
	if info, err := c.Credential(context.Background(), bearer); err != nil || info.Bound {
		t.Errorf("the sign-in, seen for auth bearer: %+v %v, want it not bound", info, err)
	}
}

// TestRefreshWithoutRotation: a refresh answered without a refresh token
// keeps the one the credential has (RFC 6749 §6), refresh after refresh.
func TestRefreshWithoutRotation(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{NoRotate: true})
	srv := fake.Start(t, &fake.Options{Auth: as})
	_, c := newEnv(t).open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	m := newManager(t, c, cfg)
	for range 2 {
		as.ExpireAccessTokens()
		if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 2 {
		t.Errorf("%d refreshes, want 2", n)
	}
}
