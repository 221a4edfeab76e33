package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

// writeConfig writes content to a config.json in a fresh folder.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustLoad(t *testing.T, path string) *config.File {
	t.Helper()
	f, err := config.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return f
}

func mustServer(t *testing.T, f *config.File, id string) mcpgate.ServerConfig {
	t.Helper()
	s, ok := f.Server(id)
	if !ok {
		t.Fatalf("server %q missing; have %v", id, f.Servers())
	}
	return s
}

// wantErr checks err's category and that its message holds every part.
func wantErr(t *testing.T, err error, cat mcpgate.Category, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s error containing %q", cat, parts)
	}
	if got := mcpgate.CategoryOf(err); got != cat {
		t.Errorf("category = %s, want %s (error: %v)", got, cat, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func server(id, url string) mcpgate.ServerConfig {
	return mcpgate.ServerConfig{ID: id, URL: url, Auth: mcpgate.AuthOAuth, Enabled: true}
}

func TestLoadMissingFileIsEmpty(t *testing.T) {
	for _, content := range []string{"", "  \n", "\xef\xbb\xbf"} {
		path := writeConfig(t, content)
		if got := mustLoad(t, path).Servers(); len(got) != 0 {
			t.Errorf("Load(%q) = %v, want no servers", content, got)
		}
	}
	f := mustLoad(t, filepath.Join(t.TempDir(), "absent", "config.json"))
	if got := f.Servers(); len(got) != 0 {
		t.Errorf("missing file: servers = %v, want none", got)
	}
}

func TestLoadDefaults(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {
		"plain":  {"url": "https://a.example/mcp"},
		"header": {"url": "https://b.example/mcp", "headers": {"authorization": "Bearer ${TOKEN}"}},
		"bearer": {"url": "https://c.example/mcp", "bearerTokenEnv": "C_TOKEN"},
		"local":  {"url": "http://127.0.0.1:8080/mcp", "auth": "none", "enabled": false, "connectOnStartup": true}
	}}`)
	f := mustLoad(t, path)
	want := []mcpgate.ServerConfig{
		{ID: "bearer", URL: "https://c.example/mcp", Auth: mcpgate.AuthBearer, BearerTokenEnv: "C_TOKEN", Enabled: true},
		{ID: "header", URL: "https://b.example/mcp", Auth: mcpgate.AuthNone, Enabled: true,
			Headers: map[string]string{"authorization": "Bearer ${TOKEN}"}},
		{ID: "local", URL: "http://127.0.0.1:8080/mcp", Auth: mcpgate.AuthNone, ConnectOnStartup: true},
		{ID: "plain", URL: "https://a.example/mcp", Auth: mcpgate.AuthOAuth, Enabled: true},
	}
	if got := f.Servers(); !reflect.DeepEqual(got, want) {
		t.Errorf("Servers() =\n%+v\nwant\n%+v", got, want)
	}
}

func TestLoadTimeout(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration
		err   string // part of the error; "" for none
	}{
		{`"90s"`, 90 * time.Second, ""},
		{`"1m30s"`, 90 * time.Second, ""},
		{`"250ms"`, 250 * time.Millisecond, ""},
		{`90`, 90 * time.Second, ""},
		{`1.5`, 1500 * time.Millisecond, ""},
		{`null`, 0, ""},
		{`"90"`, 0, `server "s": timeout: "90": must be a duration such as "90s" or a number of seconds`},
		{`"soon"`, 0, `timeout: "soon": must be a duration`},
		{`true`, 0, `server "s": timeout: must be a duration such as "90s" or a number of seconds`},
		{`"-5s"`, 0, `server "s": timeout: must not be negative`},
		{`1e300`, 0, `server "s": timeout: too large`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			path := writeConfig(t, `{"mcpServers": {"s": {"url": "https://s.example/mcp", "timeout": `+tt.value+`}}}`)
			f, err := config.Load(path)
			if tt.err != "" {
				wantErr(t, err, mcpgate.CategoryInvalid, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := mustServer(t, f, "s").Timeout; got != tt.want {
				t.Errorf("timeout = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name    string
		content string
		cat     mcpgate.Category
		want    []string
	}{
		{"malformed JSON", "{\n  \"mcpServers\": {\n    \"a\": {\"url\": \"https://a.example\"},\n  }\n}",
			mcpgate.CategoryInvalid, []string{"config.json:4:3: malformed JSON", "invalid character '}'"}},
		{"truncated JSON", `{"mcpServers": {`, mcpgate.CategoryInvalid, []string{"config.json:1:", "malformed JSON"}},
		{"top level not an object", `[1]`, mcpgate.CategoryInvalid, []string{"top level: must be a JSON object"}},
		{"mcpServers not an object", `{"mcpServers": []}`, mcpgate.CategoryInvalid, []string{"mcpServers: must be a JSON object"}},
		{"server defined twice", `{"mcpServers": {"a": {"url": "https://a.example"}, "a": {"url": "https://b.example"}}}`,
			mcpgate.CategoryInvalid, []string{`mcpServers: "a" is given twice`}},
		{"entry not an object", `{"mcpServers": {"a": "https://a.example"}}`, mcpgate.CategoryInvalid, []string{`server "a": must be a JSON object`}},
		{"invalid ID", `{"mcpServers": {"GitHub": {"url": "https://a.example"}}}`,
			mcpgate.CategoryInvalid, []string{`server name "GitHub": must match ^[a-z0-9][a-z0-9_-]{0,31}$`}},
		{"http to a remote host", `{"mcpServers": {"a": {"url": "http://a.example/mcp"}}}`,
			mcpgate.CategoryInvalid, []string{`server "a"`, "http is only allowed for loopback hosts"}},
		{"missing url", `{"mcpServers": {"a": {"auth": "none"}}}`, mcpgate.CategoryInvalid, []string{`server "a"`, "url"}},
		{"url not a string", `{"mcpServers": {"a": {"url": 1}}}`, mcpgate.CategoryInvalid, []string{`server "a": url: must be a string`}},
		{"bad auth", `{"mcpServers": {"a": {"url": "https://a.example", "auth": "basic"}}}`,
			mcpgate.CategoryInvalid, []string{`server "a": auth "basic": must be one of none, bearer, oauth`}},
		{"enabled not a bool", `{"mcpServers": {"a": {"url": "https://a.example", "enabled": "yes"}}}`,
			mcpgate.CategoryInvalid, []string{`server "a": enabled: must be true or false`}},
		{"disabledTools not a list", `{"mcpServers": {"a": {"url": "https://a.example", "disabledTools": "x"}}}`,
			mcpgate.CategoryInvalid, []string{`server "a": disabledTools: must be an array of strings`}},
		{"header value not a string", `{"mcpServers": {"a": {"url": "https://a.example", "headers": {"X-N": 1}}}}`,
			mcpgate.CategoryInvalid, []string{`server "a": headers: must be an object whose values are strings`}},
		{"stdio command", `{"mcpServers": {"local": {"command": "npx", "args": ["server"]}}}`,
			mcpgate.CategoryUnsupported, []string{`server "local": command: stdio servers are not supported: mcpgate connects to remote servers over Streamable HTTP only`}},
		{"stdio type", `{"mcpServers": {"local": {"type": "stdio", "url": "https://a.example"}}}`,
			mcpgate.CategoryUnsupported, []string{`server "local": type "stdio": stdio servers are not supported`}},
		{"sse type", `{"mcpServers": {"old": {"type": "sse", "url": "https://a.example/sse"}}}`,
			mcpgate.CategoryUnsupported, []string{`server "old": type "sse": the legacy HTTP+SSE transport is not supported`}},
		{"unknown type", `{"mcpServers": {"a": {"type": "ws", "url": "https://a.example"}}}`,
			mcpgate.CategoryInvalid, []string{`server "a": type "ws": must be "http" or "streamable-http"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.content)
			_, err := config.Load(path)
			wantErr(t, err, tt.cat, append(tt.want, path)...)
			if got := string(readFile(t, path)); got != tt.content {
				t.Errorf("file changed by a failed Load:\n%s", got)
			}
		})
	}
}

