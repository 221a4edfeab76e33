package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

func TestSearch(t *testing.T) {
	t.Parallel()
	a := fake.Start(t, nil)
	b := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "one", a.URL, "--auth", "none")
	h.mustRun(0, "add", "two", b.URL, "--auth", "none")

	r := h.mustRun(0, "search", "add", "two", "numbers", "together", "--json", "--limit", "3")
	var got struct {
		Results []struct {
			Server, Tool, Description string
			Score                     float64
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("search --json: %v\n%s", err, r.stdout)
	}
	if len(got.Results) != 3 || got.Results[0].Tool != "add" || got.Results[0].Score <= 0 {
		t.Fatalf("results: %+v", got.Results)
	}
	for i := 1; i < len(got.Results); i++ {
		if got.Results[i].Score > got.Results[i-1].Score {
			t.Errorf("not best first: %+v", got.Results)
		}
	}
	servers := map[string]bool{}
	for _, res := range got.Results[:2] {
		servers[res.Server] = true
	}
	if !servers["one"] || !servers["two"] {
		t.Errorf("both servers' add should lead: %+v", got.Results)
	}

	r = h.mustRun(0, "search", "echo")
	if !strings.Contains(r.stdout, "echo") {
		t.Errorf("human output: %q", r.stdout)
	}
	h.mustRun(exitUsage, "search")
	h.mustRun(exitUsage, "search", "x", "--limit", "0")

	// A server that went away is still searched in the catalog it last
	// listed; one never listed cannot be.
	a.Stop()
	r = h.run("search", "echo")
	if r.code != 0 || !strings.Contains(r.stdout, "one") {
		t.Errorf("a stopped server with a stored catalog: %d %q %q", r.code, r.stdout, r.stderr)
	}
	c := fake.Start(t, nil)
	h.mustRun(0, "add", "three", c.URL, "--auth", "none")
	c.Stop()
	r = h.run("search", "echo")
	if r.code != exitFail || !strings.Contains(r.stderr, "three") {
		t.Errorf("a server that cannot be searched: %d %q", r.code, r.stderr)
	}
}
