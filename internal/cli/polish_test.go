package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/spf13/cobra"
)

// `mcpgate completion SHELL` writes each shell's script, is listed in the
// help, and an unknown shell is a usage error, not the help with exit 0.
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for shell, marker := range map[string]string{
		"bash":       "# bash completion V2 for mcpgate",
		"zsh":        "#compdef mcpgate",
		"fish":       "complete -c mcpgate",
		"powershell": "Register-ArgumentCompleter",
	} {
		r := h.mustRun(0, "completion", shell)
		if !strings.Contains(r.stdout, marker) {
			t.Errorf("completion %s does not look like a %s script:\n%.300s", shell, shell, r.stdout)
		}
	}
	r := h.mustRun(exitUsage, "completion", "bsh")
	if !strings.Contains(r.stderr, `"bsh"`) || !strings.Contains(r.stderr, "did you mean bash") || r.stdout != "" {
		t.Errorf("completion bsh:\n%s", r)
	}
	if r := h.mustRun(0, "--help"); !strings.Contains(r.stdout, "completion") {
		t.Errorf("--help does not list completion:\n%s", r.stdout)
	}
}

// completions returns the candidates cobra's hidden __complete command
// gives for args (the last one being completed), without descriptions.
func (h *harness) completions(args ...string) []string {
	h.t.Helper()
	r := h.mustRun(0, append([]string{"__complete"}, args...)...)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		name, _, _ := strings.Cut(line, "\t")
		out = append(out, name)
	}
	return out
}

// Server names complete from the config file alone: no store is opened
// (nothing appears in the data directory) and nothing is connected (the
// servers' URLs have nobody listening).
func TestCompletionOfServerAndToolNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "docs", closedURL(t))
	h.mustRun(0, "add", "drive", closedURL(t))
	h.mustRun(0, "add", "mail", closedURL(t))
	if err := os.WriteFile(h.cfg, []byte(strings.Replace(string(h.configBytes()), `"url"`, `"disabledTools": ["wipe", "send"], "url"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", ""}, []string{"docs", "drive", "mail"}},
		{[]string{"call", "d"}, []string{"docs", "drive"}},
		{[]string{"disconnect", "m"}, []string{"mail"}},
		{[]string{"tools", "disable", ""}, []string{"docs", "drive", "mail"}},
		{[]string{"tools", "enable", "docs", ""}, []string{"send", "wipe"}},
		{[]string{"tools", "enable", "mail", ""}, nil},
		{[]string{"add", ""}, nil}, // a new name: nothing to offer
		{[]string{"call", "docs", ""}, nil},
	} {
		if got := h.completions(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("completing %q: %q, want %q", tc.args, got, tc.want)
		}
	}
	if _, err := os.Stat(h.dataDir); !os.IsNotExist(err) {
		t.Errorf("completing touched the data directory: %v", err)
	}
}

// A flag's bad value is named with what the flag wants, never with the
// parser's message (strconv.ParseInt, time.ParseDuration), and exits 2.
func TestFlagErrorsInOurWords(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "docs", closedURL(t))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"log", "--last", "abc"}, `--last "abc": must be a whole number`},
		{[]string{"search", "x", "--limit=1e"}, `--limit "1e": must be a whole number`},
		{[]string{"add", "x", "https://x.example/mcp", "--timeout", "5"}, `--timeout "5": must be a duration`},
		{[]string{"call", "docs", "t", "--timeout", "soon"}, `--timeout "soon": must be a duration`},
		{[]string{"call", "docs", "t", "--elicit", "nah"}, `--elicit "nah": must be one of ask, accept-defaults, decline`},
		{[]string{"auth", "docs", "--callback-port", "http"}, `--callback-port "http": must be a whole number`},
		{[]string{"log", "--last", "99999999999999999999"}, `--last "99999999999999999999": is too large`},
	} {
		r := h.mustRun(exitUsage, tc.args...)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
		for _, leak := range []string{"strconv", "ParseInt", "time: ", "invalid argument"} {
			if strings.Contains(r.stderr, leak) {
				t.Errorf("%q: a library message leaks: %q", tc.args, r.stderr)
			}
		}
	}
}

// --elicit decline is the person's choice, and the note says so; without
// a terminal the note says there was nobody to ask instead.
func TestElicitDeclineSaysThePersonChoseIt(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)
	r := h.mustRun(0, "call", "demo", "ask", "--elicit", "decline")
	if !strings.Contains(r.stderr, "declined, as you chose with --elicit decline") || strings.Contains(r.stderr, "no terminal") {
		t.Errorf("--elicit decline:\n%s", r)
	}
	r = h.mustRun(0, "call", "demo", "ask")
	if !strings.Contains(r.stderr, "no terminal to ask on") || strings.Contains(r.stderr, "you chose") {
		t.Errorf("no terminal:\n%s", r)
	}
}

// A command about one server names it in its error, whatever failed, and
// keeps the exit code of what failed.
func TestErrorsNameTheServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "dead", closedURL(t))
	for _, args := range [][]string{
		{"connect", "dead"}, {"reconnect", "dead"}, {"list", "dead"}, {"describe", "dead", "t"},
		{"call", "dead", "t"}, {"prompts", "dead"}, {"prompt", "dead", "p"}, {"resources", "dead"},
		{"read", "dead", "file:///x"},
	} {
		r := h.mustRun(exitFail, args...)
		if !strings.HasPrefix(r.stderr, "mcpgate: dead: ") || strings.Count(r.stderr, "dead") != 1 {
			t.Errorf("%q: %q, want the error to name dead once", args, r.stderr)
		}
	}
}

// connect, reconnect and disconnect print the server's status as JSON with
// --json, the same object status --json lists.
func TestConnectJSON(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)
	for op, state := range map[string]string{"connect": "ready", "reconnect": "ready", "disconnect": "disconnected"} {
		r := h.mustRun(0, op, "demo", "--json")
		var st struct {
			ID    string `json:"id"`
			State string `json:"state"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.ID != "demo" || st.State != state {
			t.Errorf("%s --json: %v\n%s", op, err, r)
		}
	}
}

// prompt checks the arguments against the prompt's declared ones before
// sending anything: a missing required or an undeclared argument is a
// usage error (exit 2) naming what the prompt takes, and no prompts/get
// reaches the server; an unknown prompt is not found, with the closest.
func TestPromptChecksArgumentsBeforeSending(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"greet"}, exitUsage, `prompt "greet" of server "demo" needs name=VALUE; it takes name (required)`},
		{[]string{"greet", "nam=Ada"}, exitUsage, `has no argument "nam"; it takes name (required); did you mean name?`},
		{[]string{"greet", "name=Ada", "tone=warm"}, exitUsage, `has no argument "tone"`},
		{[]string{"summarize", "length=short"}, exitUsage, `has no argument "length"; it takes style`},
		{[]string{"gret", "name=Ada"}, exitFail, `server "demo" has no prompt "gret"; did you mean greet?`},
	} {
		r := h.mustRun(tc.code, append([]string{"prompt", "demo"}, tc.args...)...)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("prompt demo %q: %q, want %q", tc.args, r.stderr, tc.want)
		}
	}
	if r := h.mustRun(0, "log", "--json"); strings.Contains(r.stdout, `"prompts/get"`) {
		t.Errorf("a prompt was sent with arguments it does not take:\n%s", r.stdout)
	}
	if r := h.mustRun(0, "prompt", "demo", "greet", "name=Ada"); !strings.Contains(r.stdout, "Hello, Ada!") {
		t.Errorf("the right arguments:\n%s", r)
	}
	if r := h.mustRun(0, "prompt", "demo", "summarize"); !strings.Contains(r.stdout, "Summarize") {
		t.Errorf("an optional argument left out:\n%s", r)
	}
	if r := h.mustRun(0, "log", "--json"); strings.Count(r.stdout, `"prompts/get"`) != 2 {
		t.Errorf("the log does not show the two prompts sent:\n%s", r.stdout)
	}
}

