package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// The demo runs the real commands, succeeds offline and leaves nothing
// behind: its temporary directory is gone and the person's config is
// untouched.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where os.MkdirTemp puts the demo's directory
	h := newHarness(t)
	real := []byte(`{"mcpServers": {"mine": {"url": "https://mine.example.com/mcp"}}}`)
	if err := os.WriteFile(h.cfg, real, 0o600); err != nil {
		t.Fatal(err)
	}
	h.env["MCPGATE_CONFIG"] = h.cfg

	r := h.runRaw("", "demo")
	if r.code != 0 {
		t.Fatalf("demo:\n%s", r)
	}
	for _, want := range []string{
		`→ Adding the demo server as "demo":`, "mcpgate add demo http://127.0.0.1:",
		"ready", "echo", "hello from mcpgate", "the widget is broken", "exited with code 1",
		"accepted: name=Ada lucky=7", "Hello, Ada!", "fake://readme",
		`→ Adding the server that needs a sign-in as "secure" (OAuth):`,
		"not signed in to secure; sign in with: mcpgate auth secure",
		"In real use your browser opens the URL below", "Open this URL to sign in to secure:",
		"Signed in to secure.", "sealed with the key from the key file",
		"Signed out of secure", "revoked", "Demo finished",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", r)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the demo left %v in TMPDIR", left)
	}
	if !bytes.Equal(h.configBytes(), real) {
		t.Error("the demo changed the person's config")
	}
}

// The built binary runs the demo as a person would: go run ./cmd/mcpgate demo.
func TestDemoBinary(t *testing.T) {
	t.Parallel()
	bin := mcpgateBinary(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A browser the demo must not start: it signs in with a stand-in.
	browserLog := filepath.Join(dir, "browser.log")
	cmd := exec.Command(bin, "demo")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "MCPGATE_CONFIG=", "MCPGATE_DATA_DIR=", "TMPDIR="+tmp,
		"MCPGATE_SECRET_KEY=", "BROWSER="+fake.BuildBrowser(t), "FAKEBROWSER_LOG="+browserLog)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcpgate demo: %v\n--- stdout\n%s--- stderr\n%s", err, stdout.String(), stderr.String())
	}
	if runs := fake.BrowserLog(browserLog); len(runs) != 0 {
		t.Errorf("the demo started the browser: %q", runs)
	}
	if !strings.Contains(stdout.String(), "Demo finished") || !strings.Contains(stdout.String(), "Signed in to secure.") {
		t.Errorf("demo output:\n%s", stdout.String())
	}
	for _, d := range []string{home, tmp} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Errorf("the demo left %v in %s", left, d)
		}
	}
}
