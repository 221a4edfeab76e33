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
	t.Parallel()
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

// TestProbeSpeaksTheCurrentProtocol: the sign-in asks the server how to
// sign in with a server/discover request of MCP 2026-07-28, as the client
// connects. A server that lets initialize through unauthenticated (it
// protects what a session does) still challenges that request, and its
// challenge's scope is what the login asks for, not the metadata's
// scopes_supported.
func TestProbeSpeaksTheCurrentProtocol(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	srv.Protect(fake.Protection{OpenInitialize: true})
	e := newEnv(t)
	_, c := e.open()
	_, b, err := login(t, c, oauthCfg("s", srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	chs := srv.Challenges()
	if len(chs) == 0 {
		t.Fatal("the probe was not challenged")
	}
	if p := chs[0]; p.Method != "server/discover" || p.ProtocolVersion != "2026-07-28" || p.MethodHeader != "server/discover" || p.Token {
		t.Errorf("probe %+v, want an unauthenticated server/discover at 2026-07-28 with its Mcp-Method header", p)
	}
	if got := query(b.opened[0]).Get("scope"); got != fake.ChallengeScope+" offline_access" {
		t.Errorf("scope %q, want the challenge's %q (and offline_access)", got, fake.ChallengeScope)
	}
	if n := srv.Initializes(); n != 0 {
		t.Errorf("the probe sent %d initialize requests to a server that challenged server/discover", n)
	}
}

// TestProbeFallsBackToInitialize: a session-era server that refuses
// server/discover outright is asked with initialize, and its challenge
// still decides the login.
func TestProbeFallsBackToInitialize(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	srv.Protect(fake.Protection{RefuseDiscover: true})
	e := newEnv(t)
	_, c := e.open()
	_, b, err := login(t, c, oauthCfg("s", srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	chs := srv.Challenges()
	if len(chs) != 1 || chs[0].Method != "initialize" || chs[0].ProtocolVersion != "2025-11-25" {
		t.Errorf("challenged %+v, want one initialize at 2025-11-25", chs)
	}
	if got := query(b.opened[0]).Get("scope"); got != fake.ChallengeScope+" offline_access" {
		t.Errorf("scope %q, want the challenge's", got)
	}
}

// TestLegacyServer: servers of MCP 2025-03-26 have no protected resource
// metadata; their origin is the authorization server, found through its
// RFC 8414 metadata, else at the default endpoints /authorize, /token and
// /register. Sign-in, calls and refresh work either way.
func TestLegacyServer(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]fake.LegacyAuth{"metadata": fake.LegacyMetadata, "defaults": fake.LegacyDefaults} {
		t.Run(name, func(t *testing.T) {
			srv, as := fake.StartLegacy(t, mode, nil)
			origin := strings.TrimSuffix(srv.URL, fake.Endpoint)
			if as.Issuer != origin {
				t.Fatalf("fake: issuer %s, want the origin", as.Issuer)
			}
			e := newEnv(t)
			st, c := e.open()
			cfg := oauthCfg("s", srv.URL)
			res, b, err := login(t, c, cfg, nil)
			if err != nil {
				t.Fatalf("login to a 2025-03-26 server: %v", err)
			}
			if res.Issuer != origin || !strings.HasPrefix(b.opened[0], as.AuthorizationEndpoint+"?") {
				t.Errorf("issuer %s, opened %s; want %s at %s", res.Issuer, b.opened[0], origin, as.AuthorizationEndpoint)
			}
			if as.Registrations() != 1 {
				t.Errorf("%d registrations, want 1", as.Registrations())
			}
			cred, err := st.GetCredential(context.Background(), "", "s")
			if err != nil || cred.Resource != srv.URL {
				t.Fatalf("credential %+v %v", cred, err)
			}
			_, other := e.open() // another process refreshes, knowing nothing yet
			m := newManager(t, other, cfg)
			if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
				t.Fatalf("call: %v", err)
			}
			as.ExpireAccessTokens()
			if _, err := call(t, m, "s", "echo", `{"text":"y"}`); err != nil {
				t.Fatalf("call after expiry: %v", err)
			}
			if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
				t.Errorf("%d refreshes, want 1", n)
			}
		})
	}
}
