package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store"
)

func TestLoginCallRefresh(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	st, c := e.open()
	cfg := oauthCfg("s", srv.URL)

	// Before signing in, the server is needs-auth, and nothing opened a browser.
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); category(err) != mcpgate.CategoryAuth {
		t.Fatalf("call before login: %v", err)
	}
	if st, _ := m.Status("s"); st.State != mcpgate.StateNeedsAuth {
		t.Fatalf("state before login %s", st.State)
	}

	res, b, err := login(t, c, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Issuer != as.Issuer || !res.Refresh {
		t.Errorf("login result %+v", res)
	}
	q := query(b.opened[0])
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != srv.URL || q.Get("state") == "" || q.Get("code_challenge") == "" {
		t.Errorf("authorize request %v", q)
	}
	if !strings.Contains(q.Get("scope"), "read") || !strings.Contains(q.Get("scope"), "offline_access") {
		t.Errorf("scope %q: want the challenge's read and offline_access (listed by the AS)", q.Get("scope"))
	}
	if ex := as.LastTokenRequest(fake.GrantAuthorizationCode); ex.Get("resource") != srv.URL || ex.Get("code_verifier") == "" {
		t.Errorf("exchange %v", ex)
	}

	// The live manager picks the new login up without a restart.
	if _, err := call(t, m, "s", "echo", `{"text":"after login"}`); err != nil {
		t.Fatalf("call after login in the same manager: %v", err)
	}

	// Expired access token: refreshed, with resource, and the call goes on.
	as.ExpireAccessTokens()
	if _, err := call(t, m, "s", "echo", `{"text":"after expiry"}`); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
		t.Errorf("refreshes %d, want 1", n)
	}
	if r := as.LastTokenRequest(fake.GrantRefreshToken); r.Get("resource") != srv.URL {
		t.Errorf("refresh without resource: %v", r)
	}

	// A second login reuses the registration.
	mustLogin(t, c, cfg)
	if n := as.Registrations(); n != 1 {
		t.Errorf("registrations %d, want 1 (stored and reused)", n)
	}
	cred, err := st.GetCredential(context.Background(), "", "s")
	if err != nil {
		t.Fatal(err)
	}
	if cred.Resource != srv.URL || cred.Issuer != as.Issuer || cred.ClientID == "" || !strings.HasPrefix(cred.RedirectURI, "http://127.0.0.1:") {
		t.Errorf("binding %+v", cred.Binding)
	}
}

func TestTwoProcessesRefreshOnce(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	var mu sync.Mutex
	outcomes := map[string]int{}
	onRefresh := func(tenant, server, outcome string) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[tenant+"/"+server+"/"+outcome]++
	}
	_, c1 := e.openWith(&oauth.Options{OnRefresh: onRefresh})
	_, c2 := e.openWith(&oauth.Options{OnRefresh: onRefresh}) // another process on the same data directory
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c1, cfg)
	m1 := newManager(t, c1, cfg)
	m2 := newManager(t, c2, cfg)
	for _, m := range []interface {
		Connect(context.Context, string) error
	}{m1, m2} {
		if err := m.Connect(context.Background(), "s"); err != nil {
			t.Fatal(err)
		}
	}

	as.ExpireAccessTokens()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, m := range []*struct{ call func() error }{
		{func() error { _, err := call(t, m1, "s", "echo", `{"text":"1"}`); return err }},
		{func() error { _, err := call(t, m2, "s", "echo", `{"text":"2"}`); return err }},
	} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.call() }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent refresh: %v", err)
		}
	}
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
		t.Fatalf("the rotating refresh token was used %d times, want 1", n)
	}
	// The hook tells metrics the same: one refresh; the other process
	// found it done (under the lock, "shared", or before, nothing).
	mu.Lock()
	defer mu.Unlock()
	if outcomes["/s/ok"] != 1 || outcomes["/s/shared"] > 1 || len(outcomes) > 2 {
		t.Errorf("OnRefresh outcomes %v, want one ok and at most one shared", outcomes)
	}
}

func TestInvalidGrantClearsCredential(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	st, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	m := newManager(t, c, cfg)
	as.RevokeAll()
	as.ExpireAccessTokens()
	_, err := call(t, m, "s", "echo", `{"text":"x"}`)
	if category(err) != mcpgate.CategoryAuth {
		t.Fatalf("call with a revoked grant: %v", err)
	}
	if status, _ := m.Status("s"); status.State != mcpgate.StateNeedsAuth {
		t.Errorf("state %s, want needs-auth", status.State)
	}
	if _, err := st.GetCredential(context.Background(), "", "s"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("credential after invalid_grant: %v, want it cleared", err)
	}
	// Background work never logs in: only the refresh was tried.
	if n := as.Authorizations(); n != 1 {
		t.Errorf("authorizations %d: background work started a login", n)
	}
}

