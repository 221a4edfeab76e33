package hosts_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpgate/mcpgate/internal/hosts"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

const bin = "/opt/mcpgate/bin/mcpgate"

// fixture is testdata/<host>.*: a config in the host's own format, with
// comments where the format has them, other servers and fields mcpgate
// knows nothing of.
func fixture(t *testing.T, h hosts.Host) (name string, data []byte) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join("testdata", h.ID+".*"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("want one testdata/%s.* fixture, found %v (%v)", h.ID, matches, err)
	}
	data, err = os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(matches[0]), data
}

// parse reads data as the host's format with that format's own parser,
// not the package's.
func parse(t *testing.T, f hosts.Format, data []byte) map[string]any {
	t.Helper()
	doc := map[string]any{}
	switch f {
	case hosts.TOML:
		if err := toml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("does not parse as TOML: %v\n%s", err, data)
		}
	case hosts.YAML:
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("does not parse as YAML: %v\n%s", err, data)
		}
	default:
		std, err := hujson.Standardize(bytes.Clone(data)) // it writes over its input
		if err != nil {
			t.Fatalf("does not parse as %s: %v\n%s", f, err, data)
		}
		if f == hosts.JSON && !strings.Contains(string(data), "//") && !strings.Contains(string(data), "/*") {
			std = data // plain JSON must stay plain JSON
		}
		if err := json.Unmarshal(std, &doc); err != nil {
			t.Fatalf("does not parse as JSON: %v\n%s", err, data)
		}
	}
	return doc
}

// argv finds mcpgate's entry in a parsed config however the host spells
// it (command and args, goose's cmd, opencode's command list).
func argv(t *testing.T, h hosts.Host, doc map[string]any) []string {
	t.Helper()
	var entry map[string]any
	switch c := doc[h.Key].(type) {
	case map[string]any:
		entry, _ = c["mcpgate"].(map[string]any)
	case []any:
		for _, item := range c {
			if m, ok := item.(map[string]any); ok && m["name"] == "mcpgate" {
				entry = m
			}
		}
	}
	if entry == nil {
		return nil
	}
	var out []string
	add := func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, s := range v {
				out = append(out, s.(string))
			}
		}
	}
	if cmd, ok := entry["cmd"]; ok {
		add(cmd)
	} else {
		add(entry["command"])
	}
	add(entry["args"])
	return out
}

// others is doc without mcpgate's entry: what an install must not change.
func others(h hosts.Host, doc map[string]any) map[string]any {
	switch c := doc[h.Key].(type) {
	case map[string]any:
		delete(c, "mcpgate")
	case []any:
		doc[h.Key] = slices.DeleteFunc(c, func(item any) bool { return item.(map[string]any)["name"] == "mcpgate" })
	}
	return doc
}

// keptInOrder checks that every line of before is in after, in order,
// allowing only a comma added at the end of a line (JSON's separator before
// a new last member).
func keptInOrder(t *testing.T, before, after []byte) {
	t.Helper()
	got := strings.Split(string(after), "\n")
	j := 0
	for _, line := range strings.Split(string(before), "\n") {
		for j < len(got) && got[j] != line && got[j] != line+"," {
			j++
		}
		if j == len(got) {
			t.Fatalf("line %q of the original is gone or moved:\n%s", line, after)
		}
		j++
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		info, _ := d.Info()
		data, _ := os.ReadFile(p)
		out[p] = info.Mode().String() + " " + info.ModTime().String() + " " + string(data)
		return nil
	})
	return out
}

