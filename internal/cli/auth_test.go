package cli

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
)

const echoHello = `{"text":"hello"}`

// signedIn adds a server protected by a fresh authorization server as
// "secure" and signs in to it through the fake browser, as a person would.
// Every output of the test is checked for secrets when it ends.
func signedIn(t *testing.T, opts *fake.Options) (*procs, *fake.AuthServer, *fake.Server) {
	t.Helper()
	as := fake.StartAuth(t, nil)
	var o fake.Options
	if opts != nil {
		o = *opts
	}
	o.Auth = as
	srv := fake.Start(t, &o)
	p := newProcs(t)
	p.checkSecrets(as)
	p.mustRun(0, "add", "secure", srv.URL, "--auth", "oauth")
	r := p.mustRun(0, "auth", "secure")
	if !strings.Contains(r.stdout, "Signed in to secure.") || !strings.Contains(r.stderr, "Open this URL to sign in to secure:") {
		t.Fatalf("auth:\n%s", r)
	}
	return p, as, srv
}

// A person adds a server, signs in once through the browser, and every
// later process uses that sign-in.
func TestAuthThenCallAcrossProcesses(t *testing.T) {
	t.Parallel()
	p, as, _ := signedIn(t, nil)

	runs := fake.BrowserLog(p.browserLog)
	if len(runs) != 1 || len(runs[0]) != 1 || !strings.HasPrefix(runs[0][0], as.AuthorizationEndpoint+"?") {
		t.Errorf("the browser should have been started once with the sign-in URL as its one argument: %q", runs)
	}
	if got := as.LastAuthorizeRequest(); got.Get("code_challenge_method") != "S256" || got.Get("resource") == "" {
		t.Errorf("authorize request %v", got)
	}

	r := p.mustRun(0, "list", "secure")
	if !strings.Contains(r.stdout, "echo") {
		t.Errorf("list:\n%s", r)
	}
	r = p.mustRun(0, "call", "secure", "echo", echoHello)
	if strings.TrimSpace(r.stdout) != "hello" {
		t.Errorf("call:\n%s", r)
	}
	// A process started afterwards needs no new login.
	p.mustRun(0, "call", "secure", "echo", echoHello)
	if n := as.TokenRequests(fake.GrantAuthorizationCode); n != 1 {
		t.Errorf("%d code exchanges, want 1", n)
	}
	if n := as.Authorizations(); n != 1 {
		t.Errorf("%d authorize requests, want 1", n)
	}

	r = p.mustRun(0, "status", "--json")
	if !strings.Contains(r.stdout, `"secretKey": "file"`) || !strings.Contains(r.stdout, `"state": "ready"`) {
		t.Errorf("status --json:\n%s", r.stdout)
	}
}

// An access token that expired at the authorization server is refreshed
// once, and the refreshed one is used by the next process.
func TestCallRefreshesAnExpiredToken(t *testing.T) {
	t.Parallel()
	p, as, _ := signedIn(t, nil)
	as.ExpireAccessTokens()
	p.mustRun(0, "call", "secure", "echo", echoHello)
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	p.mustRun(0, "call", "secure", "echo", echoHello)
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
		t.Errorf("%d refreshes after a second call, want still 1", n)
	}
	if n := as.TokenRequests(fake.GrantAuthorizationCode); n != 1 {
		t.Errorf("%d code exchanges, want 1", n)
	}
}

// Processes that find the token expired at the same moment refresh it
// once between them. The fake rotates refresh tokens and revokes the whole
// chain when one is used twice, so a double refresh would break every
// later round.
func TestConcurrentCallsRefreshOnce(t *testing.T) {
	t.Parallel()
	p, as, _ := signedIn(t, nil)
	const rounds = 3
	for round := 1; round <= rounds; round++ {
		as.ExpireAccessTokens()
		a := p.start("", "call", "secure", "echo", echoHello)
		b := p.start("", "call", "secure", "echo", echoHello)
		for _, r := range []result{a.wait(), b.wait()} {
			if r.code != 0 || strings.TrimSpace(r.stdout) != "hello" {
				t.Fatalf("round %d: call:\n%s", round, r)
			}
		}
		if n := as.TokenRequests(fake.GrantRefreshToken); n != round {
			t.Fatalf("round %d: %d refreshes in all, want %d", round, n, round)
		}
	}
}