func TestLoadAcceptsHTTPTypes(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {
		"a": {"type": "http", "url": "https://a.example/mcp"},
		"b": {"type": "streamable-http", "url": "https://b.example/mcp"}
	}}`)
	f := mustLoad(t, path)
	if got := len(f.Servers()); got != 2 {
		t.Fatalf("%d servers, want 2", got)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	var saved struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(readFile(t, path), &saved); err != nil {
		t.Fatal(err)
	}
	if saved.MCPServers["a"]["type"] != "http" || saved.MCPServers["b"]["type"] != "streamable-http" {
		t.Errorf("type not kept: %v", saved.MCPServers)
	}
}

// objectKeys lists the keys of the JSON object at the given path of
// nested keys, in file order.
func objectKeys(t *testing.T, data []byte, path ...string) []string {
	t.Helper()
	for _, k := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		data = m[k]
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestRoundTripKeepsUnknownFields(t *testing.T) {
	path := writeConfig(t, `{
  "$schema": "https://example.com/schema.json",
  "mcpServers": {
    "zeta": {
      "note": "team server",
      "type": "http",
      "url": "https://zeta.example/mcp?a=1&b=2",
      "enabled": true,
      "timeout": 90,
      "x-extra": {"nested": [1, 2, {"deep": true}]}
    },
    "alpha": {"url": "https://alpha.example/mcp", "auth": "none", "headers": {"X-Key": "${env:ALPHA_KEY}"}}
  },
  "settings": {"theme": "dark"}
}`)
	f := mustLoad(t, path)
	before := f.Servers()
	if err := f.SetEnabled("alpha", false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	data := readFile(t, path)

	var doc struct {
		Schema     string                                `json:"$schema"`
		Settings   map[string]string                     `json:"settings"`
		MCPServers map[string]map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("saved file is not JSON: %v\n%s", err, data)
	}
	if doc.Schema != "https://example.com/schema.json" || doc.Settings["theme"] != "dark" {
		t.Errorf("top-level unknown fields lost:\n%s", data)
	}
	zeta := doc.MCPServers["zeta"]
	for key, want := range map[string]string{
		"note":    `"team server"`,
		"type":    `"http"`,
		"x-extra": `{"nested":[1,2,{"deep":true}]}`,
		"enabled": `true`,    // written by the person: kept though it is the default
		"timeout": `"1m30s"`, // a number of seconds comes back as a duration
		"url":     `"https://zeta.example/mcp?a=1&b=2"`,
	} {
		var compact bytes.Buffer
		json.Compact(&compact, zeta[key])
		if compact.String() != want {
			t.Errorf("zeta.%s = %s, want %s", key, compact.String(), want)
		}
	}
	if got, want := objectKeys(t, data), []string{"$schema", "mcpServers", "settings"}; !reflect.DeepEqual(got, want) {
		t.Errorf("top-level order = %v, want %v", got, want)
	}
	if got, want := objectKeys(t, data, "mcpServers"), []string{"zeta", "alpha"}; !reflect.DeepEqual(got, want) {
		t.Errorf("server order = %v, want %v", got, want)
	}
	if got, want := objectKeys(t, data, "mcpServers", "zeta"), []string{"note", "type", "url", "enabled", "timeout", "x-extra", "auth"}; !reflect.DeepEqual(got, want) {
		t.Errorf("entry order = %v, want %v", got, want)
	}

	after := mustLoad(t, path).Servers()
	before[0].Enabled = false // alpha
	if !reflect.DeepEqual(after, before) {
		t.Errorf("reloaded servers =\n%+v\nwant\n%+v", after, before)
	}
}

func TestSaveCreatesPrivateFileAndFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "mcpgate")
	path := filepath.Join(dir, "config.json")
	f := mustLoad(t, path)
	if err := f.Add(server("a", "https://a.example/mcp"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, path, 0o600)
	assertOnlyFile(t, dir, "config.json")
	want := `{
  "mcpServers": {
    "a": {
      "url": "https://a.example/mcp",
      "auth": "oauth"
    }
  }
}
`
	if got := string(readFile(t, path)); got != want {
		t.Errorf("saved:\n%s\nwant:\n%s", got, want)
	}
}

func TestSaveTightensMode(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {}}`)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	f := mustLoad(t, path)
	if err := f.Add(server("a", "https://a.example/mcp"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

// assertOnlyFile checks no temporary file was left behind.
func assertOnlyFile(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != name {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v, want only %s", dir, names, name)
	}
}

func TestSaveFailureLeavesFileUntouched(t *testing.T) {
	const content = `{"mcpServers": {"a": {"url": "https://a.example/mcp"}}}`
	path := writeConfig(t, content)
	f := mustLoad(t, path)
	if err := f.Remove("a"); err != nil {
		t.Fatal(err)
	}
	config.SetRename(t, func(string, string) error { return errors.New("disk full") })
	err := f.Save()
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Save = %v, want the rename error", err)
	}
	if got := string(readFile(t, path)); got != content {
		t.Errorf("file changed by a failed Save:\n%s", got)
	}
	assertOnlyFile(t, filepath.Dir(path), "config.json")
}

func TestSaveRefusesFileChangedOnDisk(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {}}`)
	f := mustLoad(t, path)
	const edited = `{"mcpServers": {"mine": {"url": "https://mine.example/mcp"}}}`
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(server("a", "https://a.example/mcp"), false); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.Save(), mcpgate.CategoryConflict, "changed on disk since it was read")
	if got := string(readFile(t, path)); got != edited {
		t.Errorf("someone else's edit was overwritten:\n%s", got)
	}

	// A File for a missing file must not clobber one created meanwhile.
	fresh := &config.File{Path: path}
	wantErr(t, fresh.Save(), mcpgate.CategoryConflict, "changed on disk")

	// After its own save a File can save again.
	g := mustLoad(t, path)
	for _, id := range []string{"b", "c"} {
		if err := g.Add(server(id, "https://"+id+".example/mcp"), false); err != nil {
			t.Fatal(err)
		}
		if err := g.Save(); err != nil {
			t.Fatalf("save %s: %v", id, err)
		}
	}
}

func TestSaveFollowsSymlink(t *testing.T) {
	real := writeConfig(t, `{"mcpServers": {}}`)
	link := filepath.Join(t.TempDir(), "config.json")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	f := mustLoad(t, link)
	if err := f.Add(server("a", "https://a.example/mcp"), false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symlink", link)
	}
	if !strings.Contains(string(readFile(t, real)), "a.example") {
		t.Errorf("the linked file was not written")
	}
}

func TestAdd(t *testing.T) {
	tests := []struct {
		name string
		s    mcpgate.ServerConfig
		cat  mcpgate.Category
		want []string
	}{
		{"invalid ID", server("My Server", "https://a.example"), mcpgate.CategoryInvalid, []string{`server name "My Server": must match`}},
		{"http to a remote host", server("a", "http://a.example/mcp"), mcpgate.CategoryInvalid,
			[]string{`server "a"`, "http is only allowed for loopback hosts"}},
		{"no auth", mcpgate.ServerConfig{ID: "a", URL: "https://a.example"}, mcpgate.CategoryInvalid, []string{`server "a": auth: required`}},
		{"duplicate", server("dup", "https://other.example/mcp"), mcpgate.CategoryConflict,
			[]string{`server "dup" already exists`, "--replace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustLoad(t, writeConfig(t, `{"mcpServers": {"dup": {"url": "https://dup.example/mcp"}}}`))
			before := f.Servers()
			wantErr(t, f.Add(tt.s, false), tt.cat, tt.want...)
			if after := f.Servers(); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused Add changed the config: %+v", after)
			}
		})
	}
}

func TestAddReplace(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {"a": {"note": "keep me", "url": "https://old.example/mcp", "name": "Old", "scopes": ["read"]}}}`)
	f := mustLoad(t, path)
	replacement := server("a", "https://new.example/mcp")
	if err := f.Add(replacement, true); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	if got := mustServer(t, mustLoad(t, path), "a"); !reflect.DeepEqual(got, replacement) {
		t.Errorf("after replace: %+v, want %+v", got, replacement)
	}
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(readFile(t, path), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.MCPServers["a"]["note"]; got != "keep me" {
		t.Errorf("unknown member lost on replace: note = %v", got)
	}
}