// The "Done when" of the install step, for every host: install into the
// host's real format keeps everything else, the entry runs mcpgate serve,
// a second install changes nothing, uninstall gives back the exact bytes,
// a dry run writes nothing.
func TestInstallIntoEachHostsConfig(t *testing.T) {
	for _, h := range hosts.All() {
		t.Run(h.ID, func(t *testing.T) {
			name, orig := fixture(t, h)
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}

			before := snapshot(t, dir)
			c, err := hosts.Install(h, path, bin)
			if err != nil {
				t.Fatal(err)
			}
			if c.Action != hosts.Added {
				t.Fatalf("action %s, want added", c.Action)
			}
			diff := c.Diff()
			if !strings.HasPrefix(diff, "--- "+path+"\n+++ "+path+"\n@@ ") || !strings.Contains(diff, "\n+") || !strings.Contains(diff, "mcpgate") {
				t.Errorf("diff does not show the entry being added:\n%s", diff)
			}
			// Planning (a dry run) writes nothing: not the file, not a backup.
			if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
				t.Fatal(diff)
			}
			if err := c.Apply(); err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(c.After) {
				t.Fatal("the file written is not the one planned")
			}
			doc := parse(t, h.Format, after)
			if got := argv(t, h, doc); !slices.Equal(got, []string{bin, "serve"}) {
				t.Fatalf("entry runs %q, want %s serve:\n%s", got, bin, after)
			}
			if diff := cmp.Diff(parse(t, h.Format, orig), others(h, doc)); diff != "" {
				t.Errorf("install changed more than its entry (-before +after):\n%s", diff)
			}
			keptInOrder(t, orig, after)
			if backup, err := os.ReadFile(path + hosts.BackupSuffix); err != nil || string(backup) != string(orig) {
				t.Errorf("backup beside the file: %v, %q", err, backup)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want the file's own 0644", info.Mode().Perm())
			}

			again, err := hosts.Install(h, path, bin)
			if err != nil {
				t.Fatal(err)
			}
			if again.Action != hosts.Unchanged || again.Changed() || again.Diff() != "" {
				t.Errorf("second install: %s, diff %q", again.Action, again.Diff())
			}
			if argv, found, err := hosts.Entry(h, path); err != nil || !found || !slices.Equal(argv, []string{bin, "serve"}) {
				t.Errorf("Entry = %q, %v, %v", argv, found, err)
			}

			u, err := hosts.Uninstall(h, path)
			if err != nil {
				t.Fatal(err)
			}
			if u.Action != hosts.Removed || !slices.Equal(u.Previous, []string{bin, "serve"}) {
				t.Errorf("uninstall: %s of %q", u.Action, u.Previous)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			if restored, _ := os.ReadFile(path); string(restored) != string(orig) {
				t.Errorf("uninstall did not give back the original bytes:\n%s", cmp.Diff(string(orig), string(restored)))
			}
			if u, err := hosts.Uninstall(h, path); err != nil || u.Action != hosts.Absent || u.Changed() {
				t.Errorf("second uninstall: %v, %v", u, err)
			}
		})
	}
}

// An entry named mcpgate that runs another binary (a moved install) is
// updated, and the change says from what.
func TestInstallUpdatesAStaleEntry(t *testing.T) {
	for _, h := range hosts.All() {
		t.Run(h.ID, func(t *testing.T) {
			name, orig := fixture(t, h)
			path := filepath.Join(t.TempDir(), name)
			os.WriteFile(path, orig, 0o644)
			old := "/usr/local/Cellar/mcpgate/0.9/bin/mcpgate"
			applied(t)(hosts.Install(h, path, old))

			c, err := hosts.Install(h, path, bin)
			if err != nil {
				t.Fatal(err)
			}
			if c.Action != hosts.Updated || !slices.Equal(c.Previous, []string{old, "serve"}) {
				t.Fatalf("%s, previous %q", c.Action, c.Previous)
			}
			if d := c.Diff(); !strings.Contains(d, "-") || !strings.Contains(d, old) || !strings.Contains(d, bin) {
				t.Errorf("diff does not show old and new:\n%s", d)
			}
			applied(t)(c, nil)
			data, _ := os.ReadFile(path)
			if got := argv(t, h, parse(t, h.Format, data)); !slices.Equal(got, []string{bin, "serve"}) {
				t.Fatalf("entry runs %q", got)
			}
			applied(t)(hosts.Uninstall(h, path))
			if restored, _ := os.ReadFile(path); string(restored) != string(orig) {
				t.Errorf("uninstall after an update:\n%s", cmp.Diff(string(orig), string(restored)))
			}
		})
	}
}

// applied applies a planned change, failing the test on any error.
func applied(t *testing.T) func(*hosts.Change, error) {
	return func(c *hosts.Change, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(); err != nil {
			t.Fatal(err)
		}
	}
}