func TestStepUp(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as, ToolScopes: map[string]string{"admin_reset": "admin"}})
	e := newEnv(t)
	st, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	m := newManager(t, c, cfg)
	_, err := call(t, m, "s", "admin_reset", `{}`)
	if category(err) != mcpgate.CategoryAuth || code(err) != "insufficient_scope" || !strings.Contains(err.Error(), "admin") {
		t.Fatalf("call needing more scope: %v", err)
	}
	status, _ := m.Status("s")
	if status.State != mcpgate.StateNeedsAuth || status.Error.Code != "insufficient_scope" {
		t.Errorf("status %+v", status)
	}
	cred, _ := st.GetCredential(context.Background(), "", "s")
	if !slices.Contains(cred.StepUpScopes, "admin") {
		t.Fatalf("challenged scope not remembered: %v", cred.StepUpScopes)
	}
	_, b, err := login(t, c, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if scope := query(b.opened[0]).Get("scope"); !strings.Contains(scope, "admin") {
		t.Errorf("step-up login asked for %q", scope)
	}
	if _, err := call(t, m, "s", "admin_reset", `{}`); err != nil {
		t.Fatalf("call after step-up: %v", err)
	}
}

// TestStepUpIsBounded: an authorization server that never grants the
// scope a tool needs. mcpgate asks for it at most twice after the first
// sign-in, then stops with an error a sign-in does not fix.
func TestStepUpIsBounded(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{Scopes: []string{"read", "offline_access"}}) // never grants admin
	srv := fake.Start(t, &fake.Options{Auth: as, ToolScopes: map[string]string{"admin_reset": "admin"}})
	stepUpStops(t, as, srv)
}

// TestStepUpRetryLimit: a server that refuses a tool with 403
// insufficient_scope however many scopes the token holds. mcpgate signs in
// at most three times in all for it (the first sign-in and two step-ups),
// then stops.
func TestStepUpRetryLimit(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as, ToolScopes: map[string]string{"admin_reset": "admin"}})
	srv.Protect(fake.Protection{NeverEnoughScope: true})
	stepUpStops(t, as, srv)
}

// TestStepUpShiftingScopeIsBounded: a server that asks for a scope it
// never asked for before at every refusal. Each challenge differs from the
// last, yet mcpgate gives up within a bound on step-ups in a row.
func TestStepUpShiftingScopeIsBounded(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as, ToolScopes: map[string]string{"admin_reset": "admin"}})
	srv.Protect(fake.Protection{ShiftingScope: true})
	n := stepUpsUntilStop(t, as, srv, 12)
	if n > 5 {
		t.Errorf("%d authorizations for a server that asks for a new scope each time, want at most 5 (the sign-in and four step-ups)", n)
	}
}

// stepUpStops signs in, then signs in again whenever the call needs it, as
// the person (or the conformance driver) would, and checks mcpgate stops
// after the sign-in and two step-ups.
func stepUpStops(t *testing.T, as *fake.AuthServer, srv *fake.Server) {
	t.Helper()
	if n := stepUpsUntilStop(t, as, srv, 6); n != 3 {
		t.Errorf("%d authorizations for one challenge, want 3 (the sign-in and two step-ups)", n)
	}
}

// stepUpsUntilStop signs in, then again whenever a call needs it, at most
// rounds times, checks that mcpgate stopped asking, and returns the
// number of authorizations made.
func stepUpsUntilStop(t *testing.T, as *fake.AuthServer, srv *fake.Server, rounds int) int {
	t.Helper()
	e := newEnv(t)
	_, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	m := newManager(t, c, cfg)
	var err error
	for range rounds {
		_, err = call(t, m, "s", "admin_reset", `{}`)
		if category(err) != mcpgate.CategoryAuth {
			break
		}
		mustLogin(t, c, cfg)
	}
	if category(err) == mcpgate.CategoryAuth || code(err) != "insufficient_scope" || !strings.Contains(err.Error(), "stops asking") {
		t.Fatalf("after repeated step-ups: %v, want a non-auth error saying it stopped", err)
	}
	n := as.Authorizations()
	// The person may still sign in by hand; the next refusal stops at once.
	mustLogin(t, c, cfg)
	if _, err := call(t, m, "s", "admin_reset", `{}`); category(err) == mcpgate.CategoryAuth {
		t.Errorf("after another sign-in: %v, want it to stop again", err)
	}
	return n
}

// TestStepUpAsksForTheUnion: a server whose 403 names only the missing
// scope. The step-up asks for it together with the scopes already
// granted, so the tools that worked keep working.
func TestStepUpAsksForTheUnion(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as, ToolScopes: map[string]string{"admin_reset": "admin"}})
	srv.Protect(fake.Protection{ChallengeMissingOnly: true})
	e := newEnv(t)
	_, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "admin_reset", `{}`); code(err) != "insufficient_scope" {
		t.Fatalf("call needing admin: %v", err)
	}
	_, b, err := login(t, c, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	scope := strings.Fields(query(b.opened[0]).Get("scope"))
	for _, want := range []string{"read", "admin", "offline_access"} {
		if !slices.Contains(scope, want) {
			t.Errorf("step-up asked for %q, want %s among them (granted and challenged)", scope, want)
		}
	}
	if _, err := call(t, m, "s", "admin_reset", `{}`); err != nil {
		t.Errorf("admin_reset after the step-up: %v", err)
	}
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
		t.Errorf("echo after the step-up: %v", err)
	}
}

