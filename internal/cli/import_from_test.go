package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/hosts"
)

// hostFixtures are host configs as each host writes them, with remote
// servers, entries mcpgate cannot take, and settings around them. linear
// is in Claude Code's and Cursor's (the same server); docs in VS Code's
// and Codex's (two different servers).
var hostFixtures = map[string]string{
	"claude-code": `{
  "numStartups": 3,
  "mcpServers": {
    "linear": {"type": "http", "url": "https://mcp.linear.app/mcp"},
    "notes": {"type": "stdio", "command": "npx", "args": ["-y", "@acme/notes-mcp"]},
    "events": {"type": "sse", "url": "https://events.example.com/sse"}
  },
  "projects": {"/home/ada/engine": {"mcpServers": {"sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"}}}}
}
`,
	"cursor": `{
  "mcpServers": {
    "linear": {"url": "https://mcp.linear.app/mcp"},
    "search": {"url": "https://search.example.com/mcp", "headers": {"Authorization": "Bearer ${env:SEARCH_TOKEN}"}},
    "git": {"command": "uvx", "args": ["mcp-server-git"]}
  }
}
`,
	"vscode": `// My servers.
{
	"servers": {
		"docs": {"type": "http", "url": "https://vscode-docs.example.com/mcp"},
		"gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${input:gh}"}},
		/* local */
		"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
	},
}
`,
	"codex": `model = "gpt-5-codex"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"

[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem"]
`,
	"goose": `# goose
GOOSE_PROVIDER: anthropic
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    type: builtin
  kb:
    enabled: false
    name: kb
    type: streamable_http
    uri: https://kb.example.com/mcp
`,
}

// hostPath is where host id keeps its user config under h's HOME.
func hostPath(t *testing.T, h *harness, id string) string {
	t.Helper()
	host, err := hosts.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	env := hosts.Env{GOOS: runtime.GOOS, Home: h.env["HOME"], Getenv: func(k string) string { return h.env[k] }}
	path, err := host.Path(env, hosts.ScopeUser)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// writeHostFixture writes host id's fixture where the host keeps it.
func writeHostFixture(t *testing.T, h *harness, id string) string {
	t.Helper()
	path := hostPath(t, h, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(hostFixtures[id]), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// importJSONOf runs import --json with args and decodes its output.
func importJSONOf(t *testing.T, h *harness, args ...string) importJSON {
	t.Helper()
	r := h.mustRun(0, append([]string{"import", "--json"}, args...)...)
	var rep importJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("import --json printed no JSON: %v\n%s", err, r)
	}
	return rep
}

func importedIDs(src importSourceJSON) []string {
	var ids []string
	for _, s := range src.Imported {
		ids = append(ids, s.ID)
	}
	return ids
}

// skipReasons maps each skipped entry to its reason.
func skipReasons(src importSourceJSON) map[string]string {
	out := make(map[string]string)
	for _, s := range src.Skipped {
		out[s.Name] = s.Reason
	}
	return out
}

// import --from HOST finds each host's file where install writes it,
// reads it in the host's format, brings in its remote servers and names
// every skip with its reason; the mcpgate entry install wrote is skipped
// as mcpgate itself.
func TestImportFromHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host     string
		allow    string
		imported []string
		skipped  map[string]string // name → a part of the reason
	}{
		{"claude-code", "", []string{"linear", "sentry"}, map[string]string{"notes": "local command", "events": "SSE"}},
		{"cursor", "SEARCH_TOKEN", []string{"linear", "search"}, map[string]string{"git": "local command"}},
		{"vscode", "", []string{"docs"}, map[string]string{"gh": "${input:", "fetch": "stdio"}},
		{"codex", "DOCS_TOKEN", []string{"docs"}, map[string]string{"fs": "local command"}},
		{"goose", "", []string{"kb"}, map[string]string{"developer": "builtin"}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			h, _ := installHarness(t)
			path := writeHostFixture(t, h, tt.host)
			h.mustRun(0, "install", tt.host)
			installed, _ := os.ReadFile(path)

			args := []string{"--from", tt.host}
			if tt.allow != "" {
				args = append(args, "--allow-env", tt.allow)
			}
			rep := importJSONOf(t, h, args...)
			if len(rep.Sources) != 1 || !rep.Changed || rep.Config != h.cfg {
				t.Fatalf("report: %+v", rep)
			}
			src := rep.Sources[0]
			if src.Host != tt.host || src.File != path || src.Format != tt.host {
				t.Errorf("source: host %q file %q format %q; want %s %s", src.Host, src.File, src.Format, tt.host, path)
			}
			if got := importedIDs(src); !slices.Equal(got, tt.imported) {
				t.Errorf("imported %v, want %v", got, tt.imported)
			}
			reasons := skipReasons(src)
			if len(reasons) != len(tt.skipped)+1 {
				t.Errorf("skipped %v, want %v and mcpgate", reasons, tt.skipped)
			}
			for name, want := range tt.skipped {
				if !strings.Contains(reasons[name], want) {
					t.Errorf("skip of %s: %q, want it to say %q", name, reasons[name], want)
				}
			}
			if reasons["mcpgate"] != "this is mcpgate itself" {
				t.Errorf("the installed entry's skip: %q", reasons["mcpgate"])
			}
			cfg := string(h.configBytes())
			for _, id := range tt.imported {
				if !strings.Contains(cfg, `"`+id+`"`) {
					t.Errorf("%s is not in the config:\n%s", id, cfg)
				}
			}
			if strings.Contains(cfg, `"mcpgate"`) {
				t.Errorf("mcpgate itself was imported:\n%s", cfg)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, installed) {
				t.Error("import changed the host's file")
			}

			// The text output names the host's file and every skip.
			h2, _ := installHarness(t)
			h2.env["HOME"] = h.env["HOME"]
			r := h2.mustRun(0, append([]string{"import"}, args...)...)
			host, _ := hosts.Lookup(tt.host)
			for _, want := range []string{"Read " + host.Name + "'s config " + path, "mcpgate: this is mcpgate itself"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, r.stdout)
				}
			}
			for name := range tt.skipped {
				if !strings.Contains(r.stdout, "  "+name+": ") {
					t.Errorf("output does not name the skip of %s:\n%s", name, r.stdout)
				}
			}
		})
	}
}

