package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/testbin"
)

// stepUpDone signs in, meets a tool that needs more scope, signs in again
// for it, and checks the tool then works: a step-up that succeeded.
func stepUpDone(t *testing.T) (*procs, *fake.AuthServer, *fake.Server) {
	t.Helper()
	p, as, srv := signedIn(t, &fake.Options{ToolScopes: map[string]string{"admin_reset": "admin"}})
	p.mustRun(exitAuth, "call", "secure", "admin_reset")
	p.mustRun(0, "auth", "secure")
	p.mustRun(0, "call", "secure", "admin_reset")
	return p, as, srv
}

// Once a step-up has been granted, the scopes the person configures decide
// again what a sign-in asks for. A granted step-up is cleared from the credential.
func TestConfiguredScopesWinAfterAGrantedStepUp(t *testing.T) {
	t.Parallel()
	p, as, srv := stepUpDone(t)
	p.mustRun(0, "add", "secure", srv.URL, "--auth", "oauth", "--scope", "read", "--replace")
	p.mustRun(0, "auth", "secure")
	if scope := strings.Fields(as.LastAuthorizeRequest().Get("scope")); slices.Contains(scope, "admin") {
		t.Errorf("configured --scope read, but the sign-in asked for %q", scope)
	}
}

// Two sign-ins at once after a granted step-up behave as before one: the
// second waits and uses the first's result.
func TestConcurrentAuthAfterAGrantedStepUp(t *testing.T) {
	t.Parallel()
	p, as, _ := stepUpDone(t)
	exchanges := as.TokenRequests(fake.GrantAuthorizationCode)
	browsers := len(fake.BrowserLog(p.browserLog))

	first := p.startInteractive("auth", "secure", "--no-browser", "--timeout", "1m")
	location := visitWithoutCallback(t, first.authURL())
	second := p.startInteractive("auth", "secure")
	second.waitFor("Another mcpgate is signing in to secure; waiting for it to finish")
	if _, err := first.stdin.Write([]byte(location + "\n")); err != nil {
		t.Fatal(err)
	}
	r1, r2 := first.wait(), second.wait()
	if r1.code != 0 || r2.code != 0 {
		t.Fatalf("auth:\n%s\n%s", r1, r2)
	}
	if !strings.Contains(r2.stdout, "Another mcpgate finished signing in") {
		t.Errorf("the second auth signed in again:\n%s", r2)
	}
	if n := as.TokenRequests(fake.GrantAuthorizationCode) - exchanges; n != 1 {
		t.Errorf("%d code exchanges for two concurrent sign-ins, want 1", n)
	}
	if n := len(fake.BrowserLog(p.browserLog)) - browsers; n != 0 {
		t.Errorf("the second auth opened the browser %d time(s)", n)
	}
}

// The credential store holds none of the authorization server's secrets in
// plaintext, the login's state included, even in pages freed when a flow
// is taken.
func TestStoreHoldsNoSignInStateInPlaintext(t *testing.T) {
	t.Parallel()
	p, as, _ := signedIn(t, nil)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(filepath.Join(p.dataDir, storeFileName+suffix))
		if err != nil {
			continue
		}
		for _, s := range as.Secrets() {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s%s holds the secret %s in plaintext", storeFileName, suffix, s)
			}
		}
	}
}

// The fakes serve other processes without a data race: every field their
// handlers read is set before they start serving. A client in the same
// process would hide such a race (its socket write is a release for the
// race detector); a client in another process does not.
func TestFakeFieldsRaceWithOtherProcesses(t *testing.T) {
	t.Parallel()
	if !testbin.Race {
		t.Skip("shows only with -race")
	}
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	p := newProcs(t)
	// add and call are separate processes; the call's requests reach
	// handlers that read srv.URL and as.Issuer.
	p.start("", "add", "secure", srv.URL, "--auth", "oauth").wait()
	p.start("", "auth", "secure").wait()
}