// A tool that needs a scope the sign-in lacks exits 4 naming the scope;
// signing in again asks for it, and the tool then works.
func TestStepUp(t *testing.T) {
	t.Parallel()
	p, as, _ := signedIn(t, &fake.Options{ToolScopes: map[string]string{"admin_reset": "admin"}})
	if scope := as.LastAuthorizeRequest().Get("scope"); strings.Contains(scope, "admin") {
		t.Fatalf("the first sign-in already asked for admin: %q", scope)
	}
	r := p.mustRun(exitAuth, "call", "secure", "admin_reset")
	if !strings.Contains(r.stderr, "admin") || !strings.Contains(r.stderr, "mcpgate auth secure") {
		t.Errorf("call admin_reset should name the scope and the command:\n%s", r)
	}
	p.mustRun(0, "call", "secure", "echo", echoHello) // the rest still works

	p.mustRun(0, "auth", "secure")
	if scope := strings.Fields(as.LastAuthorizeRequest().Get("scope")); !slices.Contains(scope, "admin") || !slices.Contains(scope, "read") {
		t.Errorf("the second sign-in asked for scope %q, want admin and read", scope)
	}
	r = p.mustRun(0, "call", "secure", "admin_reset")
	if !strings.Contains(r.stdout, "reset done") {
		t.Errorf("call admin_reset after step-up:\n%s", r)
	}
}

// Logout removes the credential and revokes it at the authorization
// server; the next call needs a sign-in again.
func TestLogout(t *testing.T) {
	t.Parallel()
	p, as, _ := signedIn(t, nil)
	r := p.mustRun(0, "logout", "secure")
	if !strings.Contains(r.stdout, "Signed out of secure") || !strings.Contains(r.stdout, "revoked") {
		t.Errorf("logout:\n%s", r)
	}
	if as.Revocations() == 0 {
		t.Error("logout revoked nothing")
	}
	r = p.mustRun(exitAuth, "call", "secure", "echo", echoHello)
	if !strings.Contains(r.stderr, "mcpgate auth secure") {
		t.Errorf("call after logout:\n%s", r)
	}
	r = p.mustRun(exitAuth, "status", "secure")
	if !strings.Contains(r.stdout, "needs-auth") || !strings.Contains(r.stdout, "mcpgate auth secure") {
		t.Errorf("status after logout:\n%s", r)
	}
	r = p.mustRun(0, "logout", "secure")
	if !strings.Contains(r.stdout, "was not signed in") {
		t.Errorf("second logout:\n%s", r)
	}
}

// An OpenID provider whose access tokens are JWTs revokes the refresh
// token and answers unsupported_token_type for the access token (RFC 7009
// §2.2.1). Logout says exactly that: the sign-in is revoked as far as the
// provider can, and the access token works until it expires.
func TestLogoutAccessTokenNotRevocable(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{AccessTTL: 10 * time.Minute, NoAccessTokenRevocation: true})
	srv := fake.Start(t, &fake.Options{Auth: as})
	p := newProcs(t)
	p.checkSecrets(as)
	p.mustRun(0, "add", "oidc", srv.URL, "--auth", "oauth")
	p.mustRun(0, "auth", "oidc")
	r := p.mustRun(0, "logout", "oidc")
	for _, want := range []string{"Signed out of oidc", "revoked the refresh token", "unsupported_token_type", "until it expires"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("logout should say %q:\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "did not confirm") {
		t.Errorf("logout says revocation was not confirmed:\n%s", r)
	}
}