// A host whose file does not exist yet gets one, with its folders, holding
// a minimal valid document; the folders are private, and so is the file.
func TestInstallCreatesAMissingFile(t *testing.T) {
	for _, h := range hosts.All() {
		t.Run(h.ID, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "a", "b", "config")
			c, err := hosts.Install(h, path, bin)
			if err != nil {
				t.Fatal(err)
			}
			if c.Action != hosts.Added || c.Before != nil || !strings.HasPrefix(c.Diff(), "--- /dev/null\n") {
				t.Fatalf("%s, diff:\n%s", c.Action, c.Diff())
			}
			if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
				t.Fatal("planning created the folder")
			}
			applied(t)(c, nil)
			data, _ := os.ReadFile(path)
			if got := argv(t, h, parse(t, h.Format, data)); !slices.Equal(got, []string{bin, "serve"}) {
				t.Fatalf("entry runs %q:\n%s", got, data)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
				t.Errorf("new file mode %v", info.Mode().Perm())
			}
			if info, _ := os.Stat(filepath.Join(dir, "a")); info.Mode().Perm() != 0o700 {
				t.Errorf("new folder mode %v", info.Mode().Perm())
			}
			if _, err := os.Stat(path + hosts.BackupSuffix); !os.IsNotExist(err) {
				t.Error("a backup of a file that did not exist")
			}
			applied(t)(hosts.Uninstall(h, path))
			data, _ = os.ReadFile(path)
			if got := parse(t, h.Format, data); argv(t, h, got) != nil || got[h.Key] != nil {
				t.Errorf("after uninstall:\n%s", data)
			}
		})
	}
}

// Files written other ways than the fixtures: one line, tabs, four spaces,
// no servers key, an empty servers object, no final newline.
func TestInstallFollowsTheFilesOwnLayout(t *testing.T) {
	cursor, _ := hosts.Lookup("cursor")
	goose, _ := hosts.Lookup("goose")
	codex, _ := hosts.Lookup("codex")
	cont, _ := hosts.Lookup("continue")
	cases := []struct {
		name string
		host hosts.Host
		in   string
		want string // the file after install
	}{
		{"one line", cursor, `{"mcpServers":{"a":{"url":"https://a.example/mcp"}}}`,
			`{"mcpServers":{"a":{"url":"https://a.example/mcp"},"mcpgate":{"command":"` + bin + `","args":["serve"]}}}`},
		{"no servers key, four spaces", cursor, "{\n    \"theme\": 1\n}\n",
			"{\n    \"theme\": 1,\n    \"mcpServers\": {\n        \"mcpgate\": {\n            \"command\": \"" + bin + "\",\n            \"args\": [\"serve\"]\n        }\n    }\n}\n"},
		{"empty servers, tabs", cursor, "{\n\t\"mcpServers\": {}\n}\n",
			"{\n\t\"mcpServers\": {\n\t\t\"mcpgate\": {\n\t\t\t\"command\": \"" + bin + "\",\n\t\t\t\"args\": [\"serve\"]\n\t\t}\n\t}\n}\n"},
		{"yaml without extensions or final newline", goose, "GOOSE_MODEL: x",
			"GOOSE_MODEL: x\nextensions:\n  mcpgate:\n    name: mcpgate\n    type: stdio\n    cmd: " + bin + "\n    args: [serve]\n    enabled: true\n    envs: {}\n    timeout: 300\n    description: Remote MCP servers through one gateway tool\n"},
		{"yaml list at column 0", cont, "name: a\nmcpServers:\n- name: x\n  command: y\n",
			"name: a\nmcpServers:\n- name: x\n  command: y\n- name: mcpgate\n  command: " + bin + "\n  args: [serve]\n"},
		{"empty JSON file", cursor, "\n",
			"{\n  \"mcpServers\": {\n    \"mcpgate\": {\n      \"command\": \"" + bin + "\",\n      \"args\": [\"serve\"]\n    }\n  }\n}\n"},
		{"empty toml", codex, "",
			"[mcp_servers.mcpgate]\ncommand = \"" + bin + "\"\nargs = [\"serve\"]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			if tc.in != "" {
				os.WriteFile(path, []byte(tc.in), 0o644)
			}
			c, err := hosts.Install(tc.host, path, bin)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(c.After)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A file that does not parse is refused with its name and line, and is
// left alone.
func TestInstallRefusesAFileThatDoesNotParse(t *testing.T) {
	cases := []struct {
		host, in string
		line     int
	}{
		{"cursor", "{\n  \"mcpServers\": {\n    \"a\": {,\n  }\n}\n", 3},
		{"codex", "model = \"x\"\n[mcp_servers.a\ncommand = \"y\"\n", 2},
		{"goose", "extensions:\n  a: [1, 2\nGOOSE_MODEL: x\n", 3},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			h, _ := hosts.Lookup(tc.host)
			dir := t.TempDir()
			path := filepath.Join(dir, "config")
			os.WriteFile(path, []byte(tc.in), 0o644)
			before := snapshot(t, dir)
			_, err := hosts.Install(h, path, bin)
			perr, ok := errors.AsType[*hosts.ParseError](err)
			if !ok {
				t.Fatalf("want a ParseError, got %v", err)
			}
			if perr.Line != tc.line || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "nothing was written") {
				t.Errorf("line %d, error %q", perr.Line, err)
			}
			for _, lib := range []string{"hujson:", "toml:", "yaml:"} {
				if strings.Contains(err.Error(), lib) {
					t.Errorf("error shows the library's prefix: %q", err)
				}
			}
			if _, err := hosts.Uninstall(h, path); err == nil {
				t.Error("uninstall of a broken file")
			}
			if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// An entry in a form a line edit cannot safely change is refused before
// anything is written.
func TestInstallRefusesWhatItCannotEditSafely(t *testing.T) {
	codex, _ := hosts.Lookup("codex")
	goose, _ := hosts.Lookup("goose")
	cases := []struct {
		host hosts.Host
		in   string
	}{
		{codex, "mcp_servers = { a = { command = \"x\" } }\n"},
		{codex, "[mcp_servers]\nmcpgate = { command = \"x\" }\n"},
		{goose, "extensions: {a: {cmd: x}}\n"},
	}
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), "config")
		os.WriteFile(path, []byte(tc.in), 0o644)
		if c, err := hosts.Install(tc.host, path, bin); err == nil {
			t.Errorf("%q: install planned:\n%s", tc.in, c.After)
		}
	}
}

