package oauth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/oauth"
)

// A sign-in begun by one replica completes on another: nothing of it is
// in the memory of the one that began it, and the flow is taken once.
func TestSignInBegunHereFinishesThere(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	// Two replicas: two handles on one store, two clients of the same
	// tenant (A begins, B finishes), and a third client of another tenant
	// that must never see the credential.
	stA, _ := e.open()
	_, b := e.open()
	cfg := oauthCfg("s", srv.URL)
	a := oauth.New(&oauth.Options{Store: stA, Tenant: "acme:alice"})

	var callbacks []url.Values
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		callbacks = append(callbacks, r.URL.Query())
	}))
	defer page.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	authURL, err := a.Begin(ctx, cfg, &oauth.BeginOptions{RedirectURI: page.URL + "/oauth/callback"})
	if err != nil {
		t.Fatal(err)
	}
	if q := query(authURL); q.Get("redirect_uri") != page.URL+"/oauth/callback" || q.Get("code_challenge_method") != "S256" || q.Get("resource") == "" {
		t.Fatalf("authorization URL %s", authURL)
	}
	(&browser{}).open(ctx, authURL)
	if len(callbacks) != 1 {
		t.Fatalf("the browser came back %d times", len(callbacks))
	}

	servers := func(tenant, id string) (mcpgate.ServerConfig, bool) {
		if tenant != "acme:alice" || id != "s" {
			t.Errorf("asked for %q/%q", tenant, id)
		}
		return cfg, true
	}
	done, err := b.Finish(ctx, callbacks[0], servers)
	if err != nil {
		t.Fatalf("finishing on the other replica: %v", err)
	}
	if done.Tenant != "acme:alice" || done.Server != "s" || done.Issuer != as.Issuer {
		t.Errorf("finished %+v", done)
	}
	// The credential is the tenant's: A (and any replica) uses it.
	m := newManager(t, a, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"hi"}`); err != nil {
		t.Fatalf("a call with the sign-in finished elsewhere: %v", err)
	}
	// Another tenant has nothing; the callback works once.
	other := oauth.New(&oauth.Options{Store: stA, Tenant: "acme:bob"})
	if _, err := other.Credential(ctx, cfg); mcpgate.CategoryOf(err) != mcpgate.CategoryNotFound {
		t.Errorf("another user sees a credential: %v", err)
	}
	if _, err := b.Finish(ctx, callbacks[0], servers); code(err) != "invalid_state" {
		t.Errorf("the same callback twice: %v", err)
	}
	if _, err := b.Finish(ctx, url.Values{"state": {"forged"}, "code": {"x"}}, servers); code(err) != "invalid_state" {
		t.Errorf("a forged callback: %v", err)
	}
	if n := as.TokenRequests(fake.GrantAuthorizationCode); n != 1 {
		t.Errorf("%d code exchanges, want 1", n)
	}
}

// A callback for a server no longer configured stores nothing; a refused
// sign-in says so.
func TestFinishRefusals(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	_, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	begin := func() url.Values {
		authURL, err := c.Begin(ctx, cfg, &oauth.BeginOptions{RedirectURI: "http://127.0.0.1:9/oauth/callback"})
		if err != nil {
			t.Fatal(err)
		}
		return url.Values{"state": {query(authURL).Get("state")}}
	}
	q := begin()
	q.Set("code", "whatever")
	done, err := c.Finish(ctx, q, func(string, string) (mcpgate.ServerConfig, bool) { return mcpgate.ServerConfig{}, false })
	if mcpgate.CategoryOf(err) != mcpgate.CategoryNotFound || done.Server != "s" {
		t.Errorf("a removed server: %+v, %v", done, err)
	}
	q = begin()
	q.Set("error", "access_denied")
	q.Set("iss", as.Issuer)
	_, err = c.Finish(ctx, q, func(string, string) (mcpgate.ServerConfig, bool) { return cfg, true })
	if code(err) != "access_denied" || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a refused sign-in: %v", err)
	}
	if _, err := c.Credential(ctx, cfg); mcpgate.CategoryOf(err) != mcpgate.CategoryNotFound {
		t.Errorf("something was stored: %v", err)
	}
	if _, err := c.Begin(ctx, cfg, &oauth.BeginOptions{RedirectURI: "http://example.com/cb"}); mcpgate.CategoryOf(err) != mcpgate.CategoryInvalid {
		t.Errorf("an http redirect to a public host: %v", err)
	}
}