// A sign-in the person withdrew at the authorization server ends in exit 4
// with the way back, and signing in again works.
func TestRevokedSignIn(t *testing.T) {
	t.Parallel()
	p, as, _ := signedIn(t, nil)
	as.RevokeAll()
	r := p.mustRun(exitAuth, "call", "secure", "echo", echoHello)
	if !strings.Contains(r.stderr, "mcpgate auth secure") {
		t.Errorf("call after revocation:\n%s", r)
	}
	p.mustRun(0, "auth", "secure")
	p.mustRun(0, "call", "secure", "echo", echoHello)
}

// A bearer token piped to a real process is stored and used by the next
// one, and shows up nowhere.
func TestAddBearerTokenFromPipe(t *testing.T) {
	t.Parallel()
	tok := "tok-" + rand.Text()
	srv := fake.Start(t, &fake.Options{BearerToken: tok})
	p := newProcs(t)
	r := p.run(tok+"\n", "add", "api", srv.URL, "--auth", "bearer")
	if r.code != 0 {
		t.Fatalf("add:\n%s", r)
	}
	r = p.mustRun(0, "call", "api", "echo", echoHello)
	if strings.TrimSpace(r.stdout) != "hello" {
		t.Errorf("call:\n%s", r)
	}
	p.mustRun(0, "status")
	for _, out := range p.outputs {
		if strings.Contains(out, tok) {
			t.Errorf("an output holds the token:\n%s", out)
		}
	}
	for _, name := range []string{p.cfg, filepath.Join(p.dataDir, storeFileName), filepath.Join(p.dataDir, storeFileName+"-wal")} {
		if b, err := os.ReadFile(name); err == nil && bytes.Contains(b, []byte(tok)) {
			t.Errorf("%s holds the token in plaintext", name)
		}
	}
}

// Over SSH the browser runs elsewhere: the person opens the printed URL,
// and pastes the address the browser ended on.
func TestAuthNoBrowserPastedRedirect(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	p := newProcs(t)
	p.checkSecrets(as)
	p.mustRun(0, "add", "secure", srv.URL, "--auth", "oauth")

	in := p.startInteractive("auth", "secure", "--no-browser", "--timeout", "1m")
	location := visitWithoutCallback(t, in.authURL())
	if _, err := in.stdin.Write([]byte(location + "\n")); err != nil {
		t.Fatal(err)
	}
	r := in.wait()
	if r.code != 0 || !strings.Contains(r.stdout, "Signed in to secure.") {
		t.Fatalf("auth --no-browser:\n%s", r)
	}
	if !strings.Contains(r.stderr, "paste it here") {
		t.Errorf("auth --no-browser should say the address can be pasted:\n%s", r.stderr)
	}
	if runs := fake.BrowserLog(p.browserLog); len(runs) != 0 {
		t.Errorf("--no-browser started the browser: %q", runs)
	}
	p.mustRun(0, "call", "secure", "echo", echoHello)
}

// visitWithoutCallback does what a browser on another machine does with the
// sign-in URL: it signs in and is sent to the loopback callback, which it
// cannot reach. It returns where it was sent.
func visitWithoutCallback(t *testing.T, authURL string) string {
	t.Helper()
	client := &http.Client{
		Transport:     &http.Transport{DisableKeepAlives: true},
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, "http://127.0.0.1:") || !strings.Contains(loc, "code=") {
		t.Fatalf("the authorization server answered %d, Location %q", resp.StatusCode, loc)
	}
	return loc
}