// goose's kb is disabled there, and imported disabled; Codex's
// bearer_token_env_var is a header named in JSON, its value never.
func TestImportJSONShape(t *testing.T) {
	t.Parallel()
	h, _ := installHarness(t)
	writeHostFixture(t, h, "goose")
	rep := importJSONOf(t, h, "--from", "goose")
	if kb := rep.Sources[0].Imported; len(kb) != 1 || kb[0].Enabled || kb[0].URL != "https://kb.example.com/mcp" || kb[0].Auth != "none" ||
		kb[0].Headers == nil || len(kb[0].Headers) != 0 {
		t.Errorf("goose kb: %+v", kb)
	}

	file := writeFile(t, "config.toml", hostFixtures["codex"])
	h.env["DOCS_TOKEN"] = "docs-s3cret-value"
	r := h.mustRun(0, "import", file, "--allow-env", "DOCS_TOKEN", "--json")
	if strings.Contains(r.stdout, "s3cret") || strings.Contains(r.stdout, "Bearer") {
		t.Errorf("a header value is in the JSON:\n%s", r.stdout)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	src := raw["sources"].([]any)[0].(map[string]any)
	if src["file"] != file || src["format"] != "codex" || src["detected"] != "TOML with [mcp_servers] tables" || src["host"] != nil {
		t.Errorf("source: %v", src)
	}
	docs := src["imported"].([]any)[0].(map[string]any)
	want := map[string]any{"id": "docs", "url": "https://docs.example.com/mcp", "enabled": true, "auth": "none",
		"headers": []any{"Authorization"}, "env": []any{"DOCS_TOKEN"}}
	for k, v := range want {
		if got, _ := json.Marshal(docs[k]); string(got) != mustJSON(t, v) {
			t.Errorf("imported docs %s = %s, want %s", k, got, mustJSON(t, v))
		}
	}
	skipped := src["skipped"].([]any)
	if len(skipped) != 1 || skipped[0].(map[string]any)["name"] != "fs" || !strings.Contains(skipped[0].(map[string]any)["reason"].(string), "local command") {
		t.Errorf("skipped: %v", skipped)
	}
	if notes, ok := src["notes"].([]any); !ok || len(notes) != 0 {
		t.Errorf("notes: %v", src["notes"])
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// import --from all reads every host found, reports each under its name,
// and skips a server a host before it brought: the same one, or a
// different one by that name. A variable only a skipped server reads
// need not be allowed.
func TestImportFromAll(t *testing.T) {
	t.Parallel()
	h, _ := installHarness(t)
	for id := range hostFixtures {
		writeHostFixture(t, h, id)
	}
	h.mustRun(0, "install", "cursor")
	rep := importJSONOf(t, h, "--from", "all", "--allow-env", "SEARCH_TOKEN")
	var order []string
	for _, s := range rep.Sources {
		order = append(order, s.Host)
	}
	if want := []string{"claude-code", "cursor", "vscode", "codex", "goose"}; !slices.Equal(order, want) {
		t.Fatalf("sources %v, want %v", order, want)
	}
	byHost := func(id string) importSourceJSON { return rep.Sources[slices.Index(order, id)] }
	if got := importedIDs(byHost("cursor")); !slices.Equal(got, []string{"search"}) {
		t.Errorf("cursor imported %v", got)
	}
	if r := skipReasons(byHost("cursor")); r["linear"] != `the same server as Claude Code's "linear", imported from there` || r["mcpgate"] != selfReason || !strings.Contains(r["git"], "local command") {
		t.Errorf("cursor skipped %v", r)
	}
	if got := importedIDs(byHost("codex")); len(got) != 0 {
		t.Errorf("codex imported %v", got)
	}
	if r := skipReasons(byHost("codex"))["docs"]; !strings.Contains(r, `"docs" is already taken by VS Code's, a different server (https://vscode-docs.example.com/mcp)`) ||
		!strings.Contains(r, "mcpgate add NAME https://docs.example.com/mcp") {
		t.Errorf("codex docs skipped: %q", r)
	}
	var cfg struct {
		MCPServers map[string]struct{ URL string } `json:"mcpServers"`
	}
	if err := json.Unmarshal(h.configBytes(), &cfg); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range cfg.MCPServers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if want := []string{"docs", "kb", "linear", "search", "sentry"}; !slices.Equal(ids, want) || cfg.MCPServers["docs"].URL != "https://vscode-docs.example.com/mcp" {
		t.Errorf("configured %v (docs %q), want %v", ids, cfg.MCPServers["docs"].URL, want)
	}

	// The text output: each host under its name, then the total.
	h2 := newHarness(t)
	h2.env["HOME"] = h.env["HOME"]
	r := h2.mustRun(0, "import", "--from", "all", "--allow-env", "SEARCH_TOKEN")
	for _, want := range []string{
		"Claude Code (" + hostPath(t, h, "claude-code") + "):\n",
		"goose (" + hostPath(t, h, "goose") + "):\n",
		"  skipped mcpgate: this is mcpgate itself\n",
		`  skipped linear: the same server as Claude Code's "linear"`,
		"Imported 5 servers from 5 hosts into " + h2.cfg + ".\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// Mistakes with --from are errors naming what is wrong, and change
// nothing: a host whose file is not there names the paths looked at (exit
// 1), an unknown host the closest IDs (exit 2).
func TestImportFromErrors(t *testing.T) {
	t.Parallel()
	h, home := installHarness(t)
	h.mustRun(0, "add", "keep", "https://keep.example.com/mcp")
	before := h.configBytes()
	writeHostFixture(t, h, "cursor")
	brokenZed := hostPath(t, h, "zed")
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing file", []string{"--from", "windsurf"}, exitFail, []string{"Windsurf's user config was not found: looked at " + filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")}},
		{"missing project file", []string{"--from", "cursor", "--scope", "project"}, exitFail, []string{"Cursor's project config was not found: looked at ", filepath.Join(".cursor", "mcp.json")}},
		{"unknown host", []string{"--from", "cursr"}, exitUsage, []string{`unknown host "cursr"; did you mean cursor?`}},
		{"empty host", []string{"--from", ""}, exitUsage, []string{"--from needs a host"}},
		{"no project scope", []string{"--from", "windsurf", "--scope", "project"}, exitUsage, []string{"Windsurf has no project config"}},
		{"bad scope", []string{"--from", "cursor", "--scope", "team"}, exitUsage, []string{"--scope"}},
		{"format disagrees", []string{"--from", "cursor", "--format", "vscode"}, exitUsage, []string{"--format vscode disagrees with --from cursor"}},
		{"format with all", []string{"--from", "all", "--format", "cursor"}, exitUsage, []string{"--format cannot go with --from all"}},
		{"file and from", []string{"x.json", "--from", "cursor"}, exitUsage, []string{"FILE or --from HOST, not both"}},
		{"scope without from", []string{"x.json", "--scope", "project"}, exitUsage, []string{"--scope goes with --from"}},
		{"nothing", nil, exitUsage, []string{"import needs a FILE", "--from HOST"}},
		{"unallowed variable", []string{"--from", "cursor"}, exitUsage, []string{"SEARCH_TOKEN", "--allow-env"}},
		{"broken host file stops all", []string{"--from", "all", "--allow-env", "SEARCH_TOKEN"}, exitUsage, []string{brokenZed, "2:23: malformed JSON", "nothing was imported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "broken host file stops all" {
				os.MkdirAll(filepath.Dir(brokenZed), 0o700)
				os.WriteFile(brokenZed, []byte("{\n  \"context_servers\": {\n"), 0o600)
			}
			r := h.run(append([]string{"import"}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("want exit %d, got:\n%s", tt.code, r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r)
				}
			}
			if strings.Contains(r.stderr, "requires") || strings.Contains(r.stderr, "hujson") {
				t.Errorf("a library message leaked:\n%s", r.stderr)
			}
			if !bytes.Equal(h.configBytes(), before) {
				t.Errorf("config changed:\n%s", h.configBytes())
			}
		})
	}
}

// A host's file with no MCP servers in it (a settings file before any
// was added, or an empty one) has nothing to import, which is no error.
func TestImportFromHostWithoutServers(t *testing.T) {
	t.Parallel()
	h, _ := installHarness(t)
	path := hostPath(t, h, "zed")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("// Zed settings\n{\"vim_mode\": true}\n"), 0o600)
	r := h.mustRun(0, "import", "--from", "zed")
	if !strings.Contains(r.stdout, "Nothing to import from "+path+" (zed format)") {
		t.Errorf("import --from zed:\n%s", r)
	}
	os.WriteFile(path, nil, 0o600)
	if rep := importJSONOf(t, h, "--from", "all"); len(rep.Sources) != 1 || rep.Changed || len(rep.Sources[0].Imported) != 0 {
		t.Errorf("--from all of an empty file: %+v", rep)
	}
	if h.configBytes() != nil {
		t.Errorf("the config was written:\n%s", h.configBytes())
	}
}

// Every host's ID is an import format, so --from reads each host in its
// own dialect.
func TestEveryHostIsAnImportFormat(t *testing.T) {
	t.Parallel()
	for _, id := range hosts.IDs() {
		if f, err := config.ParseFormat(id); err != nil || string(f) != id {
			t.Errorf("host %s: format %q, %v", id, f, err)
		}
	}
}

// Importing a host's file by name also skips the entry install wrote as
// mcpgate itself, in the format the file is detected as.
func TestImportFileSkipsMcpgateItself(t *testing.T) {
	t.Parallel()
	h, _ := installHarness(t)
	for _, id := range []string{"cursor", "codex"} {
		path := writeHostFixture(t, h, id)
		h.mustRun(0, "install", id)
		rep := importJSONOf(t, h, path, "--allow-env", "SEARCH_TOKEN,DOCS_TOKEN", "--replace")
		if r := skipReasons(rep.Sources[0]); r["mcpgate"] != selfReason {
			t.Errorf("%s: skipped %v", id, r)
		}
	}
}
