package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installHarness is a harness whose HOME is a temporary folder, so the
// hosts' user configs are the test's own.
func installHarness(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t)
	home := t.TempDir()
	h.env["HOME"] = home
	return h, home
}

func testBinary(t *testing.T) string {
	t.Helper()
	bin, err := thisBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// install, a second install, --list, uninstall and a second uninstall of
// one host, against a config with other servers in it.
func TestInstallCommand(t *testing.T) {
	t.Parallel()
	h, home := installHarness(t)
	bin := testBinary(t)
	path := filepath.Join(home, ".cursor", "mcp.json")
	orig, err := os.ReadFile(filepath.Join("..", "hosts", "testdata", "cursor.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, orig, 0o644)
	unchanged := func(what string) {
		t.Helper()
		if data, _ := os.ReadFile(path); string(data) != string(orig) {
			t.Fatalf("%s changed the file:\n%s", what, data)
		}
	}

	r := h.mustRun(0, "install", "cursor", "--dry-run")
	if !strings.Contains(r.stdout, "--- "+path+"\n+++ "+path+"\n") || !strings.Contains(r.stdout, `+            "command": "`+bin+`"`) || !strings.Contains(r.stdout, "Dry run: "+path+" not written.") {
		t.Errorf("dry run:\n%s", r)
	}
	unchanged("--dry-run")
	if _, err := os.Stat(path + ".mcpgate-backup"); !os.IsNotExist(err) {
		t.Error("--dry-run wrote a backup")
	}

	r = h.mustRun(0, "install", "cursor")
	if !strings.Contains(r.stdout, "Added mcpgate to Cursor ("+path+"): it runs "+bin+" serve.") ||
		!strings.Contains(r.stdout, "saved as "+path+".mcpgate-backup") || !strings.Contains(r.stdout, "mcpgate uninstall cursor") {
		t.Errorf("install:\n%s", r)
	}
	installed, _ := os.ReadFile(path)
	var doc struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
			URL     string
		}
		Note string `json:"x-team-note"`
	}
	if err := json.Unmarshal(installed, &doc); err != nil {
		t.Fatalf("installed file is not JSON: %v\n%s", err, installed)
	}
	if e := doc.MCPServers["mcpgate"]; e.Command != bin || len(e.Args) != 1 || e.Args[0] != "serve" || doc.MCPServers["linear"].URL == "" || doc.Note == "" {
		t.Errorf("installed:\n%s", installed)
	}

	r = h.mustRun(0, "install", "cursor")
	if !strings.Contains(r.stdout, "Cursor already runs mcpgate") || !strings.Contains(r.stdout, "nothing changed") {
		t.Errorf("second install:\n%s", r)
	}
	if data, _ := os.ReadFile(path); string(data) != string(installed) {
		t.Error("second install changed the file")
	}

	r = h.mustRun(0, "install", "--list")
	var cursorLine string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "cursor ") {
			cursorLine = line
		}
	}
	if f := strings.Fields(cursorLine); len(f) != 4 || f[1] != "yes" || f[2] != "yes" || f[3] != path {
		t.Errorf("--list cursor line %q:\n%s", cursorLine, r)
	}
	r = h.mustRun(0, "install", "--list", "--json")
	var list []hostJSON
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 16 {
		t.Fatalf("--list --json: %v\n%s", err, r)
	}
	for _, row := range list {
		switch row.ID {
		case "cursor":
			if !row.Found || !row.Wired || !row.Current || row.Stale || row.Path != path {
				t.Errorf("cursor: %+v", row)
			}
		case "claude-code":
			if row.Found || row.Wired || row.Path != filepath.Join(home, ".claude.json") {
				t.Errorf("claude-code: %+v", row)
			}
		}
	}

	r = h.mustRun(0, "uninstall", "cursor")
	if !strings.Contains(r.stdout, "Removed mcpgate from Cursor ("+path+"); it ran "+bin+" serve.") {
		t.Errorf("uninstall:\n%s", r)
	}
	unchanged("uninstall")
	r = h.mustRun(0, "uninstall", "cursor")
	if !strings.Contains(r.stdout, "no mcpgate entry") {
		t.Errorf("second uninstall:\n%s", r)
	}
	unchanged("a second uninstall")
}