// A file changed by someone else between planning and writing is not
// overwritten.
func TestApplyRefusesAFileChangedMeanwhile(t *testing.T) {
	h, _ := hosts.Lookup("cursor")
	path := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(path, []byte("{}\n"), 0o644)
	c, err := hosts.Install(h, path, bin)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("{\"theme\": 2}\n"), 0o644)
	if err := c.Apply(); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("Apply over a changed file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "{\"theme\": 2}\n" {
		t.Errorf("file overwritten: %s", data)
	}
}

// A config kept in a dotfiles repository and linked into place stays a
// link; the target is written and backed up beside itself.
func TestApplyWritesThroughASymlink(t *testing.T) {
	h, _ := hosts.Lookup("cursor")
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "mcp.json")
	os.MkdirAll(filepath.Dir(target), 0o700)
	os.WriteFile(target, []byte("{}\n"), 0o644)
	link := filepath.Join(dir, "mcp.json")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	applied(t)(hosts.Install(h, link, bin))
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if data, _ := os.ReadFile(target); !strings.Contains(string(data), bin) {
		t.Errorf("target: %s", data)
	}
	if _, err := os.Stat(target + hosts.BackupSuffix); err != nil {
		t.Error(err)
	}
}

func TestLookup(t *testing.T) {
	if h, err := hosts.Lookup("zed"); err != nil || h.Name != "Zed" || h.Key != "context_servers" {
		t.Errorf("zed: %+v, %v", h, err)
	}
	_, err := hosts.Lookup("cursr")
	if !errors.Is(err, hosts.ErrUnknownHost) || !strings.Contains(err.Error(), "did you mean cursor?") {
		t.Errorf("cursr: %v", err)
	}
	_, err = hosts.Lookup("claude")
	if err == nil || !strings.Contains(err.Error(), "claude-code") || !strings.Contains(err.Error(), "claude-desktop") {
		t.Errorf("claude: %v", err)
	}
	_, err = hosts.Lookup("xyzzy-nothing")
	if err == nil || !strings.Contains(err.Error(), "known hosts: claude-code, claude-desktop") {
		t.Errorf("xyzzy: %v", err)
	}
	want := []string{"claude-code", "claude-desktop", "cursor", "vscode", "windsurf", "zed", "codex", "gemini",
		"cline", "continue", "goose", "opencode", "lmstudio", "roo", "amazonq", "kiro"}
	if diff := cmp.Diff(want, hosts.IDs()); diff != "" {
		t.Errorf("host IDs (-want +got):\n%s", diff)
	}
}