// A second sign-in started while one is waiting for the person waits for
// it and uses its result, instead of racing it.
func TestConcurrentAuth(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	p := newProcs(t)
	p.checkSecrets(as)
	p.mustRun(0, "add", "secure", srv.URL, "--auth", "oauth")

	first := p.startInteractive("auth", "secure", "--no-browser", "--timeout", "1m")
	location := visitWithoutCallback(t, first.authURL())
	second := p.startInteractive("auth", "secure")
	second.waitFor("Another mcpgate is signing in to secure; waiting for it to finish")
	if _, err := first.stdin.Write([]byte(location + "\n")); err != nil {
		t.Fatal(err)
	}
	r1, r2 := first.wait(), second.wait()
	if r1.code != 0 || !strings.Contains(r1.stdout, "Signed in to secure.") {
		t.Errorf("first auth:\n%s", r1)
	}
	if r2.code != 0 || !strings.Contains(r2.stdout, "Another mcpgate finished signing in to secure meanwhile") {
		t.Errorf("second auth:\n%s", r2)
	}
	if runs := fake.BrowserLog(p.browserLog); len(runs) != 0 {
		t.Errorf("the second auth started a browser: %q", runs)
	}
	if n := as.TokenRequests(fake.GrantAuthorizationCode); n != 1 {
		t.Errorf("%d code exchanges, want 1", n)
	}
	// Nothing was clobbered: the stored sign-in works and refreshes.
	p.mustRun(0, "call", "secure", "echo", echoHello)
	as.ExpireAccessTokens()
	p.mustRun(0, "call", "secure", "echo", echoHello)
}

