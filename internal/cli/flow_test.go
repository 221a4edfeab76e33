package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestFlow walks what a person does first: add a server, check it, look at
// its tools, call them, use its prompts and resources.
func TestFlow(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)

	r := h.mustRun(0, "add", "demo", srv.URL, "--auth", "none")
	if !strings.Contains(r.stdout, `Added server "demo"`) {
		t.Errorf("add output: %q", r.stdout)
	}

	t.Run("status --json", func(t *testing.T) {
		r := h.mustRun(0, "status", "--json")
		var got struct {
			Servers []map[string]any `json:"servers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("status --json is not JSON: %v\n%s", err, r.stdout)
		}
		if len(got.Servers) != 1 {
			t.Fatalf("want 1 server, got %d: %s", len(got.Servers), r.stdout)
		}
		s := got.Servers[0]
		want := map[string]any{
			"id": "demo", "name": "demo", "url": srv.URL, "auth": "none", "enabled": true, "state": "ready",
			"tools": 8.0, "prompts": 2.0, "resources": 2.0,
		}
		for k, v := range want {
			if !cmp.Equal(s[k], v) {
				t.Errorf("status.servers[0].%s = %v, want %v", k, s[k], v)
			}
		}
		if _, ok := s["error"]; ok {
			t.Errorf("a ready server has an error member: %s", r.stdout)
		}
	})

	t.Run("status", func(t *testing.T) {
		r := h.mustRun(0, "status", "demo")
		if !strings.Contains(r.stdout, "demo") || !strings.Contains(r.stdout, "ready") {
			t.Errorf("status output:\n%s", r.stdout)
		}
	})

	t.Run("list", func(t *testing.T) {
		r := h.mustRun(0, "list")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 8 {
			t.Fatalf("want 8 tool lines, got:\n%s", r.stdout)
		}
		found := false
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) >= 3 && f[0] == "demo" && f[1] == "echo" {
				found = strings.Contains(l, "Echoes the given text back.")
			}
		}
		if !found {
			t.Errorf("no line 'demo echo <description>' in:\n%s", r.stdout)
		}
	})

	t.Run("list --json", func(t *testing.T) {
		r := h.mustRun(0, "list", "demo", "--json")
		var got struct {
			Servers []struct {
				ID    string `json:"id"`
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"servers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Servers) != 1 || got.Servers[0].ID != "demo" || len(got.Servers[0].Tools) != 8 {
			t.Errorf("list --json: %s", r.stdout)
		}
	})

	t.Run("describe", func(t *testing.T) {
		r := h.mustRun(0, "describe", "demo", "echo")
		for _, want := range []string{"demo/echo", "Echoes the given text back.", "Annotations:", "Input schema:", `"text"`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("describe output lacks %q:\n%s", want, r.stdout)
			}
		}
		r = h.mustRun(0, "describe", "demo", "echo", "--json")
		var tool map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &tool); err != nil || tool["name"] != "echo" || tool["inputSchema"] == nil {
			t.Errorf("describe --json: %v\n%s", err, r.stdout)
		}
	})

	t.Run("call", func(t *testing.T) {
		r := h.mustRun(0, "call", "demo", "echo", `{"text":"hello from mcpgate"}`)
		if r.stdout != "hello from mcpgate\n" {
			t.Errorf("call echo printed %q", r.stdout)
		}
	})

	t.Run("call from stdin", func(t *testing.T) {
		r := h.runIn(`{"a": 2, "b": 40}`, "call", "demo", "add", "-")
		if r.code != 0 || r.stdout != "42\n" {
			t.Errorf("call add - :\n%s", r)
		}
	})

	t.Run("call --json", func(t *testing.T) {
		r := h.mustRun(0, "call", "demo", "add", `{"a":2,"b":3}`, "--json")
		var got map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": "5"}},
			"structuredContent": map[string]any{"sum": 5.0},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("call --json (-want +got):\n%s", d)
		}
	})

	t.Run("call fail", func(t *testing.T) {
		r := h.mustRun(1, "call", "demo", "fail")
		if !strings.Contains(r.stderr, "the widget is broken") {
			t.Errorf("the tool's error text is not shown:\n%s", r)
		}
		r = h.mustRun(1, "call", "demo", "fail", "--json")
		if !strings.Contains(r.stdout, `"isError": true`) {
			t.Errorf("call fail --json:\n%s", r)
		}
	})

	t.Run("call without arguments", func(t *testing.T) {
		// echo requires text: the server answers with an error, not mcpgate.
		r := h.run("call", "demo", "echo")
		if r.code == 0 {
			t.Errorf("echo without text succeeded:\n%s", r)
		}
	})

	t.Run("prompts", func(t *testing.T) {
		r := h.mustRun(0, "prompts", "demo")
		for _, want := range []string{"greet", "(name*)", "summarize", "(style)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("prompts output lacks %q:\n%s", want, r.stdout)
			}
		}
		r = h.mustRun(0, "prompt", "demo", "greet", "name=Grace")
		if !strings.Contains(r.stdout, "Hello, Grace!") {
			t.Errorf("prompt greet:\n%s", r.stdout)
		}
		r = h.mustRun(0, "prompt", "demo", "greet", "name=Grace", "--json")
		if !strings.Contains(r.stdout, `"messages"`) {
			t.Errorf("prompt --json:\n%s", r.stdout)
		}
	})

	t.Run("resources", func(t *testing.T) {
		r := h.mustRun(0, "resources")
		for _, want := range []string{"fake://readme", "fake://data.json", "application/json"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("resources output lacks %q:\n%s", want, r.stdout)
			}
		}
		r = h.mustRun(0, "read", "demo", "fake://readme")
		if r.stdout != fake.ReadmeText+"\n" {
			t.Errorf("read printed %q", r.stdout)
		}
		r = h.mustRun(0, "read", "demo", "fake://data.json", "--json")
		if !strings.Contains(r.stdout, `"uri": "fake://data.json"`) {
			t.Errorf("read --json:\n%s", r.stdout)
		}
	})

	t.Run("servers --json", func(t *testing.T) {
		requests := srv.Connects()
		r := h.mustRun(0, "servers", "--json")
		var got struct {
			Servers []serverJSON `json:"servers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		want := []serverJSON{{
			ID: "demo", Name: "demo", URL: srv.URL, Auth: "none", Enabled: true,
			DisabledTools: []string{}, Scopes: []string{}, Headers: []string{}, Timeout: "1m0s",
		}}
		if d := cmp.Diff(want, got.Servers); d != "" {
			t.Errorf("servers --json (-want +got):\n%s", d)
		}
		if srv.Connects() != requests {
			t.Error("servers connected to the server")
		}
	})
}

// Every process closes what it opened: after each command the fake has
// seen one DELETE per session (session era), or the end of every
// subscriptions/listen stream (2026-07-28, which has no session).
func TestCommandsCloseTheirSessions(t *testing.T) {
	t.Parallel()
	for _, versions := range [][]string{fake.SessionEra, nil} {
		srv := fake.Start(t, &fake.Options{Versions: versions})
		h := newHarness(t)
		h.mustRun(0, "add", "demo", srv.URL)
		for _, args := range [][]string{
			{"status"}, {"list", "demo"}, {"call", "demo", "echo", `{"text":"x"}`}, {"read", "demo", "fake://readme"},
		} {
			h.mustRun(0, args...)
		}
		if versions != nil {
			if got, want := srv.Deletes(), srv.Connects(); got != want || want == 0 {
				t.Errorf("%d sessions initialized, %d deleted", want, got)
			}
			continue
		}
		// Counted by the listen requests' IDs: a command may also cancel a
		// request it gave up on (under load, a catalog refresh at exit).
		if got, want := srv.ListensEnded(), srv.Requests("subscriptions/listen"); got != want || want == 0 {
			t.Errorf("%d subscriptions/listen streams opened, %d ended", want, got)
		}
	}
}