// --list tells an entry that runs another binary from one that runs this
// one, and says when that binary is gone.
func TestInstallListFlagsAStaleEntry(t *testing.T) {
	t.Parallel()
	h, home := installHarness(t)
	path := filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"mcpServers": {"mcpgate": {"command": "/nonexistent/old/mcpgate", "args": ["serve"]}}}`), 0o600)
	r := h.mustRun(0, "install", "--list")
	if !strings.Contains(r.stdout, "stale: runs /nonexistent/old/mcpgate serve, which is gone (mcpgate install windsurf)") {
		t.Errorf("--list:\n%s", r)
	}
	r = h.mustRun(0, "install", "windsurf")
	if !strings.Contains(r.stdout, "Updated mcpgate in Windsurf ("+path+"): it ran /nonexistent/old/mcpgate serve, now "+testBinary(t)+" serve.") {
		t.Errorf("install over a stale entry:\n%s", r)
	}
}

// A host's file that is missing is created, with its folders.
func TestInstallCreatesTheHostsFile(t *testing.T) {
	t.Parallel()
	h, home := installHarness(t)
	h.mustRun(0, "install", "codex")
	data, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if err != nil || string(data) != "[mcp_servers.mcpgate]\ncommand = \""+testBinary(t)+"\"\nargs = [\"serve\"]\n" {
		t.Errorf("%v:\n%s", err, data)
	}
}

// --scope project writes the file in the working directory.
func TestInstallProjectScope(t *testing.T) {
	h, _ := installHarness(t)
	dir := t.TempDir()
	t.Chdir(dir)
	h.mustRun(0, "install", "vscode", "--scope", "project")
	data, err := os.ReadFile(filepath.Join(dir, ".vscode", "mcp.json"))
	if err != nil || !strings.Contains(string(data), `"servers"`) || !strings.Contains(string(data), `"type": "stdio"`) {
		t.Fatalf("%v:\n%s", err, data)
	}
	r := h.mustRun(0, "uninstall", "vscode", "--scope", "project", "--dry-run")
	if !strings.Contains(r.stdout, `-    "mcpgate": {`) {
		t.Errorf("uninstall --dry-run:\n%s", r)
	}
}

// Mistakes in the invocation are usage errors (exit 2) in mcpgate's own
// words, and write nothing.
func TestInstallUsageErrors(t *testing.T) {
	t.Parallel()
	h, home := installHarness(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"install", "cursr"}, `unknown host "cursr"; did you mean cursor?`},
		{[]string{"uninstall", "vs-code"}, "did you mean vscode?"},
		{[]string{"install", "cursor", "--scope", "global"}, "must be one of user, project"},
		{[]string{"install", "claude-desktop", "--scope", "project"}, "Claude Desktop has no project config; install it with --scope user"},
		{[]string{"install"}, "install needs a host (one of claude-code, claude-desktop,"},
		{[]string{"install", "--list", "cursor"}, `install --list takes no host (got "cursor")`},
		{[]string{"uninstall"}, "mcpgate uninstall takes 1 argument(s), got 0"},
		{[]string{"install", "cursor", "--json"}, "--json goes with --list"},
		{[]string{"install", "cursor", "zed"}, "mcpgate install takes 1 argument(s), got 2"},
	}
	for _, tc := range cases {
		r := h.run(tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "arg(s)") {
			t.Errorf("%v: want exit 2 and %q:\n%s", tc.args, tc.want, r)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("usage errors wrote %v", entries)
	}
}

// A host config that does not parse is named, with its line, and left as
// it is.
func TestInstallRefusesABrokenHostFile(t *testing.T) {
	t.Parallel()
	h, home := installHarness(t)
	path := filepath.Join(home, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	broken := "{\n  \"theme\": \"GitHub\"\n  \"mcpServers\": {}\n}\n"
	os.WriteFile(path, []byte(broken), 0o644)
	r := h.run("install", "gemini")
	if r.code != 1 || !strings.Contains(r.stderr, path+" line 3, column 3: not valid JSON") || strings.Contains(r.stderr, "hujson") {
		t.Errorf("broken file:\n%s", r)
	}
	if data, _ := os.ReadFile(path); string(data) != broken {
		t.Error("broken file changed")
	}
	if _, err := os.Stat(path + ".mcpgate-backup"); !os.IsNotExist(err) {
		t.Error("backup of a file that was not changed")
	}
	r = h.mustRun(0, "install", "--list")
	if !strings.Contains(r.stdout, "unreadable") || !strings.Contains(r.stdout, "gemini: "+path+" line 3") {
		t.Errorf("--list with a broken file:\n%s", r)
	}
}
