package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

// Check reports every invalid entry by its server, where Load stops at
// the first, and malformed JSON with its line and column.
func TestCheckReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	if p, err := config.Check(filepath.Join(dir, "missing.json")); err != nil || p != nil {
		t.Errorf("missing file: %v, %v", p, err)
	}
	good := write("good.json", `{"mcpServers": {"docs": {"url": "https://mcp.example.com/mcp"}}}`)
	if p, err := config.Check(good); err != nil || p != nil {
		t.Errorf("valid file: %v, %v", p, err)
	}

	broken := write("broken.json", "{\n  \"mcpServers\": {\n    \"docs\": {\"url\": \"https://x\",}\n  }\n}\n")
	p, err := config.Check(broken)
	if err != nil || len(p) != 1 || p[0].Line != 3 || p[0].Column == 0 || p[0].Server != "" {
		t.Fatalf("malformed JSON: %+v, %v", p, err)
	}
	if !strings.Contains(p[0].Err.Error(), "broken.json:3:") {
		t.Errorf("malformed JSON error %q does not name file and line", p[0].Err)
	}

	invalid := write("invalid.json", `{"mcpServers": {
		"docs": {"url": "https://mcp.example.com/mcp"},
		"plain": {"url": "http://mcp.example.com/mcp"},
		"local": {"command": "npx"},
		"wiki": {"url": "https://wiki.example.com/mcp", "auth": "magic"}
	}}`)
	p, err = config.Check(invalid)
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, pr := range p {
		servers = append(servers, pr.Server)
		if !strings.Contains(pr.Err.Error(), pr.Server) || mcpgate.CategoryOf(pr.Err) == mcpgate.CategoryInternal {
			t.Errorf("problem of %s: %v (%s)", pr.Server, pr.Err, mcpgate.CategoryOf(pr.Err))
		}
	}
	if strings.Join(servers, ",") != "plain,local,wiki" {
		t.Errorf("problems for %v, want plain, local and wiki", servers)
	}
}
