package hosts_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate/internal/hosts"
)

// Each host's documented user-scope file on each OS, computed on whatever
// OS the test runs on: the OS, the home directory and the environment are
// all passed in.
func TestUserPathsPerOS(t *testing.T) {
	darwin := hosts.Env{GOOS: "darwin", Home: "/Users/ada", Getenv: func(string) string { return "" }}
	linux := hosts.Env{GOOS: "linux", Home: "/home/ada", Getenv: func(string) string { return "" }}
	xdg := hosts.Env{GOOS: "linux", Home: "/home/ada", Getenv: func(k string) string {
		return map[string]string{"XDG_CONFIG_HOME": "/home/ada/.xdg", "CODEX_HOME": "/srv/codex"}[k]
	}}
	windows := hosts.Env{GOOS: "windows", Home: `C:\Users\ada`, Getenv: func(k string) string {
		return map[string]string{"APPDATA": `C:\Users\ada\AppData\Roaming`}[k]
	}}
	cases := []struct {
		host string
		env  hosts.Env
		want string
	}{
		{"claude-code", darwin, "/Users/ada/.claude.json"},
		{"claude-code", windows, `C:\Users\ada\.claude.json`},
		{"claude-desktop", darwin, "/Users/ada/Library/Application Support/Claude/claude_desktop_config.json"},
		{"claude-desktop", windows, `C:\Users\ada\AppData\Roaming\Claude\claude_desktop_config.json`},
		{"claude-desktop", linux, "/home/ada/.config/Claude/claude_desktop_config.json"},
		{"cursor", windows, `C:\Users\ada\.cursor\mcp.json`},
		{"cursor", linux, "/home/ada/.cursor/mcp.json"},
		{"vscode", darwin, "/Users/ada/Library/Application Support/Code/User/mcp.json"},
		{"vscode", windows, `C:\Users\ada\AppData\Roaming\Code\User\mcp.json`},
		{"vscode", linux, "/home/ada/.config/Code/User/mcp.json"},
		{"vscode", xdg, "/home/ada/.xdg/Code/User/mcp.json"},
		{"windsurf", darwin, "/Users/ada/.codeium/windsurf/mcp_config.json"},
		{"windsurf", windows, `C:\Users\ada\.codeium\windsurf\mcp_config.json`},
		{"zed", darwin, "/Users/ada/.config/zed/settings.json"},
		{"zed", linux, "/home/ada/.config/zed/settings.json"},
		{"zed", xdg, "/home/ada/.xdg/zed/settings.json"},
		{"zed", windows, `C:\Users\ada\AppData\Roaming\Zed\settings.json`},
		{"codex", darwin, "/Users/ada/.codex/config.toml"},
		{"codex", windows, `C:\Users\ada\.codex\config.toml`},
		{"codex", xdg, "/srv/codex/config.toml"},
		{"gemini", linux, "/home/ada/.gemini/settings.json"},
		{"gemini", windows, `C:\Users\ada\.gemini\settings.json`},
		{"cline", darwin, "/Users/ada/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"},
		{"cline", windows, `C:\Users\ada\AppData\Roaming\Code\User\globalStorage\saoudrizwan.claude-dev\settings\cline_mcp_settings.json`},
		{"cline", linux, "/home/ada/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"},
		{"continue", windows, `C:\Users\ada\.continue\config.yaml`},
		{"continue", darwin, "/Users/ada/.continue/config.yaml"},
		{"goose", darwin, "/Users/ada/.config/goose/config.yaml"},
		{"goose", xdg, "/home/ada/.xdg/goose/config.yaml"},
		{"goose", windows, `C:\Users\ada\AppData\Roaming\Block\goose\config\config.yaml`},
		{"opencode", darwin, "/Users/ada/.config/opencode/opencode.json"},
		{"opencode", windows, `C:\Users\ada\.config\opencode\opencode.json`},
		{"lmstudio", windows, `C:\Users\ada\.lmstudio\mcp.json`},
		{"lmstudio", darwin, "/Users/ada/.lmstudio/mcp.json"},
		{"roo", linux, "/home/ada/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"},
		{"roo", windows, `C:\Users\ada\AppData\Roaming\Code\User\globalStorage\rooveterinaryinc.roo-cline\settings\mcp_settings.json`},
		{"amazonq", darwin, "/Users/ada/.aws/amazonq/mcp.json"},
		{"amazonq", windows, `C:\Users\ada\.aws\amazonq\mcp.json`},
		{"kiro", linux, "/home/ada/.kiro/settings/mcp.json"},
		{"kiro", windows, `C:\Users\ada\.kiro\settings\mcp.json`},
	}
	for _, tc := range cases {
		h, err := hosts.Lookup(tc.host)
		if err != nil {
			t.Fatal(err)
		}
		paths, err := h.Paths(tc.env, hosts.ScopeUser)
		if err != nil || paths[0] != tc.want {
			t.Errorf("%s on %s: %q, %v; want %s", tc.host, tc.env.GOOS, paths, err, tc.want)
		}
	}
}

