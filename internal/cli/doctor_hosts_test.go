package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/netpolicy/netpolicytest"
)

// writeHostFile writes content as host id's user config under h's HOME.
func writeHostFile(t *testing.T, h *harness, id, content string) string {
	t.Helper()
	path := hostPath(t, h, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Each state a host's config can be in is one check of the Hosts group,
// named by the host's ID, with the problem and the command that fixes it:
// a host runs this binary (ok), another one (warn), one that is gone
// (fail, and doctor exits 1), none (ok, naming install), or its file does
// not parse (warn, naming the file and the line).
func TestDoctorHosts(t *testing.T) {
	n := netpolicytest.New(t)
	bin := testBinary(t)
	other := filepath.Join(t.TempDir(), "mcpgate")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "old", "mcpgate")
	cursorRunning := func(cmd string) string {
		return `{"mcpServers": {"mcpgate": {"command": "` + cmd + `", "args": ["serve"]}, "linear": {"url": "https://mcp.linear.app/mcp"}}}`
	}
	tests := []struct {
		name   string
		host   string
		setup  func(t *testing.T, h *harness) string // returns the host file
		status checkStatus
		detail []string // each in the detail; PATH is the host's file
		fix    string
		code   int
	}{
		{"this binary", "cursor", func(t *testing.T, h *harness) string {
			path := writeHostFile(t, h, "cursor", hostFixtures["cursor"])
			h.mustRun(0, "install", "cursor")
			return path
		}, checkOK, []string{"Cursor (PATH) runs this mcpgate: " + bin + " serve"}, "", 0},
		{"another binary", "cursor", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "cursor", cursorRunning(other))
		}, checkWarn, []string{"runs another mcpgate: " + other + " serve", "this one is " + bin}, "mcpgate install cursor to run this one", 0},
		{"binary gone", "cursor", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "cursor", cursorRunning(gone))
		}, checkFail, []string{"runs " + gone + " serve, which no longer exists"}, "mcpgate install cursor (writes this binary, " + bin + ")", exitFail},
		{"token in the arguments", "cursor", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "cursor", `{"mcpServers": {"mcpgate": {"command": "`+other+`", "args": ["serve", "--header", "Authorization: Bearer ghp_s3cretS3cretS3cret0123456789"]}}}`)
		}, checkWarn, []string{"runs another mcpgate: " + other + " serve --header Authorization: [redacted]"}, "mcpgate install cursor to run this one", 0},
		{"goose binary gone", "goose", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "goose", "extensions:\n  mcpgate:\n    name: mcpgate\n    type: stdio\n    cmd: "+gone+"\n    args: [serve]\n")
		}, checkFail, []string{"goose (PATH) runs " + gone + " serve, which no longer exists"}, "mcpgate install goose (writes this binary, " + bin + ")", exitFail},
		{"not wired", "vscode", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "vscode", hostFixtures["vscode"])
		}, checkOK, []string{"VS Code (PATH) does not run mcpgate; to add it: mcpgate install vscode"}, "", 0},
		{"no config yet", "claude-code", func(t *testing.T, h *harness) string {
			dir := filepath.Join(h.env["HOME"], ".claude")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			return hostPath(t, h, "claude-code")
		}, checkOK, []string{"Claude Code is on this machine, without a config yet (PATH); to add mcpgate: mcpgate install claude-code"}, "", 0},
		{"JSON does not parse", "cursor", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "cursor", "{\n  \"mcpServers\": {\n    \"a\": {\"url\": \"https://a.example/mcp\",,}\n  }\n}\n")
		}, checkWarn, []string{"PATH does not parse as JSON at line 3", "Cursor cannot read its MCP servers"}, "edit PATH at line 3, column 42", 0},
		{"TOML does not parse", "codex", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "codex", "model = \"o3\"\n[mcp_servers.docs\nurl = \"https://d.example/mcp\"\n")
		}, checkWarn, []string{"PATH does not parse as TOML at line 2"}, "edit PATH at line 2, column 18", 0},
		{"servers not an object", "cursor", func(t *testing.T, h *harness) string {
			return writeHostFile(t, h, "cursor", `{"mcpServers": ["x"]}`)
		}, checkWarn, []string{"mcpServers is not an object"}, "check that PATH is readable by you and what Cursor expects in it", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			path := tt.setup(t, h)
			rep, r := doctorJSON(t, h, n)
			if r.code != tt.code || rep.OK != (tt.code == 0) {
				t.Errorf("want exit %d, got:\n%s", tt.code, r)
			}
			c, ok := rep.find(groupHosts, "", tt.host)
			if !ok {
				t.Fatalf("no hosts check for %s:\n%s", tt.host, r.stdout)
			}
			if c.Status != tt.status {
				t.Errorf("status %s, want %s: %s", c.Status, tt.status, c.Detail)
			}
			for _, d := range tt.detail {
				if d = strings.ReplaceAll(d, "PATH", path); !strings.Contains(c.Detail, d) {
					t.Errorf("detail %q lacks %q", c.Detail, d)
				}
			}
			if fix := strings.ReplaceAll(tt.fix, "PATH", path); c.Fix != fix {
				t.Errorf("fix %q, want %q", c.Fix, fix)
			}
			// Only the hosts on this machine have a check; the others
			// share one line.
			hostChecks := 0
			for _, f := range rep.Checks {
				if f.Group == groupHosts && f.Name != "others" {
					hostChecks++
				}
			}
			if others, _ := rep.find(groupHosts, "", "others"); hostChecks != 1 || !strings.HasPrefix(others.Detail, "not on this machine: ") ||
				strings.Contains(others.Detail, tt.host+",") || !strings.Contains(others.Detail, "windsurf") {
				t.Errorf("%d host checks; others: %q", hostChecks, others.Detail)
			}

			if strings.Contains(r.stdout, "s3cret") {
				t.Errorf("a token in the host's file was printed:\n%s", r.stdout)
			}
			r = runDoctorOver(h, n, nil)
			if strings.Contains(r.stdout, "s3cret") {
				t.Errorf("a token in the host's file was printed:\n%s", r.stdout)
			}
			want := "Hosts\n  " + string(tt.status)
			if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, " "+tt.host+": ") {
				t.Errorf("the text report lacks the host:\n%s", r.stdout)
			}
			if tt.fix != "" && !strings.Contains(r.stdout, "fix: "+strings.ReplaceAll(tt.fix, "PATH", path)) {
				t.Errorf("the text report lacks the fix:\n%s", r.stdout)
			}
		})
	}
}

// With no host on the machine, the Hosts group is one line, and doctor is
// not failed by it.
func TestDoctorNoHosts(t *testing.T) {
	n := netpolicytest.New(t)
	h := newHarness(t)
	rep, r := doctorJSON(t, h, n)
	if r.code != 0 {
		t.Fatalf("doctor:\n%s", r)
	}
	var hostChecks []finding
	for _, f := range rep.Checks {
		if f.Group == groupHosts {
			hostChecks = append(hostChecks, f)
		}
	}
	if len(hostChecks) != 1 || hostChecks[0].Name != "others" || hostChecks[0].Status != checkOK ||
		!strings.Contains(hostChecks[0].Detail, "claude-code, claude-desktop, cursor") {
		t.Errorf("hosts checks: %+v", hostChecks)
	}
}
