package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpgate/mcpgate"
)

// Bad input gets exit 2, a message naming the problem, and leaves the config
// file exactly as it was.
func TestAddRefusesBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "good", "https://mcp.example.com/mcp")
	before := h.configBytes()

	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"invalid name", []string{"add", "Bad Name", "https://mcp.example.com/mcp"}, "server name"},
		{"name too long", []string{"add", strings.Repeat("a", 33), "https://mcp.example.com/mcp"}, "server name"},
		{"invalid URL", []string{"add", "x", "not a url"}, "url"},
		{"relative URL", []string{"add", "x", "/mcp"}, "absolute"},
		{"http not loopback", []string{"add", "x", "http://example.com/mcp"}, "http is only allowed for loopback"},
		{"stdio scheme", []string{"add", "x", "stdio://server"}, "not supported"},
		{"credentials in URL", []string{"add", "x", "https://u:p@example.com/mcp"}, "credentials"},
		{"bearer without env", []string{"add", "x", "https://mcp.example.com/mcp", "--auth", "bearer"}, "--bearer-token-env"},
		{"bad env name", []string{"add", "x", "https://mcp.example.com/mcp", "--bearer-token-env", "1X"}, "environment variable name"},
		{"unknown auth", []string{"add", "x", "https://mcp.example.com/mcp", "--auth", "basic"}, "must be one of none, bearer, oauth"},
		{"header without colon", []string{"add", "x", "https://mcp.example.com/mcp", "--header", "X-Key"}, "Name: value"},
		{"transport header", []string{"add", "x", "https://mcp.example.com/mcp", "--header", "Mcp-Session-Id: 1"}, "set by the transport"},
		{"scope without oauth", []string{"add", "x", "https://mcp.example.com/mcp", "--scope", "read"}, "--scope"},
		{"negative timeout", []string{"add", "x", "https://mcp.example.com/mcp", "--timeout", "-1s"}, "timeout"},
		{"bad timeout", []string{"add", "x", "https://mcp.example.com/mcp", "--timeout", "soon"}, "timeout"},
		{"missing URL", []string{"add", "x"}, "takes 2 argument(s), got 1"},
		{"unknown flag", []string{"add", "x", "https://mcp.example.com/mcp", "--nope"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.run(tt.args...)
			if r.code != exitUsage {
				t.Errorf("want exit 2, got:\n%s", r)
			}
			if !strings.HasPrefix(r.stderr, "mcpgate: ") || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr should say %q:\n%s", tt.want, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout should be empty: %q", r.stdout)
			}
			if !bytes.Equal(h.configBytes(), before) {
				t.Errorf("config changed:\n%s", h.configBytes())
			}
		})
	}
}

func TestAddRefusesBadInputWithoutCreatingTheConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(exitUsage, "add", "x", "http://example.com/mcp")
	if _, err := os.Stat(h.cfg); !os.IsNotExist(err) {
		t.Errorf("a refused add created the config file (err %v)", err)
	}
}

func TestAddDuplicate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "docs", "https://a.example.com/mcp")
	before := h.configBytes()
	r := h.mustRun(exitFail, "add", "docs", "https://b.example.com/mcp")
	if !strings.Contains(r.stderr, "already exists") {
		t.Errorf("stderr: %q", r.stderr)
	}
	if !bytes.Equal(h.configBytes(), before) {
		t.Error("config changed")
	}
	h.mustRun(0, "add", "docs", "https://b.example.com/mcp", "--replace")
	if !strings.Contains(string(h.configBytes()), "b.example.com") {
		t.Errorf("--replace did not replace:\n%s", h.configBytes())
	}
}

func TestAddOptions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env["TOKEN"] = "t"
	h.mustRun(0, "add", "api", "https://api.example.com/mcp",
		"--bearer-token-env", "TOKEN", // implies --auth bearer
		"--header", "X-Team: ${TEAM_ID}", "--header", "X-Env:prod",
		"--connect-on-startup", "--disabled", "--timeout", "90s")
	h.mustRun(0, "add", "gh", "https://gh.example.com/mcp", "--auth", "oauth", "--scope", "repo", "--scope", "read:org")
	h.mustRun(0, "add", "wiki", "https://wiki.corp.internal/mcp", "--allow-private-network")

	cfg, err := (&App{configFlag: h.cfg, Getenv: func(string) string { return "" }}).Config()
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Servers()
	for i := range got {
		got[i].Timeout = got[i].Timeout.Round(0)
	}
	want := []mcpgate.ServerConfig{
		{
			ID: "api", URL: "https://api.example.com/mcp", Auth: mcpgate.AuthBearer, BearerTokenEnv: "TOKEN",
			Headers:          map[string]string{"X-Team": "${TEAM_ID}", "X-Env": "prod"},
			ConnectOnStartup: true, Enabled: false, Timeout: 90e9,
		},
		{ID: "gh", URL: "https://gh.example.com/mcp", Auth: mcpgate.AuthOAuth, Scopes: []string{"repo", "read:org"}, Enabled: true},
		{ID: "wiki", URL: "https://wiki.corp.internal/mcp", Auth: mcpgate.AuthNone, Enabled: true, AllowPrivateNetwork: true},
	}
	if d := cmp.Diff(want, got, cmp.Transformer("nilEmpty", func(s []string) []string {
		if len(s) == 0 {
			return nil
		}
		return s
	})); d != "" {
		t.Errorf("saved config (-want +got):\n%s", d)
	}
	// The header keeps ${TEAM_ID} verbatim in the file.
	if !strings.Contains(string(h.configBytes()), "${TEAM_ID}") {
		t.Errorf("header reference not kept verbatim:\n%s", h.configBytes())
	}
}