// tools list NAME shows every tool, the disabled ones too (also a disabled
// name the server no longer offers); tools disable of a tool the server
// does not offer is refused with the closest names and changes nothing.
func TestToolsListAndUnknownToolDisable(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)

	// Nothing listed demo yet, and no store: the name cannot be checked,
	// and no store is created to check it.
	r := h.mustRun(0, "tools", "disable", "demo", "retired")
	if !strings.Contains(r.stderr, "not checked") {
		t.Errorf("unchecked disable:\n%s", r)
	}
	h.mustRun(0, "connect", "demo")

	before := h.configBytes()
	r = h.mustRun(exitFail, "tools", "disable", "demo", "ech")
	if !strings.Contains(r.stderr, `server "demo" has no tool "ech"; did you mean echo?`) {
		t.Errorf("unknown tool:\n%s", r)
	}
	h.mustRun(exitFail, "tools", "enable", "demo", "ech")
	if !bytes.Equal(h.configBytes(), before) {
		t.Errorf("a refused tools command changed the config")
	}
	h.mustRun(0, "tools", "disable", "demo", "echo")

	r = h.mustRun(0, "tools", "list", "demo")
	for _, want := range []string{"echo      disabled", "add       enabled", "retired   disabled  (not offered by the server now)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tools list lacks %q:\n%s", want, r.stdout)
		}
	}
	r = h.mustRun(0, "tools", "list", "demo", "--json")
	var got struct {
		Server string    `json:"server"`
		Tools  []toolRow `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	rows := map[string]toolRow{}
	for _, row := range got.Tools {
		rows[row.Name] = row
	}
	if got.Server != "demo" || len(got.Tools) != 9 || rows["echo"].Enabled || !rows["echo"].Offered ||
		!rows["add"].Enabled || rows["retired"].Offered || rows["retired"].Enabled {
		t.Errorf("tools list --json:\n%s", r.stdout)
	}
	// list, the model's view, hides the disabled tool; tools list does not.
	if r := h.mustRun(0, "list", "demo"); strings.Contains(r.stdout, "echo") {
		t.Errorf("list shows a disabled tool:\n%s", r.stdout)
	}
	// A name that is disabled is enabled without a check, offered or not.
	h.mustRun(0, "tools", "enable", "demo", "retired")

	// A server that cannot be reached: saved, with a note saying it was not checked.
	h.mustRun(0, "add", "dead", closedURL(t))
	r = h.mustRun(0, "tools", "disable", "dead", "x")
	if !strings.Contains(r.stderr, `could not check that dead offers a tool "x"`) {
		t.Errorf("unreachable:\n%s", r)
	}
}

// "0 tools" never stands for "unknown": a server that never listed its
// catalog shows "-" in the table and -1 in JSON; counts read "1 tool".
func TestStatusNeverSaysZeroForUnknown(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "dead", closedURL(t))
	h.mustRun(0, "add", "off", closedURL(t))
	h.mustRun(0, "add", "demo", srv.URL)
	h.mustRun(0, "disable", "off")
	r := h.mustRun(exitFail, "status")
	counts := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 8 {
			counts[f[0]] = strings.Join(f[4:7], " ")
		}
	}
	if counts["dead"] != "- - -" || counts["off"] != "- - -" || counts["demo"] != "8 2 2" {
		t.Errorf("status counts %q:\n%s", counts, r.stdout)
	}
	r = h.mustRun(exitFail, "status", "--json", "dead")
	var got struct {
		Servers []struct {
			Tools   int `json:"tools"`
			Prompts int `json:"prompts"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Servers) != 1 || got.Servers[0].Tools != -1 || got.Servers[0].Prompts != -1 {
		t.Errorf("status --json dead: %v\n%s", err, r.stdout)
	}
	h.mustRun(0, "tools", "disable", "off", "x")
	if r := h.mustRun(0, "servers"); !strings.Contains(r.stdout, "1 tool disabled") {
		t.Errorf("servers:\n%s", r.stdout)
	}
}

