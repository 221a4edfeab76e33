package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// A malformed config file is named in a clear error by every command that
// reads it, and no command rewrites it.
func TestMalformedConfigIsLeftAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bad := []byte("{\n  \"mcpServers\": {\n    \"docs\": {\"url\": \"https://docs.example.com/mcp\",}\n  \n")
	if err := os.WriteFile(h.cfg, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"add", "x", "https://x.example.com/mcp"},
		{"remove", "docs"},
		{"disable", "docs"},
		{"tools", "disable", "docs", "t"},
		{"servers"},
		{"status"},
		{"list"},
		{"call", "docs", "t"},
	} {
		r := h.run(args...)
		if r.code == 0 {
			t.Errorf("%v succeeded on a malformed config:\n%s", args, r)
		}
		if !strings.HasPrefix(r.stderr, "mcpgate: config "+h.cfg) {
			t.Errorf("%v: the error does not name the file:\n%s", args, r.stderr)
		}
		if !bytes.Equal(h.configBytes(), bad) {
			t.Fatalf("%v changed the malformed config:\n%s", args, h.configBytes())
		}
	}
}

func TestInvalidServerInConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bad := []byte(`{"mcpServers": {"docs": {"url": "http://example.com/mcp"}}}`)
	if err := os.WriteFile(h.cfg, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.mustRun(exitUsage, "servers")
	if !strings.Contains(r.stderr, "docs") || !strings.Contains(r.stderr, "loopback") {
		t.Errorf("servers:\n%s", r.stderr)
	}
	if !bytes.Equal(h.configBytes(), bad) {
		t.Error("config changed")
	}
}

// Without --config, MCPGATE_CONFIG and MCPGATE_DATA_DIR choose the paths.
func TestEnvironmentChoosesPaths(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.env["MCPGATE_CONFIG"] = h.cfg
	h.env["MCPGATE_DATA_DIR"] = h.dataDir
	if r := h.runRaw("", "add", "demo", srv.URL); r.code != 0 {
		t.Fatalf("add:\n%s", r)
	}
	if !strings.Contains(string(h.configBytes()), srv.URL) {
		t.Fatal("add did not write $MCPGATE_CONFIG")
	}
	// --config wins over the environment.
	other := filepath.Join(t.TempDir(), "other.json")
	if r := h.runRaw("", "--config", other, "servers"); r.code != 0 || strings.Contains(r.stdout, "demo") {
		t.Errorf("--config did not win over MCPGATE_CONFIG:\n%s", r)
	}

	app := &App{Getenv: func(k string) string { return h.env[k] }}
	if dir, err := app.DataDir(); err != nil || dir != h.dataDir {
		t.Errorf("DataDir = %q, %v; want %q", dir, err, h.dataDir)
	}
	// Nothing in this step stores data: the directory is not created.
	if _, err := os.Stat(h.dataDir); !os.IsNotExist(err) {
		t.Errorf("the data directory was created (err %v)", err)
	}
	dir, err := app.EnsureDataDir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir: %v, %v", fi.Mode(), err)
	}
}