func TestLogoutRevokes(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	st, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	res, err := c.Logout(context.Background(), cfg)
	if err != nil || !res.Removed || !res.Revoked {
		t.Fatalf("logout %+v %v", res, err)
	}
	if as.Revocations() == 0 {
		t.Error("no revocation reached the server")
	}
	if _, err := st.GetCredential(context.Background(), "", "s"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("credential after logout: %v", err)
	}
	m := newManager(t, c, cfg)
	if _, err := call(t, m, "s", "echo", `{"text":"x"}`); category(err) != mcpgate.CategoryAuth {
		t.Errorf("call after logout: %v", err)
	}
}

func TestSeveralIssuersNeedAChoice(t *testing.T) {
	t.Parallel()
	h := fake.StartHostileAuth(t, fake.HostileTwoIssuers)
	e := newEnv(t)
	_, c := e.open()
	cfg := oauthCfg("s", h.Server.URL)
	_, b, err := login(t, c, cfg, nil)
	if code(err) != "choose_issuer" || !strings.Contains(err.Error(), h.Auth.Issuer) || !strings.Contains(err.Error(), h.Auth2.Issuer) {
		t.Fatalf("several issuers: %v", err)
	}
	if len(b.opened) != 0 {
		t.Error("a browser was opened before the person chose an issuer")
	}
	res, _, err := login(t, c, cfg, &oauth.LoginOptions{Issuer: h.Auth2.Issuer})
	if err != nil || res.Issuer != h.Auth2.Issuer {
		t.Fatalf("chosen issuer: %+v %v", res, err)
	}
	// The choice sticks for the next login.
	res, _, err = login(t, c, cfg, nil)
	if err != nil || res.Issuer != h.Auth2.Issuer {
		t.Fatalf("relogin: %+v %v", res, err)
	}
}

func TestPastedRedirect(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	_, c := e.open()
	pasted := make(chan string, 1)
	open := func(ctx context.Context, raw string) error {
		// On another machine: the browser ends on the redirect, which the
		// person copies instead of it reaching our callback.
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(raw)
		if err != nil {
			return err
		}
		resp.Body.Close()
		pasted <- "  " + resp.Header.Get("Location") + "\n"
		return nil
	}
	if _, _, err := login(t, c, oauthCfg("s", srv.URL), &oauth.LoginOptions{Open: open, Pasted: pasted}); err != nil {
		t.Fatalf("login with a pasted redirect: %v", err)
	}
}

func TestConcurrentLoginsWait(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	_, c1 := e.open()
	_, c2 := e.open()
	cfg := oauthCfg("s", srv.URL)
	release := make(chan struct{})
	entered := make(chan struct{})
	slow := func(ctx context.Context, raw string) error {
		close(entered)
		<-release
		return (&browser{}).open(ctx, raw)
	}
	first := make(chan error, 1)
	go func() { _, _, err := login(t, c1, cfg, &oauth.LoginOptions{Open: slow}); first <- err }()
	<-entered
	second := make(chan *oauth.LoginResult, 1)
	go func() {
		res, _, err := login(t, c2, cfg, nil)
		if err != nil {
			t.Error(err)
		}
		second <- res
	}()
	time.Sleep(200 * time.Millisecond)
	if as.Registrations() != 1 || as.Authorizations() != 0 {
		t.Fatal("the second login went ahead while the first was in progress")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	res := <-second
	if res == nil || !res.Concurrent {
		t.Errorf("second login %+v, want it to use the first one's credential", res)
	}
	if n := as.TokenRequests(fake.GrantAuthorizationCode); n != 1 || as.Authorizations() != 1 {
		t.Errorf("%d code exchanges and %d authorizations, want 1 each", n, as.Authorizations())
	}
}

// TestRedirectToTheCallersPage: a program with its own page (the settings
// page) receives the redirect there and hands it over; nothing listens on
// a port of the login's own.
func TestRedirectToTheCallersPage(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	_, c := e.open()
	var took []bool
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		took = append(took, c.CompleteRedirect(r.URL.Query()))
	}))
	defer page.Close()
	res, b, err := login(t, c, oauthCfg("s", srv.URL), &oauth.LoginOptions{RedirectURI: page.URL + "/callback"})
	if err != nil {
		t.Fatal(err)
	}
	if got := query(b.opened[0]).Get("redirect_uri"); got != page.URL+"/callback" {
		t.Errorf("redirect_uri %q", got)
	}
	if len(took) != 1 || !took[0] || res.Issuer != as.Issuer {
		t.Errorf("redirect handed over: %v, result %+v", took, res)
	}
	if c.CompleteRedirect(url.Values{"state": {"forged"}, "code": {"x"}}) {
		t.Error("a redirect with an unknown state was taken")
	}
}