// Every command that waits on a server draws a spinner saying what it
// waits for on a terminal's stderr, erased when done; without a terminal
// nothing of it is written.
func TestWaitsShowProgressOnATerminal(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"connect", "demo"}, "Connecting demo…"},
		{[]string{"status", "demo"}, "Connecting demo…"},
		{[]string{"list", "demo"}, "Listing tools of demo…"},
		{[]string{"tools", "list", "demo"}, "Listing tools of demo…"},
		{[]string{"tools", "disable", "demo", "echo"}, "Checking the tools of demo…"},
		{[]string{"describe", "demo", "add"}, "Connecting demo…"},
		{[]string{"call", "demo", "add", `{"a":1,"b":2}`}, "Calling demo/add…"},
		{[]string{"prompt", "demo", "greet", "name=Ada"}, "Connecting demo…"},
		{[]string{"read", "demo", "demo://readme"}, "Connecting demo…"},
		{[]string{"search", "echo"}, "Searching…"},
	} {
		h.errTTY = true
		r := h.run(tc.args...)
		if !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "\r\x1b[K") {
			t.Errorf("%q on a terminal: stderr %q, want a spinner %q", tc.args, r.stderr, tc.want)
		}
		h.errTTY = false
		if r := h.run(tc.args...); strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "\x1b[") {
			t.Errorf("%q without a terminal drew a spinner: %q", tc.args, r.stderr)
		}
	}
}

// cobraPhrases are cobra's and pflag's own wordings, which must never
// reach a person: each has an mcpgate wording instead.
var cobraPhrases = []string{"arg(s)", "requires at least", "accepts at most", "accepts between", "only received", "invalid argument", "strconv.", "Unknown help topic"}

// Every command refuses wrong arguments in mcpgate's words with exit 2:
// too many arguments for each, none for those that need some, and an
// unknown help topic.
func TestArgumentErrorsInOurWords(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	root := newRootCmd(&App{IO: &IO{}, Getenv: func(string) string { return "" }})
	var runs [][]string
	eachCommand(root, func(c *cobra.Command) {
		if c == root || c.Hidden || !c.Runnable() {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		words := strings.Fields(c.Use)
		if !strings.Contains(c.Use, "...") {
			runs = append(runs, append(slices.Clone(path), strings.Fields(strings.Repeat("x ", 6))...))
		}
		if len(words) > 1 && !strings.HasPrefix(words[1], "[") && strings.ToUpper(words[1]) == words[1] {
			runs = append(runs, path)
		}
	})
	runs = append(runs, []string{"help", "stauts"}, []string{"help", "tools", "nope"})
	if len(runs) < 30 {
		t.Fatalf("only %d runs: the walk missed commands", len(runs))
	}
	for _, args := range runs {
		r := h.run(args...)
		if r.code != exitUsage {
			t.Errorf("%q: exit %d, want 2:\n%s", args, r.code, r)
		}
		for _, p := range cobraPhrases {
			if strings.Contains(r.stderr, p) && !(p == "arg(s)" && strings.Contains(r.stderr, "argument(s)")) {
				t.Errorf("%q: cobra's wording %q leaks: %q", args, p, r.stderr)
			}
		}
	}
	if r := h.run("help", "stauts"); !strings.Contains(r.stderr, "did you mean status?") {
		t.Errorf("help stauts: %q", r.stderr)
	}
}
