package oauth_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/oauth"
)

// TestRegistrationApplicationType: dynamic registration says what kind of
// application mcpgate is (SEP-837): native when the browser comes back to
// a loopback address, web when it comes back to an https page (a
// gateway's callback). The authorization server holds a client to it.
func TestRegistrationApplicationType(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	_, c := e.open()
	mustLogin(t, c, oauthCfg("s", srv.URL))
	if got := as.LastRegistration()["application_type"]; got != "native" {
		t.Errorf("loopback redirect registered as application_type %v, want native", got)
	}

	_, c2 := newEnv(t).open()
	// A web page's redirect: the browser stops at it, and the page hands
	// the query over (nothing connects to the page's host).
	const page = "https://gateway.example/callback"
	stop := func(ctx context.Context, raw string) error {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if !strings.HasPrefix(loc, page+"?") {
			return mcpgate.Errorf(mcpgate.CategoryAuth, "the authorization server did not redirect to the page (HTTP %d)", resp.StatusCode)
		}
		c2.CompleteRedirect(query(loc))
		return nil
	}
	if _, _, err := login(t, c2, oauthCfg("w", srv.URL), &oauth.LoginOptions{RedirectURI: page, Open: stop}); err != nil {
		t.Fatalf("login returning to an https page: %v", err)
	}
	if got := as.LastRegistration()["application_type"]; got != "web" {
		t.Errorf("https redirect registered as application_type %v, want web", got)
	}
}

// TestAuthorizationServerMigration: the server moves to another
// authorization server (SEP-2352). The old credential is not refreshed at
// the old one; the next sign-in registers anew with the new one rather
// than presenting the old one's client, and the registrations of both are
// kept apart, keyed by issuer.
func TestAuthorizationServerMigration(t *testing.T) {
	t.Parallel()
	as1 := fake.StartAuth(t, nil)
	as2 := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as1})
	e := newEnv(t)
	st, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	old, _ := st.GetCredential(context.Background(), "", "s")
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
		t.Fatal(err)
	}

	srv.MoveAuth(as2)
	_, err := call(t, m, "s", "echo", `{"text":"y"}`)
	if category(err) != mcpgate.CategoryAuth || !strings.Contains(err.Error(), "no longer accepts sign-ins from "+as1.Issuer) {
		t.Fatalf("call after the move: %v, want needs-auth naming the old issuer", err)
	}
	if n := as1.TokenRequests(fake.GrantRefreshToken); n != 0 {
		t.Errorf("%d refreshes at the old authorization server", n)
	}
	res, b, err := login(t, c, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Issuer != as2.Issuer || as2.Registrations() != 1 {
		t.Errorf("signed in at %s with %d registrations there, want %s and 1", res.Issuer, as2.Registrations(), as2.Issuer)
	}
	if got := query(b.opened[0]).Get("client_id"); got == old.ClientID {
		t.Errorf("presented the old authorization server's client %q to the new one", got)
	}
	if _, err := call(t, m, "s", "echo", `{"text":"z"}`); err != nil {
		t.Fatalf("call after signing in at the new server: %v", err)
	}
	cur, _ := st.GetCredential(context.Background(), "", "s")
	if cur.Issuer != as2.Issuer || cur.ClientID == old.ClientID {
		t.Errorf("credential bound to %s/%s", cur.Issuer, cur.ClientID)
	}
	reg, err := st.GetRegistration(context.Background(), "", as1.Issuer, "http://127.0.0.1/callback")
	if err != nil || reg.ClientID != old.ClientID {
		t.Errorf("the old server's registration %+v %v, want it kept for that server", reg, err)
	}
}