// Each hostile setup breaks one rule; mcpgate refuses it with a message
// saying what was wrong, stores nothing, and never runs anything but the
// browser program with the URL as its one argument.
func TestAuthRefusesHostileAuthorization(t *testing.T) {
	t.Parallel()
	// want is what the message must say; exchange whether the code may
	// have reached the token endpoint; browser whether the sign-in URL was
	// shown before the fault could be seen.
	type expect struct {
		want     string
		exchange bool
		browser  bool
	}
	cases := map[fake.HostileAuthMode]expect{
		fake.HostilePRMOtherOrigin:              {want: "another origin"},
		fake.HostilePRMWrongResource:            {want: "names resource"},
		fake.HostileIssuerMismatch:              {want: "names issuer"},
		fake.HostileNoS256:                      {want: "S256"},
		fake.HostileInsecureTokenEndpoint:       {want: "token_endpoint"},
		fake.HostileFileAuthorizeEndpoint:       {want: "authorization_endpoint"},
		fake.HostileJavascriptAuthorizeEndpoint: {want: "authorization_endpoint"},
		fake.HostileEmptyClientID:               {want: "client_id"},
		fake.HostileLongClientID:                {want: "client_id"},
		fake.HostileWrongState:                  {want: "wrong state", browser: true},
		fake.HostileWrongIss:                    {want: "iss", browser: true},
		fake.HostileMissingIss:                  {want: "iss", browser: true},
		fake.HostileTokenHang:                   {want: "in time", browser: true, exchange: true},
		fake.HostileTokenHuge:                   {want: "size bound", browser: true, exchange: true},
		fake.HostileTokenErrorText:              {want: "HTTP 400", browser: true, exchange: true},
	}
	for _, mode := range fake.HostileAuthModes() {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			h := fake.StartHostileAuth(t, mode)
			p := newProcs(t)
			servers := []*fake.AuthServer{h.Auth}
			if h.Auth2 != nil {
				servers = append(servers, h.Auth2)
			}
			p.checkSecrets(servers...)
			p.mustRun(0, "add", "evil", h.Server.URL, "--auth", "oauth")
			t.Cleanup(func() {
				if _, err := os.Stat(h.Canary); err == nil {
					t.Errorf("the canary %s exists: a shell ran", h.Canary)
				}
				for _, run := range fake.BrowserLog(p.browserLog) {
					if len(run) != 1 {
						t.Errorf("the browser was started with %d arguments: %q", len(run), run)
					}
				}
			})

			switch mode {
			case fake.HostileTwoIssuers:
				r := p.mustRun(exitAuth, "auth", "evil")
				if !strings.Contains(r.stderr, h.Auth.Issuer) || !strings.Contains(r.stderr, h.Auth2.Issuer) || !strings.Contains(r.stderr, "--issuer") {
					t.Errorf("auth should list both issuers and name --issuer:\n%s", r)
				}
				if runs := fake.BrowserLog(p.browserLog); len(runs) != 0 {
					t.Errorf("auth guessed an issuer and opened %q", runs)
				}
				p.mustRun(exitAuth, "call", "evil", "echo", echoHello)
				r = p.mustRun(0, "auth", "evil", "--issuer", h.Auth2.Issuer)
				if !strings.Contains(r.stdout, h.Auth2.Issuer) {
					t.Errorf("auth --issuer should say which issuer signed in:\n%s", r)
				}
				p.mustRun(0, "call", "evil", "echo", echoHello)
				if n, n2 := h.Auth.TokenRequests(fake.GrantAuthorizationCode), h.Auth2.TokenRequests(fake.GrantAuthorizationCode); n != 0 || n2 != 1 {
					t.Errorf("code exchanges: %d at the first issuer, %d at the chosen one; want 0 and 1", n, n2)
				}
				return
			case fake.HostileShellAuthorizeEndpoint:
				// The endpoint is a valid loopback URL whose query is shell
				// syntax. mcpgate may refuse it or use it; either way no
				// shell may see it, and the browser gets it as one argument.
				r := p.run("", "auth", "evil")
				runs := fake.BrowserLog(p.browserLog)
				if r.code == 0 {
					if len(runs) != 1 || !strings.HasPrefix(runs[0][0], h.Auth.AuthorizationEndpoint+"?") {
						t.Errorf("the browser runs %q, want one with the sign-in URL", runs)
					}
					p.mustRun(0, "call", "evil", "echo", echoHello)
				} else if len(runs) != 0 {
					t.Errorf("mcpgate refused the URL but started the browser: %q", runs)
				}
				return
			}

			want, ok := cases[mode]
			if !ok {
				t.Fatalf("no expectation for %s", mode)
			}
			// Only the hanging token endpoint is meant to run out of time;
			// every other refusal must be reached however slow the machine
			// (a 10 MiB token answer through a race-built process on two
			// loaded cores once took over 5 s).
			timeout := "60s"
			if mode == fake.HostileTokenHang {
				timeout = "5s"
			}
			r := p.run("", "auth", "evil", "--timeout", timeout)
			if r.code == 0 || !strings.HasPrefix(r.stderr, "mcpgate: ") && !strings.Contains(r.stderr, "\nmcpgate: ") {
				t.Fatalf("auth should fail with a message:\n%s", r)
			}
			msg := r.stderr[strings.LastIndex(r.stderr, "mcpgate: "):]
			t.Logf("exit %d: %s", r.code, msg)
			if !strings.Contains(msg, want.want) || !strings.Contains(msg, "evil") {
				t.Errorf("the message should name the server and say %q:\n%s", want.want, msg)
			}
			if strings.Contains(msg, "IGNORE") || strings.ContainsAny(msg, "\x1b\x00") {
				t.Errorf("remote error text reached the message:\n%q", msg)
			}
			if n := h.Auth.TokenRequests(fake.GrantAuthorizationCode); !want.exchange && n != 0 {
				t.Errorf("%d code exchanges, want none", n)
			}
			if runs := fake.BrowserLog(p.browserLog); want.browser != (len(runs) > 0) {
				t.Errorf("browser runs %q; want a run: %v", runs, want.browser)
			}
			if mode == fake.HostilePRMOtherOrigin && h.OtherOriginRequests() != 0 {
				t.Errorf("mcpgate fetched %d documents from the other origin", h.OtherOriginRequests())
			}
			// Nothing was stored: the server still needs a sign-in.
			r = p.mustRun(exitAuth, "call", "evil", "echo", echoHello)
			if !strings.Contains(r.stderr, "not signed in") {
				t.Errorf("call after the refused sign-in:\n%s", r)
			}
		})
	}
}
