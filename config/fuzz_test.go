package config

import (
	"reflect"
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate"
)

// FuzzParseImport: any file of any dialect is either refused as invalid
// or imported as valid servers with distinct IDs, whose environment
// variables CheckEnv names; what is imported survives being saved in
// mcpgate's own file and read back unchanged.
func FuzzParseImport(f *testing.F) {
	seeds := []string{
		`{"mcpServers":{"docs":{"type":"http","url":"https://mcp.example.com/mcp","headers":{"X-Key":"${KEY}"}}}}`,
		`{"mcpServers":{"local":{"command":"npx","args":["-y","mcp-remote","https://r.example.com/mcp","--header","Authorization: Bearer ${TOKEN}"]}}}`,
		`{"projects":{"/p":{"mcpServers":{"Dup Name!":{"url":"https://a.example.com"}}}},"mcpServers":{"dup-name-":{"url":"https://b.example.com","oauth":{"clientId":"c"}}}}`,
		"// comment\n{\"servers\":{\"v\":{\"type\":\"sse\",\"url\":\"https://v.example.com/sse\"},\"w\":{\"type\":\"http\",\"url\":\"${env:URL}\",},},}",
		`{"mcp":{"servers":{"x":{"url":"http://127.0.0.1:3000/mcp","headers":{"X-Leak":"${AWS_SECRET_ACCESS_KEY}"}}}}}`,
		"\ufeff{\"mcpServers\":{\"\u202ebidi\":{\"url\":\"https://e.example.com/\u0085\"}}}",
		// Codex TOML, goose and Continue YAML, Zed, opencode, Gemini CLI.
		"[mcp_servers.gh]\nurl = \"https://api.example.com/mcp/\"\nbearer_token_env_var = \"GH\"\nenv_http_headers = { \"X-K\" = \"K\" }\n[mcp_servers.r]\ncommand = \"npx\"\nargs = [\"mcp-remote\", \"https://r.example.com/mcp\"]\n",
		"extensions:\n  gh:\n    type: streamable_http\n    uri: https://api.example.com/mcp/\n    headers: {Authorization: Bearer ${T}}\n  dev: {type: builtin}\n",
		"mcpServers:\n  - name: A b\n    type: streamable-http\n    url: https://a.example.com/mcp\n  - name: A b\n    url: https://b.example.com/mcp\n  - uses: x/y\n",
		"a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nextensions: {x: {type: streamable_http, uri: https://x.example.com, headers: {k: *b}}}\n",
		`{"context_servers":{"z":{"command":{"path":"npx","args":["mcp-remote","https://z.example.com"]}},"u":{"url":"https://u.example.com"}}}`,
		`{"mcp":{"o":{"type":"remote","url":"https://o.example.com/{env:P}","headers":{"A":"{env:A}"},"oauth":{}}}}`,
		`{"mcpServers":{"g":{"httpUrl":"https://g.example.com","headers":{"A":"$TOKEN"},"excludeTools":["x"]},"s":{"url":"https://s.example.com"}}}`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		formats := Formats()
		res, err := ParseImport(data, formats[int(which)%len(formats)])
		if err != nil {
			if mcpgate.CategoryOf(err) != mcpgate.CategoryInvalid {
				t.Fatalf("refused as %s: %v", mcpgate.CategoryOf(err), err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range res.Servers {
			if err := s.Validate(); err != nil {
				t.Errorf("imported an invalid server %q: %v", s.ID, err)
			}
			if seen[s.ID] {
				t.Errorf("imported %q twice", s.ID)
			}
			seen[s.ID] = true
		}
		var vars []string
		for _, u := range res.EnvUses() {
			vars = append(vars, u.Variable)
		}
		if err := res.CheckEnv(vars); err != nil {
			t.Errorf("CheckEnv refuses the variables EnvUses lists: %v", err)
		}
		if len(vars) > 0 && res.CheckEnv(nil) == nil {
			t.Errorf("CheckEnv allows %v unnamed", vars)
		}

		file, err := parse("mcp.json", []byte(`{"mcpServers":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := file.Import(res, false); err != nil {
			t.Fatalf("importing what ParseImport returned: %v", err)
		}
		saved, err := file.encode()
		if err != nil {
			t.Fatalf("encoding: %v", err)
		}
		back, err := parse("mcp.json", saved)
		if err != nil {
			t.Fatalf("reading back what was saved: %v\n%s", err, saved)
		}
		got := back.Servers()
		want := slices.Clone(res.Servers)
		slices.SortFunc(got, func(a, b mcpgate.ServerConfig) int { return cmpID(a.ID, b.ID) })
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Errorf("saved and read back:\n%+v\nwant\n%+v", got, want)
		}
	})
}

func cmpID(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// normalize makes empty and nil collections compare equal.
func normalize(servers []mcpgate.ServerConfig) []mcpgate.ServerConfig {
	if len(servers) == 0 {
		return nil
	}
	out := slices.Clone(servers)
	for i := range out {
		if len(out[i].Headers) == 0 {
			out[i].Headers = nil
		}
		if len(out[i].Scopes) == 0 {
			out[i].Scopes = nil
		}
		if len(out[i].DisabledTools) == 0 {
			out[i].DisabledTools = nil
		}
	}
	return out
}
