package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// closedURL is a loopback endpoint where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	return "http://" + closedAddr(t) + "/mcp"
}

func TestStatusNeedsAuthExits4(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, &fake.Options{BearerToken: "s3cret"})
	h := newHarness(t)
	h.env["TOKEN"] = "wrong"
	h.mustRun(0, "add", "api", srv.URL, "--bearer-token-env", "TOKEN")

	r := h.mustRun(exitAuth, "status", "--json")
	var got struct {
		Servers []struct {
			State string `json:"state"`
			Error *struct {
				Category   string `json:"category"`
				HTTPStatus int    `json:"httpStatus"`
				Message    string `json:"message"`
			} `json:"error"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Servers) != 1 || got.Servers[0].State != "needs-auth" || got.Servers[0].Error == nil ||
		got.Servers[0].Error.Category != "auth" || got.Servers[0].Error.HTTPStatus != 401 {
		t.Errorf("status --json:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, "wrong") {
		t.Error("the token's value was printed")
	}

	r = h.mustRun(exitAuth, "status", "api")
	if !strings.Contains(r.stdout, "needs-auth") || !strings.Contains(r.stdout, "$TOKEN") {
		t.Errorf("status api:\n%s", r)
	}
	r = h.mustRun(exitAuth, "call", "api", "echo", `{"text":"x"}`)
	if !strings.Contains(r.stderr, "mcpgate: ") {
		t.Errorf("call:\n%s", r)
	}
	h.mustRun(exitAuth, "list", "api")

	h.env["TOKEN"] = "s3cret"
	h.mustRun(0, "status", "api")
	h.mustRun(0, "call", "api", "echo", `{"text":"x"}`)
}

func TestStatusErrorExits1(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "gone", closedURL(t))
	r := h.mustRun(exitFail, "status")
	if !strings.Contains(r.stdout, "error") || !strings.Contains(r.stdout, "gone: error: ") {
		t.Errorf("status:\n%s", r)
	}
	r = h.mustRun(exitFail, "connect", "gone")
	if !strings.HasPrefix(r.stderr, "mcpgate: ") {
		t.Errorf("connect:\n%s", r)
	}
}

func TestStatusSkipsDisabledServers(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "off", closedURL(t), "--disabled")
	h.mustRun(0, "add", "on", srv.URL)
	r := h.mustRun(0, "status")
	if !strings.Contains(r.stdout, "disabled") || !strings.Contains(r.stdout, "ready") {
		t.Errorf("status:\n%s", r)
	}
	h.mustRun(0, "status", "off")
	r = h.mustRun(0, "list")
	if strings.Contains(r.stdout, "off") || strings.Contains(r.stderr, "off") {
		t.Errorf("list mentions the disabled server:\n%s", r)
	}
}

func TestStatusUnknownServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.mustRun(exitFail, "status", "nope")
	if !strings.Contains(r.stderr, "nope") {
		t.Errorf("status nope:\n%s", r)
	}
	h.mustRun(exitUsage, "status", "NOPE!")
	h.mustRun(exitUsage, "status", "a", "b")
}

// A server that fails is one line on stderr; the others are still listed,
// and the exit code says something failed.
func TestListAllWithAFailingServer(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "good", srv.URL)
	h.mustRun(0, "add", "bad", closedURL(t))

	for _, cmd := range []string{"list", "prompts", "resources"} {
		r := h.mustRun(exitFail, cmd)
		if !strings.Contains(r.stdout, "good") || strings.Contains(r.stdout, "bad") {
			t.Errorf("%s stdout:\n%s", cmd, r.stdout)
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "mcpgate: bad: could not list") {
			t.Errorf("%s stderr:\n%s", cmd, r.stderr)
		}
	}
	r := h.mustRun(exitFail, "list", "--json")
	var got struct {
		Servers []struct {
			ID    string            `json:"id"`
			Tools []json.RawMessage `json:"tools"`
			Error *struct {
				Category string `json:"category"`
			} `json:"error"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Servers) != 2 || got.Servers[0].ID != "bad" || got.Servers[0].Error == nil ||
		got.Servers[0].Error.Category != "network" || got.Servers[1].ID != "good" || len(got.Servers[1].Tools) != 8 {
		t.Errorf("list --json:\n%s", r.stdout)
	}
}

func TestConnectDisconnectReconnect(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)
	r := h.mustRun(0, "connect", "demo")
	if !strings.HasPrefix(r.stdout, "demo: ready (8 tools, 2 prompts, 2 resources; MCP 2026-07-28)") {
		t.Errorf("connect: %q", r.stdout)
	}
	r = h.mustRun(0, "reconnect", "demo")
	if !strings.HasPrefix(r.stdout, "demo: ready") {
		t.Errorf("reconnect: %q", r.stdout)
	}
	// A fresh process has no session of its own to close, and other
	// processes keep theirs: disconnect says both.
	r = h.mustRun(0, "disconnect", "demo")
	if !strings.Contains(r.stdout, "this process had no session with it, so none was closed") ||
		!strings.Contains(r.stdout, "Other mcpgate processes (serve, ui) keep their own sessions") ||
		!strings.Contains(r.stdout, "mcpgate disable demo") {
		t.Errorf("disconnect: %q", r.stdout)
	}
}

// status says which MCP version each server speaks.
func TestStatusShowsProtocolVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for id, versions := range map[string][]string{"new": nil, "old": {"2025-03-26"}} {
		srv := fake.Start(t, &fake.Options{Versions: versions})
		h.mustRun(0, "add", id, srv.URL)
	}
	r := h.mustRun(0, "status")
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "MCP") {
		t.Fatalf("header: %q", lines[0])
	}
	for _, want := range []string{"new   ready  2026-07-28", "old   ready  2025-03-26"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	var got struct {
		Servers []struct {
			ID              string `json:"id"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(h.mustRun(0, "status", "--json").stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Servers) != 2 || got.Servers[0].ProtocolVersion != "2026-07-28" || got.Servers[1].ProtocolVersion != "2025-03-26" {
		t.Errorf("status --json: %+v", got.Servers)
	}
}

// TestListingsRedactQuerySecrets: a URL with a credential in its query
// string (some servers take ?api_key=) is configured as it is, but
// servers, status, add and import print it with the values redacted.
func TestListingsRedactQuerySecrets(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	const secret = "qs-s3cret-value"
	r := h.mustRun(0, "add", "docs", srv.URL+"?api_key="+secret, "--auth", "none")
	for _, args := range [][]string{{"servers"}, {"servers", "--json"}, {"status"}, {"status", "--json"}, {"status", "docs"}} {
		r2 := h.mustRun(0, args...)
		r.stdout += r2.stdout
		r.stderr += r2.stderr
	}
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("a query-string secret was printed:\n%s", r)
	}
	if !strings.Contains(r.stdout, "api_key=…") {
		t.Errorf("the parameter's name is not shown:\n%s", r.stdout)
	}
	if !strings.Contains(string(h.configBytes()), secret) {
		t.Error("the config lost the URL as written")
	}
}
