package config

import (
	"encoding/json"
	"testing"
)

func TestStripJSONC(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain JSON is unchanged", `{"a": [1, 2], "b": "c"}`, `{"a": [1, 2], "b": "c"}`},
		{"line comment", "{\"a\": 1 // one\n}", "{\"a\": 1       \n}"},
		{"line comment at the end", "{} // done", "{}        "},
		{"block comment keeps newlines", "{/* a\nb */\"a\": 1}", "{    \n    \"a\": 1}"},
		{"trailing comma in object", `{"a": 1,}`, `{"a": 1 }`},
		{"trailing comma in array", `[1, 2, ]`, `[1, 2  ]`},
		{"trailing comma before a comment", "[1, // c\n]", "[1      \n]"},
		{"comma between values stays", `[1, /* c */ 2]`, `[1,         2]`},
		{"slashes inside a string", `{"u": "https://x/y", "c": "/* no */"}`, `{"u": "https://x/y", "c": "/* no */"}`},
		{"escaped quote inside a string", `{"q": "a\"//b",}`, `{"q": "a\"//b" }`},
		{"escaped backslash ends a string", `{"q": "a\\"// c` + "\n}", `{"q": "a\\"    ` + "\n}"},
		{"comma inside a string", `{"a": ",}"}`, `{"a": ",}"}`},
		{"unterminated block comment is left for the parser", `{/* x`, `{/* x`},
		{"division-like slash is left alone", `{"a": 1 / 2}`, `{"a": 1 / 2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(stripJSONC([]byte(tt.in)))
			if got != tt.want {
				t.Errorf("stripJSONC(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if len(got) != len(tt.in) {
				t.Errorf("length changed: %d → %d; offsets must be kept", len(tt.in), len(got))
			}
		})
	}
}

func TestStripJSONCMakesVSCodeSettingsParse(t *testing.T) {
	const settings = `{
	// Editor
	"editor.rulers": [80, 120,],
	/* MCP
	   servers */
	"mcp": {"servers": {"a": {"url": "https://a.example/mcp?x=1//2",},},},
}`
	var v struct {
		MCP struct {
			Servers map[string]struct{ URL string } `json:"servers"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(stripJSONC([]byte(settings)), &v); err != nil {
		t.Fatal(err)
	}
	if got := v.MCP.Servers["a"].URL; got != "https://a.example/mcp?x=1//2" {
		t.Errorf("url = %q", got)
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("{\n  \"ä\": x\n}")
	tests := []struct {
		offset    int64
		line, col int
	}{
		{1, 1, 1},
		{11, 2, 8}, // the x after a two-byte rune: columns count characters
		{int64(len(data)), 3, 1},
		{0, 1, 1},
		{1000, 3, 2},
	}
	for _, tt := range tests {
		if line, col := lineCol(data, tt.offset); line != tt.line || col != tt.col {
			t.Errorf("lineCol(%d) = %d:%d, want %d:%d", tt.offset, line, col, tt.line, tt.col)
		}
	}
}

func TestServerID(t *testing.T) {
	tests := []struct{ name, want string }{
		{"github", "github"},
		{"GitHub", "github"},
		{"My Server (prod)", "my-server-prod"},
		{"a.b.c", "a-b-c"},
		{"--lead", "lead"},
		{"_x_", "x"},
		{"ünïcode", "n-code"},
		{"a-very-long-server-name-from-somewhere-else", "a-very-long-server-name-from-som"},
		{"abcdefghijklmnopqrstuvwxyz01234-5", "abcdefghijklmnopqrstuvwxyz01234"}, // no trailing "-" after the cut
		{"日本", ""},
		{"---", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := serverID(tt.name)
		if tt.want == "" {
			if err == nil {
				t.Errorf("serverID(%q) = %q, want an error", tt.name, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("serverID(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestIsMCPRemote(t *testing.T) {
	for word, want := range map[string]bool{
		"mcp-remote":                       true,
		"mcp-remote@latest":                true,
		"mcp-remote@0.1.29":                true,
		"/usr/local/bin/mcp-remote":        true,
		`C:\Users\a\npm\mcp-remote.cmd`:    true,
		"npx":                              false,
		"mcp-remote-client":                false,
		"https://example.com/mcp-remote":   false,
		"@modelcontextprotocol/server-git": false,
	} {
		if got := isMCPRemote(word); got != want {
			t.Errorf("isMCPRemote(%q) = %v, want %v", word, got, want)
		}
	}
}
