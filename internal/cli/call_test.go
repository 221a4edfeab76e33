package cli

import (
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
)

func TestCallArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, source, stdin string
		want                string // the JSON passed on, or the error's text
		usage               bool
	}{
		{name: "omitted", want: "{}"},
		{name: "object", source: ` {"text": "hi"} `, want: `{"text": "hi"}`},
		{name: "stdin", source: "-", stdin: "{\"a\": 1}\n", want: `{"a": 1}`},
		{name: "syntax error", source: `{"text": hi}`, want: "invalid character 'h' looking for beginning of value at byte 10", usage: true},
		{name: "truncated", source: `{"text": "hi"`, want: "ends early", usage: true},
		{name: "array", source: `[1]`, want: "must be a JSON object", usage: true},
		{name: "string", source: `"x"`, want: "not a string", usage: true},
		{name: "trailing data", source: `{} {}`, want: "unexpected data after the object", usage: true},
		{name: "empty stdin", source: "-", stdin: "  \n", want: "the JSON on stdin is empty", usage: true},
		{name: "empty", source: " ", want: "is empty", usage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := callArgs(tt.source, strings.NewReader(tt.stdin))
			if tt.usage {
				if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("err = %v (exit %d), want a usage error saying %q", err, exitCode(err), tt.want)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestCallElicitation(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)

	r := h.mustRun(0, "call", "demo", "ask", "--elicit", "accept-defaults")
	if r.stdout != "accepted: name=Ada lucky=7\n" {
		t.Errorf("--elicit accept-defaults:\n%s", r)
	}
	// Without a terminal, the default is to decline.
	r = h.mustRun(0, "call", "demo", "ask")
	if r.stdout != "declined\n" || !strings.Contains(r.stderr, "declined") {
		t.Errorf("no terminal:\n%s", r)
	}
	r = h.mustRun(0, "call", "demo", "ask", "--elicit", "decline")
	if r.stdout != "declined\n" {
		t.Errorf("--elicit decline:\n%s", r)
	}
	// --elicit ask reads answers from stdin, terminal or not.
	r = h.runIn("Grace\n3\n", "call", "demo", "ask", "--elicit", "ask")
	if r.code != 0 || r.stdout != "accepted: name=Grace lucky=3\n" || !strings.Contains(r.stderr, "What is your name?") {
		t.Errorf("--elicit ask:\n%s", r)
	}
	// On a terminal, ask is the default.
	h.tty = true
	r = h.runIn("\n\n", "call", "demo", "ask")
	h.tty = false
	if r.code != 0 || r.stdout != "accepted: name=Ada lucky=7\n" {
		t.Errorf("terminal default:\n%s", r)
	}

	h.mustRun(exitUsage, "call", "demo", "ask", "--elicit", "maybe")
	h.mustRun(exitUsage, "call", "demo", "ask", "-", "--elicit", "ask")
}

func TestCallBadInvocation(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)
	requests := srv.Requests("tools/call")
	for _, args := range [][]string{
		{"call", "demo"},
		{"call", "demo", "echo", "{}", "extra"},
		{"call", "demo", "echo", "{bad"},
		{"call", "demo", "echo", "--timeout", "-1s"},
		{"call", "Demo!", "echo"},
	} {
		r := h.mustRun(exitUsage, args...)
		if !strings.HasPrefix(r.stderr, "mcpgate: ") {
			t.Errorf("%v: stderr:\n%s", args, r.stderr)
		}
	}
	if srv.Requests("tools/call") != requests {
		t.Error("a refused invocation reached the server")
	}
	r := h.mustRun(exitFail, "call", "demo", "nope")
	if !strings.Contains(r.stderr, "nope") {
		t.Errorf("unknown tool:\n%s", r)
	}
	h.mustRun(exitFail, "call", "other", "echo")
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)
	r := h.mustRun(exitFail, "call", "demo", "slow", `{"seconds": 10}`, "--timeout", "200ms")
	if !strings.Contains(r.stderr, "timed out") {
		t.Errorf("timeout:\n%s", r)
	}
}

// On a terminal, a call's spinner shows the progress the server reports.
func TestCallShowsServerProgress(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.errTTY = true
	h.mustRun(0, "add", "demo", srv.URL)
	r := h.mustRun(0, "call", "demo", "progress", `{"steps":20}`)
	if !strings.Contains(r.stderr, "/20 step ") || strings.TrimSpace(r.stdout) != "done" {
		t.Errorf("no progress in the spinner:\n%s", r)
	}
}