// APPDATA unset on Windows falls back to the roaming folder under the home
// directory; a relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
func TestPathFallbacks(t *testing.T) {
	h, _ := hosts.Lookup("claude-desktop")
	paths, _ := h.Paths(hosts.Env{GOOS: "windows", Home: `C:\Users\ada`}, hosts.ScopeUser)
	if want := `C:\Users\ada\AppData\Roaming\Claude\claude_desktop_config.json`; paths[0] != want {
		t.Errorf("got %s, want %s", paths[0], want)
	}
	zed, _ := hosts.Lookup("zed")
	rel := hosts.Env{GOOS: "linux", Home: "/home/ada", Getenv: func(string) string { return "relative/dir" }}
	if paths, _ := zed.Paths(rel, hosts.ScopeUser); paths[0] != "/home/ada/.config/zed/settings.json" {
		t.Errorf("relative XDG_CONFIG_HOME used: %s", paths[0])
	}
}

// Project-scope files are in the project; hosts without one say so.
func TestProjectPaths(t *testing.T) {
	env := hosts.Env{GOOS: "linux", Home: "/home/ada", Dir: "/home/ada/src/app"}
	want := map[string]string{
		"claude-code": "/home/ada/src/app/.mcp.json",
		"cursor":      "/home/ada/src/app/.cursor/mcp.json",
		"vscode":      "/home/ada/src/app/.vscode/mcp.json",
		"zed":         "/home/ada/src/app/.zed/settings.json",
		"codex":       "/home/ada/src/app/.codex/config.toml",
		"gemini":      "/home/ada/src/app/.gemini/settings.json",
		"continue":    "/home/ada/src/app/.continue/mcpServers/mcpgate.yaml",
		"opencode":    "/home/ada/src/app/opencode.json",
		"roo":         "/home/ada/src/app/.roo/mcp.json",
		"amazonq":     "/home/ada/src/app/.amazonq/mcp.json",
		"kiro":        "/home/ada/src/app/.kiro/settings/mcp.json",
	}
	for _, h := range hosts.All() {
		paths, err := h.Paths(env, hosts.ScopeProject)
		w, ok := want[h.ID]
		switch {
		case ok && (err != nil || paths[0] != w):
			t.Errorf("%s: %q, %v; want %s", h.ID, paths, err, w)
		case !ok && !errors.Is(err, hosts.ErrNoScope):
			t.Errorf("%s: project scope %q, %v; want ErrNoScope", h.ID, paths, err)
		}
		if ok != slices.Contains(h.Scopes(), hosts.ScopeProject) {
			t.Errorf("%s: Scopes %v", h.ID, h.Scopes())
		}
	}
	win := hosts.Env{GOOS: "windows", Home: `C:\Users\ada`, Dir: `C:\src\app`}
	cursor, _ := hosts.Lookup("cursor")
	if paths, _ := cursor.Paths(win, hosts.ScopeProject); paths[0] != `C:\src\app\.cursor\mcp.json` {
		t.Errorf("windows project path %s", paths[0])
	}
}

// opencode reads opencode.json or opencode.jsonc: Path picks the one
// that exists.
func TestPathPrefersTheFileThatExists(t *testing.T) {
	dir := t.TempDir()
	env := hosts.Env{GOOS: "linux", Home: dir, Dir: dir}
	h, _ := hosts.Lookup("opencode")
	if p, _ := h.Path(env, hosts.ScopeProject); p != filepath.Join(dir, "opencode.json") {
		t.Errorf("with neither: %s", p)
	}
	os.WriteFile(filepath.Join(dir, "opencode.jsonc"), []byte("{}"), 0o600)
	if p, _ := h.Path(env, hosts.ScopeProject); p != filepath.Join(dir, "opencode.jsonc") {
		t.Errorf("with opencode.jsonc: %s", p)
	}
}

// A host is found when its config or its folder exists; the home
// directory alone (where ~/.claude.json would be) does not count.
func TestFound(t *testing.T) {
	dir := t.TempDir()
	env := hosts.Env{GOOS: "linux", Home: dir, Getenv: func(string) string { return "" }}
	cc, _ := hosts.Lookup("claude-code")
	cursor, _ := hosts.Lookup("cursor")
	if cc.Found(env) || cursor.Found(env) {
		t.Fatal("found in an empty home")
	}
	os.Mkdir(filepath.Join(dir, ".cursor"), 0o700)
	os.Mkdir(filepath.Join(dir, ".claude"), 0o700)
	if !cc.Found(env) || !cursor.Found(env) {
		t.Error("not found with their folders")
	}
}

// A Windows path (backslashes, a space) survives every format's quoting.
func TestInstallQuotesAWindowsPath(t *testing.T) {
	const winBin = `C:\Program Files\mcpgate\mcpgate.exe`
	for _, h := range hosts.All() {
		name, orig := fixture(t, h)
		path := filepath.Join(t.TempDir(), name)
		os.WriteFile(path, orig, 0o644)
		c, err := hosts.Install(h, path, winBin)
		if err != nil {
			t.Fatalf("%s: %v", h.ID, err)
		}
		if got := argv(t, h, parse(t, h.Format, c.After)); !slices.Equal(got, []string{winBin, "serve"}) {
			t.Errorf("%s: entry runs %q:\n%s", h.ID, got, c.After)
		}
	}
}
