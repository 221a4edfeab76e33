package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

// remote is an imported server as most entries come out: auth none,
// enabled, no headers.
func remote(id, url string) mcpgate.ServerConfig {
	return mcpgate.ServerConfig{ID: id, URL: url, Auth: mcpgate.AuthNone, Enabled: true}
}

func withHeaders(s mcpgate.ServerConfig, kv ...string) mcpgate.ServerConfig {
	s.Headers = make(map[string]string)
	for i := 0; i+1 < len(kv); i += 2 {
		s.Headers[kv[i]] = kv[i+1]
	}
	return s
}

func disabled(s mcpgate.ServerConfig, tools ...string) mcpgate.ServerConfig {
	s.Enabled = false
	s.DisabledTools = tools
	return s
}

const (
	localReason = "runs the local command"
	sseReason   = "the legacy HTTP+SSE transport is not supported"
)

// TestImportDialects reads each host's fixture, written in that host's
// documented format with comments where it allows them and fields mcpgate
// does not know, and checks exactly which servers come in and which
// entries are skipped, and why. Each fixture is read with its --format and
// again detected; a host whose shape is shared must read the same either
// way.
func TestImportDialects(t *testing.T) {
	tests := []struct {
		file     string
		format   config.Format
		detected config.Format // what auto-detection reads the file as
		servers  []mcpgate.ServerConfig
		skipped  []config.Skipped
		notes    []string // "server: part of the note"
	}{
		{
			file: "claude-code.json", format: config.FormatClaudeCode, detected: config.FormatClaudeCode,
			servers: []mcpgate.ServerConfig{
				withHeaders(remote("internal", "https://api.corp.example/mcp"), "Authorization", "Bearer ${API_TOKEN}"),
				remote("linear", "https://mcp.linear.app/mcp"),
				remote("notion", "https://mcp.notion.com/mcp"),
				remote("sentry", "https://mcp.sentry.dev/mcp"),
			},
			skipped: []config.Skipped{
				{"broken", "no url"},
				{"github", localReason + ` "npx @modelcontextprotocol/server-github"`},
				{"helper", "headersHelper runs a command"},
				{"legacy", sseReason},
			},
		},
		{
			file: "claude-desktop.json", format: config.FormatClaudeDesktop, detected: config.FormatClaudeCode,
			servers: []mcpgate.ServerConfig{
				withHeaders(remote("atlassian", "https://mcp.atlassian.com/v1/mcp"), "Authorization", "Bearer ${ATLASSIAN_TOKEN}"),
			},
			skipped: []config.Skipped{
				{"filesystem", localReason},
				{"no-url", "mcp-remote: no http(s) URL argument"},
				{"sse-only", sseReason},
			},
			notes: []string{`atlassian: reads ${ATLASSIAN_TOKEN}, which the source set in the entry's "env"`},
		},
		{
			file: "cursor.json", format: config.FormatCursor, detected: config.FormatClaudeCode,
			servers: []mcpgate.ServerConfig{
				withHeaders(mcpgate.ServerConfig{ID: "context7", Name: "Context7", URL: "https://mcp.context7.com/mcp", Auth: mcpgate.AuthNone, Enabled: true},
					"CONTEXT7_API_KEY", "${env:CONTEXT7_API_KEY}"),
				remote("local-dev", "http://localhost:3000/mcp"),
			},
			skipped: []config.Skipped{
				{"plain-http", "http is only allowed for loopback hosts"},
				{"playwright", localReason},
				{"ws-folder", "${workspaceFolder}, an editor variable"},
			},
		},
		{
			file: "vscode.json", format: config.FormatVSCode, detected: config.FormatVSCode,
			servers: []mcpgate.ServerConfig{
				withHeaders(remote("docs", "https://docs.example/mcp"), "X-Api-Key", "${env:DOCS_KEY}"),
			},
			skipped: []config.Skipped{
				{"fs", localReason},
				{"github", "${input:...}, a VS Code prompt"},
				{"old", sseReason},
			},
		},
		{
			file: "windsurf.json", format: config.FormatWindsurf, detected: config.FormatWindsurf,
			servers: []mcpgate.ServerConfig{
				disabled(remote("figma", "https://mcp.figma.com/mcp"), "delete_file"),
				withHeaders(remote("github", "https://api.githubcopilot.com/mcp/"), "Authorization", "Bearer ${env:GITHUB_TOKEN}"),
			},
			skipped: []config.Skipped{
				{"brave", localReason},
				{"typo", "no url"},
			},
		},
		{
			file: "zed.json", format: config.FormatZed, detected: config.FormatZed,
			servers: []mcpgate.ServerConfig{
				remote("linear", "https://mcp.linear.app/mcp"),
				remote("notion", "https://mcp.notion.com/mcp"), // the older {"path", "args"} command, running mcp-remote
				disabled(remote("paused", "https://paused.example/mcp")),
				withHeaders(remote("remote", "https://mcp.example.com/mcp"), "Authorization", "Bearer ${ZED_MCP_TOKEN}"),
			},
			skipped: []config.Skipped{
				{"local", localReason + ` "some-command arg-1"`},
				{"mcp-server-github", "a Zed extension's server"},
			},
		},
		{
			file: "codex.toml", format: config.FormatCodex, detected: config.FormatCodex,
			servers: []mcpgate.ServerConfig{
				remote("atlassian", "https://mcp.atlassian.com/v1/mcp"),
				remote("docs", "https://developers.openai.com/mcp"),
				disabled(remote("figma", "https://mcp.figma.com/mcp"), "delete_file"),
				withHeaders(remote("github", "https://api.githubcopilot.com/mcp/"),
					"Authorization", "Bearer ${GITHUB_PAT}", "X-Api-Key", "${GITHUB_API_KEY}", "X-Org", "acme"),
			},
			skipped: []config.Skipped{
				{"bad-env", "bearer_token_env_var: must name an environment variable"},
				{"context7", localReason},
				{"inline", "bearer_token: a token written in the file"},
				{"pinned", "issuer: required"}, // a client ID names no authorization server
			},
			notes: []string{
				`docs: "headers" is not a Codex field`,
				"github: enabled_tools: Codex offers only the tools it lists",
			},
		},
		{
			file: "gemini.json", format: config.FormatGemini, detected: config.FormatGemini,
			servers: []mcpgate.ServerConfig{
				{ID: "github", URL: "https://api.githubcopilot.com/mcp/", Auth: mcpgate.AuthNone, Enabled: true,
					Headers: map[string]string{"Authorization": "Bearer ${GITHUB_PAT}"}, DisabledTools: []string{"delete_repo"}},
				{ID: "signin", URL: "https://signin.example/mcp", Auth: mcpgate.AuthOAuth, Enabled: true, Scopes: []string{"read"}},
				remote("typed", "https://typed.example/mcp"),
			},
			skipped: []config.Skipped{
				{"events", sseReason}, // Gemini CLI's url is SSE
				{"gcp", `authProviderType "google_credentials"`},
				{"python", localReason},
			},
			notes: []string{"signin: includeTools: Gemini CLI offers only the tools it lists"},
		},
		{
			file: "cline.json", format: config.FormatCline, detected: config.FormatCline,
			servers: []mcpgate.ServerConfig{
				disabled(remote("off", "https://off.example/mcp")),
				withHeaders(remote("remote", "https://mcp.example.com/mcp"), "Authorization", "Bearer ${CLINE_TOKEN}"),
			},
			skipped: []config.Skipped{
				{"legacy", sseReason}, // Cline's url without a type is SSE
				{"local", localReason},
			},
		},
		{
			file: "continue.yaml", format: config.FormatContinue, detected: config.FormatContinue,
			servers: []mcpgate.ServerConfig{
				withHeaders(mcpgate.ServerConfig{ID: "remote-docs", Name: "Remote Docs", URL: "https://docs.example.com/mcp", Auth: mcpgate.AuthNone, Enabled: true},
					"X-Team", "platform"),
			},
			skipped: []config.Skipped{
				{"SQLite", localReason},
				{"anthropic/memory-mcp", "a Continue Hub block"},
				{"events", sseReason},
				{"mcpServers[5]", `no "name"`},
				{"secret-ref", "Continue secret or input"},
				{"twice", "given to 2 entries"},
				{"twice", "given to 2 entries"},
			},
		},
		{
			file: "continue-block.yaml", format: config.FormatContinue, detected: config.FormatContinue,
			servers: []mcpgate.ServerConfig{remote("linear", "https://mcp.linear.app/mcp")},
			skipped: []config.Skipped{{"Browser search", localReason}},
		},
		{
			file: "goose.yaml", format: config.FormatGoose, detected: config.FormatGoose,
			servers: []mcpgate.ServerConfig{
				disabled(remote("figma", "https://mcp.figma.com/mcp")),
				withHeaders(remote("github", "https://api.githubcopilot.com/mcp/"), "Authorization", "Bearer ${GITHUB_TOKEN}"),
			},
			skipped: []config.Skipped{
				{"computercontroller", "type platform: part of goose itself"},
				{"developer", "type builtin: part of goose itself"},
				{"fetch", localReason + ` "uvx mcp-server-fetch"`},
				{"old-sse", sseReason},
			},
			notes: []string{"figma: available_tools"},
		},
		{
			file: "opencode.jsonc", format: config.FormatOpencode, detected: config.FormatOpencode,
			servers: []mcpgate.ServerConfig{
				withHeaders(remote("context7", "https://mcp.context7.com/mcp"), "CONTEXT7_API_KEY", "${CONTEXT7_API_KEY}"),
				remote("notion", "https://mcp.notion.com/mcp"),
				disabled(remote("off", "https://off.example/mcp")),
				{ID: "sentry", URL: "https://mcp.sentry.dev/mcp", Auth: mcpgate.AuthOAuth, Enabled: true},
			},
			skipped: []config.Skipped{
				{"file-key", "reads a file ({file:...})"},
				{"jira", "oauth.clientSecret"},
				{"local-tools", localReason + ` "bun x"`},
			},
		},
		{
			file: "lmstudio.json", format: config.FormatLMStudio, detected: config.FormatClaudeCode,
			servers: []mcpgate.ServerConfig{
				withHeaders(remote("hf-mcp-server", "https://huggingface.co/mcp"), "Authorization", "Bearer ${HF_TOKEN}"),
			},
			skipped: []config.Skipped{
				{"bad-url", `server "bad-url": url:`},
				{"time", localReason},
			},
		},
		{
			file: "roo.json", format: config.FormatRoo, detected: config.FormatClaudeCode,
			servers: []mcpgate.ServerConfig{
				withHeaders(remote("remote", "https://roo.example.com/mcp"), "X-API-Key", "${env:ROO_KEY}"),
			},
			skipped: []config.Skipped{
				{"events", sseReason},
				{"local", localReason},
				{"ws", `type "websocket": not a transport mcpgate supports`},
			},
		},
		{
			file: "amazonq.json", format: config.FormatAmazonQ, detected: config.FormatClaudeCode,
			servers: []mcpgate.ServerConfig{
				remote("atlassian", "https://mcp.atlassian.com/v1/mcp"),
				withHeaders(remote("github", "https://api.githubcopilot.com/mcp/"), "Authorization", "Bearer ${GITHUB_PAT}"),
				disabled(remote("off", "https://off.example/mcp")),
			},
			skipped: []config.Skipped{{"aws-docs", localReason}},
		},
		{
			file: "kiro.json", format: config.FormatKiro, detected: config.FormatClaudeCode,
			servers: []mcpgate.ServerConfig{
				withHeaders(remote("proxied", "https://p.example/mcp"), "X-Key", "${P_KEY}"),
				{ID: "remote", URL: "https://kiro.example.com/mcp", Auth: mcpgate.AuthNone, Enabled: true,
					Headers: map[string]string{"Authorization": "Bearer ${KIRO_TOKEN}"}, DisabledTools: []string{"write"}},
			},
			skipped: []config.Skipped{
				{"fetch", localReason},
				{"list", "not a server entry: must be a JSON object"},
			},
		},
	}
	covered := map[config.Format]bool{config.FormatAuto: true}
	for _, tt := range tests {
		covered[tt.format] = true
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "import", tt.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := config.ParseImportFile(path, data, tt.format)
			if err != nil {
				t.Fatalf("ParseImportFile(--format %s): %v", tt.format, err)
			}
			if res.Format != tt.format {
				t.Errorf("Format = %q, want %q", res.Format, tt.format)
			}
			checkResult(t, res, tt.servers, tt.skipped)
			checkNotes(t, res, tt.notes)
			for _, text := range resultTexts(res) {
				if strings.Contains(text, "fixture-secret") || strings.Contains(text, "ghp_fixture") {
					t.Errorf("a secret from the file leaked into the result: %q", text)
				}
			}

			auto, err := config.ParseImportFile(path, data, config.FormatAuto)
			if err != nil {
				t.Fatalf("ParseImportFile(auto): %v", err)
			}
			if auto.Format != tt.detected || auto.Detected == "" {
				t.Errorf("detected %q (%q), want %q and a reason", auto.Format, auto.Detected, tt.detected)
			}
			if !reflect.DeepEqual(auto.Servers, res.Servers) || !reflect.DeepEqual(auto.Skipped, res.Skipped) {
				t.Errorf("detected as %s, the file reads differently:\n%s%v", auto.Format, show(auto.Servers), auto.Skipped)
			}
		})
	}
	for _, f := range config.Formats() {
		if !covered[f] {
			t.Errorf("no fixture for format %s", f)
		}
	}
}

