package cli

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/serve"
)

// logJSON is what `mcpgate log --json` prints.
type logJSON struct {
	Entries []serve.LogEntryJSON `json:"entries"`
}

func parseLog(t *testing.T, r result) logJSON {
	t.Helper()
	var l logJSON
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || l.Entries == nil {
		t.Fatalf("log --json: %v\n%s", err, r)
	}
	return l
}

// findCall returns the logged tools/call of tool, failing if there is none.
func findCall(t *testing.T, l logJSON, server, tool string) serve.LogEntryJSON {
	t.Helper()
	for _, e := range l.Entries {
		if e.Server == server && e.Method == "tools/call" && e.Tool == tool {
			return e
		}
	}
	t.Fatalf("no tools/call of %s/%s in the log: %+v", server, tool, l.Entries)
	return serve.LogEntryJSON{}
}

func TestLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Nothing logged yet: say so, and create nothing.
	r := h.mustRun(0, "log")
	if r.stdout != "" || !strings.Contains(r.stderr, "No requests logged yet") {
		t.Errorf("empty log:\n%s", r)
	}
	if _, err := os.Stat(h.dataDir); !os.IsNotExist(err) {
		t.Errorf("log created the data directory: %v", err)
	}
	if l := parseLog(t, h.mustRun(0, "log", "--json")); len(l.Entries) != 0 {
		t.Errorf("empty log as JSON: %+v", l.Entries)
	}

	srv := fake.Start(t, nil)
	h.mustRun(0, "add", "demo", srv.URL)
	h.mustRun(0, "call", "demo", "echo", `{"text":"hi"}`)

	l := parseLog(t, h.mustRun(0, "log", "--json"))
	e := findCall(t, l, "demo", "echo")
	if e.Outcome != "ok" || e.HTTPStatus != 200 || e.BytesIn <= 0 || e.BytesOut <= 0 || e.DurationMs <= 0 || e.Time.IsZero() {
		t.Errorf("the call's entry: %+v", e)
	}
	if !slices.ContainsFunc(l.Entries, func(e serve.LogEntryJSON) bool {
		return (e.Method == "initialize" || e.Method == "server/discover") && e.Outcome == "ok"
	}) {
		t.Errorf("no initialize or server/discover in the log: %+v", l.Entries)
	}

	last := parseLog(t, h.mustRun(0, "log", "--json", "--last", "1"))
	if len(last.Entries) != 1 || last.Entries[0] != l.Entries[len(l.Entries)-1] {
		t.Errorf("--last 1: %+v, want the newest of %d", last.Entries, len(l.Entries))
	}

	r = h.mustRun(0, "log")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(l.Entries)+1 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("table with %d entries:\n%s", len(l.Entries), r.stdout)
	}
	found := false
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		// date, time, server, method, tool, ms, outcome, status, in, out
		if len(f) == 10 && f[2] == "demo" && f[3] == "tools/call" && f[4] == "echo" && f[6] == "ok" && f[7] == "200" {
			found = true
		}
	}
	if !found {
		t.Errorf("no row for the call:\n%s", r.stdout)
	}

	h.mustRun(exitUsage, "log", "--last", "0")
	h.mustRun(exitUsage, "log", "extra")
}

func TestLogFailure(t *testing.T) {
	t.Parallel()
	hook := fake.Status500()
	bad := fake.StartHostile(t, fake.HostileOptions{CallTool: hook.Call})
	h := newHarness(t)
	h.mustRun(0, "add", "bad", bad.URL)
	h.mustRun(1, "call", "bad", "ping")
	e := findCall(t, parseLog(t, h.mustRun(0, "log", "--json")), "bad", "ping")
	if e.Outcome != "http" || e.HTTPStatus != 500 {
		t.Errorf("the failed call's entry: %+v", e)
	}
}

func TestLogKeepsNoSecrets(t *testing.T) {
	t.Parallel()
	const token, arg = "tok-SECRET-123", "arg-SECRET-456"
	srv := fake.Start(t, &fake.Options{BearerToken: token})
	h := newHarness(t)
	h.env["DEMO_TOKEN"] = token
	h.mustRun(0, "add", "demo", srv.URL, "--bearer-token-env", "DEMO_TOKEN")
	h.mustRun(0, "call", "demo", "echo", `{"text":"`+arg+`"}`)

	for _, args := range [][]string{{"log", "--json"}, {"log"}} {
		r := h.mustRun(0, args...)
		if !strings.Contains(r.stdout, "echo") {
			t.Fatalf("mcpgate %s does not show the call:\n%s", strings.Join(args, " "), r)
		}
		for _, secret := range []string{token, arg} {
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("mcpgate %s shows %q:\n%s", strings.Join(args, " "), secret, r)
			}
		}
	}
}

// TestLogAcrossProcesses checks that `mcpgate log` shows what another
// mcpgate process did: the log lives in the shared store.
func TestLogAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	p := newProcs(t)
	p.mustRun(0, "add", "demo", srv.URL, "--auth", "none")
	p.mustRun(0, "call", "demo", "echo", `{"text":"from another process"}`)
	e := findCall(t, parseLog(t, p.mustRun(0, "log", "--json")), "demo", "echo")
	if e.Outcome != "ok" || e.HTTPStatus != 200 {
		t.Errorf("the other process's call: %+v", e)
	}
}