func TestAddKeepsCopy(t *testing.T) {
	f := &config.File{Path: filepath.Join(t.TempDir(), "config.json")}
	s := server("a", "https://a.example/mcp")
	s.Headers = map[string]string{"X-A": "1"}
	if err := f.Add(s, false); err != nil {
		t.Fatal(err)
	}
	s.Headers["X-A"] = "changed by caller"
	got := mustServer(t, f, "a")
	got.Headers["X-A"] = "changed by reader"
	got.DisabledTools = append(got.DisabledTools, "x")
	if h := mustServer(t, f, "a").Headers["X-A"]; h != "1" {
		t.Errorf("header = %q: the File shares memory with its callers", h)
	}
}

func TestUnknownServer(t *testing.T) {
	f := mustLoad(t, writeConfig(t, `{"mcpServers": {}}`))
	for name, err := range map[string]error{
		"Remove":         f.Remove("ghost"),
		"SetEnabled":     f.SetEnabled("ghost", false),
		"SetToolEnabled": f.SetToolEnabled("ghost", "t", false),
	} {
		t.Run(name, func(t *testing.T) { wantErr(t, err, mcpgate.CategoryNotFound, `server "ghost"`) })
	}
}

func TestRemove(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {"a": {"url": "https://a.example"}, "b": {"url": "https://b.example"}}}`)
	f := mustLoad(t, path)
	if err := f.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	got := mustLoad(t, path).Servers()
	if len(got) != 1 || got[0].ID != "b" {
		t.Errorf("after Remove: %+v", got)
	}
}

func TestSetToolEnabled(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {"a": {"url": "https://a.example", "disabledTools": ["x"]}}}`)
	f := mustLoad(t, path)
	steps := []struct {
		tool    string
		enabled bool
		want    []string
	}{
		{"y", false, []string{"x", "y"}},
		{"y", false, []string{"x", "y"}}, // no duplicates
		{"x", true, []string{"y"}},
		{"x", true, []string{"y"}}, // enabling an enabled tool is fine
		{"y", true, []string{}},
	}
	for _, s := range steps {
		if err := f.SetToolEnabled("a", s.tool, s.enabled); err != nil {
			t.Fatal(err)
		}
		got := mustServer(t, f, "a").DisabledTools
		if len(got) != len(s.want) || (len(got) > 0 && !reflect.DeepEqual(got, s.want)) {
			t.Errorf("after %s enabled=%v: disabledTools = %v, want %v", s.tool, s.enabled, got, s.want)
		}
	}
	if err := f.SetToolEnabled("a", "z", false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	if got := mustServer(t, mustLoad(t, path), "a").DisabledTools; !reflect.DeepEqual(got, []string{"z"}) {
		t.Errorf("saved disabledTools = %v, want [z]", got)
	}
	wantErr(t, f.SetToolEnabled("a", "", false), mcpgate.CategoryInvalid, "tool name: must not be empty")
}

func TestSetEnabled(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {"a": {"url": "https://a.example"}}}`)
	f := mustLoad(t, path)
	if err := f.SetEnabled("a", false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	if mustServer(t, mustLoad(t, path), "a").Enabled {
		t.Error("server still enabled after SetEnabled(false) and Save")
	}
	if !strings.Contains(string(readFile(t, path)), `"enabled": false`) {
		t.Errorf("saved file does not say enabled false:\n%s", readFile(t, path))
	}
}

func TestServersSortedByID(t *testing.T) {
	f := mustLoad(t, writeConfig(t, `{"mcpServers": {"c": {"url": "https://c.example"}, "a": {"url": "https://a.example"}, "b": {"url": "https://b.example"}}}`))
	var ids []string
	for _, s := range f.Servers() {
		ids = append(ids, s.ID)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("IDs = %v, want %v", ids, want)
	}
}