func checkNotes(t *testing.T, res *config.ImportResult, want []string) {
	t.Helper()
	var got []string
	for _, n := range res.Notes {
		got = append(got, n.Name+": "+n.Text)
	}
	if len(got) != len(want) {
		t.Fatalf("Notes =\n%s\nwant %d containing %q", strings.Join(got, "\n"), len(want), want)
	}
	for i := range want {
		name, part, _ := strings.Cut(want[i], ": ")
		if res.Notes[i].Name != name || !strings.Contains(res.Notes[i].Text, part) {
			t.Errorf("Notes[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}

func resultTexts(res *config.ImportResult) []string {
	var out []string
	for _, s := range res.Skipped {
		out = append(out, s.Name+": "+s.Reason)
	}
	for _, n := range res.Notes {
		out = append(out, n.Name+": "+n.Text)
	}
	return append(out, res.Detected)
}

func TestImportSyntaxAndFormatErrors(t *testing.T) {
	tests := []struct {
		name, file, data string
		format           config.Format
		want             string
	}{
		{"malformed TOML", "config.toml", "[mcp_servers.a]\nurl = \n", config.FormatAuto, "import: 2:7: malformed TOML"},
		{"malformed YAML", "config.yaml", "extensions:\n  a:\n    type: [streamable_http\n", config.FormatAuto, "malformed YAML"},
		{"duplicate YAML key", "config.yaml", "extensions:\n  a: {type: builtin}\n  a: {type: builtin}\n", config.FormatGoose, `3:3: malformed YAML: mapping key "a" already defined`},
		{"TOML without servers", "config.toml", "model = \"gpt-5\"\n", config.FormatAuto, "TOML without [mcp_servers.NAME] tables"},
		{"YAML list at top", "x.yaml", "- a\n- b\n", config.FormatAuto, "top level: must be a table of settings"},
		{"YAML alias bomb", "x.yaml", "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
			"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\nextensions: {}\n",
			config.FormatAuto, "expands to more than a million values"},
		{"Continue list of strings", "c.yaml", "mcpServers: [1, 2]\n", config.FormatContinue, ""},
		{"Codex file read as goose", "config.toml", "[mcp_servers.a]\nurl = \"https://a.example\"\n", config.FormatGoose, "malformed YAML"},
		{"unknown format", "x.json", "{}", "zedd", `import format "zedd": unknown; did you mean zed?`},
		{"no host's shape", "x.json", `{"theme": "dark"}`, config.FormatAuto, "cannot tell the format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := config.ParseImportFile(tt.file, []byte(tt.data), tt.format)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkResult(t, res, nil, []config.Skipped{{"mcpServers[0]", "not a server entry"}, {"mcpServers[1]", "not a server entry"}})
				return
			}
			wantErr(t, err, mcpgate.CategoryInvalid, tt.want)
			if err != nil && (strings.Contains(err.Error(), "toml:") || strings.Contains(err.Error(), "yaml:")) {
				t.Errorf("the error names the parser: %v", err)
			}
		})
	}
}

// TestImportTellsSyntaxWithoutAName: a file piped in (no name, so no
// extension) is still read in its own syntax.
func TestImportTellsSyntaxWithoutAName(t *testing.T) {
	for file, want := range map[string]config.Format{
		"codex.toml": config.FormatCodex, "goose.yaml": config.FormatGoose, "continue.yaml": config.FormatContinue,
		"zed.json": config.FormatZed, "opencode.jsonc": config.FormatOpencode, "vscode.json": config.FormatVSCode,
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "import", file))
		if err != nil {
			t.Fatal(err)
		}
		res, err := config.ParseImport(data, "")
		if err != nil {
			t.Errorf("%s without its name: %v", file, err)
			continue
		}
		if res.Format != want || len(res.Servers) == 0 {
			t.Errorf("%s without its name: read as %s with %d servers, want %s", file, res.Format, len(res.Servers), want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]config.Format{"": config.FormatAuto, "claude": config.FormatClaudeCode, "Claude-Code": config.FormatClaudeCode, "goose": config.FormatGoose} {
		if got, err := config.ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := config.ParseFormat("amazon-q")
	wantErr(t, err, mcpgate.CategoryInvalid, "did you mean amazonq?", "must be one of auto, claude-code,")
}
