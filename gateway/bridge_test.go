package gateway

import (
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBridgeNamesSafeAndUnique(t *testing.T) {
	byServer := map[string][]*mcp.Tool{
		"github": {{Name: "list_issues"}, {Name: "repo.get"}, {Name: "repo_get"}, {Name: strings.Repeat("very_long_tool_name_", 5)}},
		"my-srv": {{Name: "a b/c"}, {Name: "ünï"}},
	}
	safe := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	descs := bridgeNames(byServer)
	seen := map[string]bool{}
	for _, d := range descs {
		if !safe.MatchString(d.Name) {
			t.Errorf("unsafe name %q for %s/%s", d.Name, d.Server, d.Tool)
		}
		if seen[d.Name] {
			t.Errorf("duplicate name %q", d.Name)
		}
		seen[d.Name] = true
		if d.Def.Name != d.Name {
			t.Errorf("definition not renamed: %q", d.Def.Name)
		}
	}
	if !seen["mcp__github__list_issues"] {
		t.Errorf("a safe name was changed: %v", seen)
	}
	again := bridgeNames(byServer)
	for i := range descs {
		if descs[i].Name != again[i].Name {
			t.Errorf("names not stable: %q vs %q", descs[i].Name, again[i].Name)
		}
	}
	if s, p, ok := ParsePromptName(PromptName("github", "triage")); !ok || s != "github" || p != "triage" {
		t.Error("prompt name round trip")
	}
	if s, u, ok := ParseResourceName(ResourceName("docs", "file:///a:b")); !ok || s != "docs" || u != "file:///a:b" {
		t.Error("resource name round trip")
	}
}