func TestAddWarnsAboutUnsetVariables(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.mustRun(0, "add", "api", "https://api.example.com/mcp", "--bearer-token-env", "API_TOKEN", "--header", "X-Team: ${TEAM_ID}")
	for _, name := range []string{"$API_TOKEN", "$TEAM_ID"} {
		if !strings.Contains(r.stderr, name) {
			t.Errorf("no note about %s:\n%s", name, r.stderr)
		}
	}
}

func TestRemoveEnableDisableTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "docs", "https://docs.example.com/mcp")

	h.mustRun(0, "disable", "docs")
	h.mustRun(0, "tools", "disable", "docs", "delete_all")
	r := h.mustRun(0, "servers")
	if !strings.Contains(r.stdout, "no") || !strings.Contains(r.stdout, "1 tool disabled") {
		t.Errorf("servers after disable:\n%s", r.stdout)
	}
	h.mustRun(0, "enable", "docs")
	h.mustRun(0, "tools", "enable", "docs", "delete_all")
	r = h.mustRun(0, "servers", "--json")
	if !strings.Contains(r.stdout, `"enabled": true`) || !strings.Contains(r.stdout, `"disabledTools": []`) {
		t.Errorf("servers --json after enable:\n%s", r.stdout)
	}

	before := h.configBytes()
	for _, args := range [][]string{
		{"remove", "nope"}, {"enable", "nope"}, {"tools", "disable", "nope", "x"},
	} {
		r := h.mustRun(exitFail, args...)
		if !strings.Contains(r.stderr, `"nope"`) || !strings.Contains(r.stderr, "is configured") && !strings.Contains(r.stderr, "is not configured") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"remove", "No!"}, {"tools", "frobnicate", "docs", "x"}, {"tools", "disable", "docs"},
	} {
		h.mustRun(exitUsage, args...)
	}
	if !bytes.Equal(h.configBytes(), before) {
		t.Error("config changed by refused commands")
	}

	h.mustRun(0, "remove", "docs")
	r = h.mustRun(0, "servers")
	if r.stdout != "" || !strings.Contains(r.stderr, "No servers") {
		t.Errorf("servers after remove:\n%s", r)
	}
}

func TestHeaderParsing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      []string
		want    map[string]string
		wantErr bool
	}{
		{in: []string{"X-A: 1"}, want: map[string]string{"X-A": "1"}},
		{in: []string{"X-A:1:2"}, want: map[string]string{"X-A": "1:2"}},
		{in: []string{"Authorization: Bearer ${TOKEN}"}, want: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		{in: []string{"X-A: 1", "x-a: 2"}, wantErr: true},
		{in: []string{": 1"}, wantErr: true},
		{in: []string{"nocolon"}, wantErr: true},
	}
	for _, tt := range tests {
		o := &addOptions{ID: "x", URL: "https://x.example.com/mcp", Auth: newEnumFlag("none"), Headers: tt.in}
		s, err := o.serverConfig()
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && !cmp.Equal(s.Headers, tt.want) {
			t.Errorf("%q: headers %v, want %v", tt.in, s.Headers, tt.want)
		}
	}
}

// TestAddRefusesAMultiLineToken: a token file of several lines (a wrapped
// token, a token and a comment) was cut to its first line without a word,
// and the server then refused every request.
func TestAddRefusesAMultiLineToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.runIn("first-half\nsecond-half\n", "add", "api", "https://api.example.com/mcp", "--auth", "bearer")
	if r.code != exitUsage || !strings.Contains(r.stderr, "one line") {
		t.Errorf("a two-line token: %s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "first-half") || strings.Contains(r.stdout+r.stderr, "second-half") {
		t.Errorf("the token was printed: %s", r)
	}
	if strings.Contains(string(h.configBytes()), "api.example.com") {
		t.Error("the server was added anyway")
	}
	if r := h.runIn("one-line-token\r\n\n", "add", "ok", "https://api.example.com/mcp", "--auth", "bearer"); r.code != 0 {
		t.Errorf("a one-line token with a trailing CRLF and blank line: %s", r)
	}
}
