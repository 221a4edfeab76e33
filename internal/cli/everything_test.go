package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/nodetest"
)

// The reference server @modelcontextprotocol/server-everything (pinned in
// .ci/node), driven with the commands a person would use: it is built on
// the official TypeScript SDK and speaks the session era, so this is
// mcpgate against a real implementation other than the go-sdk.
func TestEverythingServer(t *testing.T) {
	t.Parallel()
	x := nodetest.Find(t)
	url := x.StartEverything(t)
	h := newHarness(t)
	h.mustRun(0, "add", "ev", url)

	var status struct {
		Servers []struct {
			State           string `json:"state"`
			ProtocolVersion string `json:"protocolVersion"`
			Tools           int    `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(h.mustRun(0, "status", "--json").stdout), &status); err != nil {
		t.Fatal(err)
	}
	if st := status.Servers[0]; st.State != "ready" || !strings.HasPrefix(st.ProtocolVersion, "2025-") || st.Tools < 10 {
		t.Fatalf("status: %+v", st)
	}

	var tools struct {
		Servers []struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(h.mustRun(0, "list", "ev", "--json").stdout), &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Servers[0].Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"echo", "get-sum", "get-structured-content", "trigger-long-running-operation", "trigger-elicitation-request"} {
		if !slices.Contains(names, want) {
			t.Errorf("list lacks %s: %v", want, names)
		}
	}

	if r := h.mustRun(0, "call", "ev", "echo", `{"message":"hello there"}`); !strings.Contains(r.stdout, "hello there") {
		t.Errorf("echo: %s", r)
	}
	if r := h.mustRun(0, "call", "ev", "get-sum", `{"a":2,"b":40}`); !strings.Contains(r.stdout, "42") {
		t.Errorf("get-sum: %s", r)
	}
	var structured struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	r := h.mustRun(0, "call", "ev", "get-structured-content", `{"location":"Chicago"}`, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &structured); err != nil || structured.StructuredContent["temperature"] == nil {
		t.Errorf("get-structured-content --json: %s", r)
	}
	if r := h.mustRun(0, "call", "ev", "trigger-long-running-operation", `{"duration":0.3,"steps":3}`); !strings.Contains(r.stdout, "completed") {
		t.Errorf("long-running operation: %s", r)
	}

	// A question the server asks during a call, answered on stdin.
	r = h.runIn("Ada\nyes\n"+strings.Repeat("\n", 30), "call", "ev", "trigger-elicitation-request", "--elicit", "ask")
	if r.code != 0 || !strings.Contains(r.stdout, "Ada") {
		t.Errorf("elicitation: %s", r)
	}

	if r := h.mustRun(0, "prompts", "ev"); !strings.Contains(r.stdout, "simple-prompt") {
		t.Errorf("prompts: %s", r)
	}
	if r := h.mustRun(0, "prompt", "ev", "simple-prompt"); strings.TrimSpace(r.stdout) == "" {
		t.Errorf("simple-prompt rendered nothing: %s", r)
	}
	var resources struct {
		Servers []struct {
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
			Templates []struct {
				URITemplate string `json:"uriTemplate"`
			} `json:"resourceTemplates"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(h.mustRun(0, "resources", "ev", "--json").stdout), &resources); err != nil {
		t.Fatal(err)
	}
	rs := resources.Servers[0]
	if len(rs.Resources) == 0 || len(rs.Templates) == 0 {
		t.Fatalf("resources %+v", rs)
	}
	if r := h.mustRun(0, "read", "ev", rs.Resources[0].URI); strings.TrimSpace(r.stdout) == "" {
		t.Errorf("read %s: %s", rs.Resources[0].URI, r)
	}
}