// A dry run's diff shows the lines around the change; a credential there
// (a key of ~/.claude.json, a neighbour's env or header) is masked.
func TestDiffMasksCredentials(t *testing.T) {
	h, _ := hosts.Lookup("claude-code")
	path := filepath.Join(t.TempDir(), ".claude.json")
	os.WriteFile(path, []byte(`{
  "userID": "0f3c",
  "oauthAccount": {"accessToken": "at-SECRET1"},
  "env": {"GITHUB_TOKEN": "ghp_SECRET2", "X": "Bearer SECRET3"},
  "args": ["--pat", "github_pat_SECRET6abcdef"],
  "proxy": "https://ada:SECRET4@proxy.example",
  "primaryApiKey": "sk-ant-SECRET5"
}
`), 0o600)
	c, err := hosts.Install(h, path, bin)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Diff()
	if strings.Contains(d, "SECRET") {
		t.Errorf("diff shows a credential:\n%s", d)
	}
	if !strings.Contains(d, `"primaryApiKey": "***",`) || !strings.Contains(d, `+      "command": "`+bin+`",`) {
		t.Errorf("diff:\n%s", d)
	}
}

// A file written on Windows (every line ending CRLF) gets CRLF lines, and
// still comes back byte for byte.
func TestInstallKeepsCRLF(t *testing.T) {
	for _, h := range hosts.All() {
		name, orig := fixture(t, h)
		crlf := []byte(strings.ReplaceAll(string(orig), "\n", "\r\n"))
		path := filepath.Join(t.TempDir(), name)
		os.WriteFile(path, crlf, 0o644)
		c, err := hosts.Install(h, path, bin)
		if err != nil {
			t.Fatalf("%s: %v", h.ID, err)
		}
		if n := strings.Count(string(c.After), "\n"); n != strings.Count(string(c.After), "\r\n") {
			t.Errorf("%s: lone LF in:\n%q", h.ID, c.After)
		}
		applied(t)(c, nil)
		applied(t)(hosts.Uninstall(h, path))
		if back, _ := os.ReadFile(path); string(back) != string(crlf) {
			t.Errorf("%s: not restored:\n%q", h.ID, back)
		}
	}
}

// "mcpServers": null is no servers; install puts an object there.
func TestInstallOverNullServers(t *testing.T) {
	h, _ := hosts.Lookup("cursor")
	path := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(path, []byte("{\n  \"mcpServers\": null\n}\n"), 0o644)
	c, err := hosts.Install(h, path, bin)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"mcpServers\": {\n    \"mcpgate\": {\n      \"command\": \"" + bin + "\",\n      \"args\": [\"serve\"]\n    }\n  }\n}\n"
	if string(c.After) != want {
		t.Errorf("got:\n%s", c.After)
	}
}

// A write that fails at its last step leaves the old file whole and no
// temporary file behind.
func TestApplyFailingLeavesTheFile(t *testing.T) {
	h, _ := hosts.Lookup("kiro")
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	orig := []byte("{\n  \"powers\": {}\n}\n")
	os.WriteFile(path, orig, 0o644)
	c, err := hosts.Install(h, path, bin)
	if err != nil {
		t.Fatal(err)
	}
	hosts.SetRename(t, func(from, to string) error {
		if to == path {
			return errors.New("disk full")
		}
		return os.Rename(from, to) // the backup is written
	})
	if err := c.Apply(); err == nil || !strings.Contains(err.Error(), "writing "+path) {
		t.Fatalf("Apply: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != string(orig) {
		t.Errorf("file changed: %s", data)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}
