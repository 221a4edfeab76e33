package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	serveStdioEcho()
	serveRawProxy()
	testbin.Waiting(8)
	goleak.VerifyTestMain(testbin.Removing(m))
}

// noBrowser is the $BROWSER of in-process tests unless they choose one: a
// program that does not exist, so a sign-in can never open a real browser.
const noBrowser = "/nonexistent/mcpgate-test-no-browser"

// harness runs mcpgate in-process with a temporary config and data dir and
// an environment of its own, never the process's.
type harness struct {
	t       *testing.T
	cfg     string
	dataDir string
	env     map[string]string
	tty     bool // pretend stdin is a terminal
	errTTY  bool // pretend stderr is a terminal (spinners drawn)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	return &harness{
		t:       t,
		cfg:     filepath.Join(dir, "config.json"),
		dataDir: filepath.Join(dir, "data"),
		// Tests never touch the OS keyring (the key goes to a file in the
		// data dir), never open a real browser, and never read the agent
		// hosts' configs of the person running them (HOME is empty).
		env: map[string]string{"MCPGATE_KEYRING": "off", "BROWSER": noBrowser,
			"HOME": filepath.Join(dir, "home"), "USERPROFILE": filepath.Join(dir, "home")},
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// run runs mcpgate --config CFG --data-dir DATA args... with empty stdin.
func (h *harness) run(args ...string) result {
	h.t.Helper()
	return h.runIn("", args...)
}

// runIn runs with stdin.
func (h *harness) runIn(stdin string, args ...string) result {
	h.t.Helper()
	return h.runRaw(stdin, append([]string{"--config", h.cfg, "--data-dir", h.dataDir}, args...)...)
}

// runRaw runs exactly args.
func (h *harness) runRaw(stdin string, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	streams := &IO{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut, InTTY: h.tty, ErrTTY: h.errTTY}
	code := run(ctx, args, streams, func(k string) string { return h.env[k] })
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// mustRun runs args and fails the test unless the exit code is want.
func (h *harness) mustRun(want int, args ...string) result {
	h.t.Helper()
	r := h.run(args...)
	if r.code != want {
		h.t.Fatalf("mcpgate %s: want exit %d, got:\n%s", strings.Join(args, " "), want, r)
	}
	return r
}

// configBytes returns the config file's content, or nil when it does not
// exist.
func (h *harness) configBytes() []byte {
	h.t.Helper()
	b, err := os.ReadFile(h.cfg)
	if err != nil && !os.IsNotExist(err) {
		h.t.Fatal(err)
	}
	return b
}

// --version prints the module version from the build info ("dev" for a
// checkout's "(devel)"), the commit, its date and local changes when the
// build stamped them, and the Go version.
//
// Not parallel: it swaps readBuildInfo, which every run reads.
func TestVersionNamesTheCommit(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}, Settings: vcs}, "v1.2.0 (commit 1a2b3c4d5e6f, 2026-12-01, with local changes; go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:1]}, "dev (commit 1a2b3c4d5e6f; go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "dev (go1.26.0)"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201100000-1a2b3c4d5e6f"}}, "v0.0.0-20261201100000-1a2b3c4d5e6f"},
		{debug.BuildInfo{}, "dev"},
	} {
		if got := describeBuild(&tc.bi); got != tc.want {
			t.Errorf("describeBuild(%+v) = %q, want %q", tc.bi.Main, got, tc.want)
		}
	}

	old := readBuildInfo
	t.Cleanup(func() { readBuildInfo = old })
	readBuildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}, Settings: vcs}, true
	}
	h := newHarness(t)
	if r := h.mustRun(0, "--version"); r.stdout != "mcpgate version v1.2.0 (commit 1a2b3c4d5e6f, 2026-12-01, with local changes; go1.26.0)\n" {
		t.Errorf("--version printed %q", r.stdout)
	}
	if Version() != "v1.2.0" {
		t.Errorf("Version() = %q", Version())
	}
	readBuildInfo = func() (*debug.BuildInfo, bool) { return nil, false }
	if r := h.mustRun(0, "--version"); r.stdout != "mcpgate version dev\n" {
		t.Errorf("--version without build info printed %q", r.stdout)
	}
}
