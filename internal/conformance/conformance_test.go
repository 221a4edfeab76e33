// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in .ci/node) against mcpgate
// as a client: the suite starts its scenario servers and authorization
// servers on loopback and runs ./driver, which drives the mcpgate binary
// as a person would.
//
// Each scenario is judged as the suite judges a scenario run alone: no
// failed check, no warning, and the client exits 0 unless the scenario
// expects a correct client to give up.
package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/nodetest"
	"github.com/mcpgate/mcpgate/internal/testbin"
)

// The revision whose required client scenarios must all pass.
const revision = "2026-07-28"

// pending lists the scenarios still being worked on, by the run that
// names them ("2026-07-28/…" or "all/…"); they are skipped with the
// reason. It must end up empty.
var pending = map[string]string{}

// notRequired are the scenarios of the whole suite mcpgate does not claim:
// the skills extension (SEP-2640) is not part of mcpgate.
var notRequired = regexp.MustCompile(`^sep-2640-`)

func TestConformance(t *testing.T) {
	tools := nodetest.Find(t)
	bins := build(t)

	required := scenarios(t, tools, "--client", "--requirements", revision)
	all := scenarios(t, tools, "--client")
	if len(required) == 0 || len(all) == 0 {
		t.Fatal("the suite listed no client scenarios")
	}

	// Each run starts node, the driver and several mcpgate processes, and
	// mostly waits on loopback; a few at a time keep it quick without
	// starving the machine.
	sem := make(chan struct{}, 4)
	t.Run(revision, func(t *testing.T) {
		for _, sc := range required {
			t.Run(sc, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				runScenario(t, tools, bins, sc, "--spec-version", revision, "--force")
			})
		}
	})
	t.Run("all", func(t *testing.T) {
		for _, sc := range all {
			if notRequired.MatchString(sc) {
				continue
			}
			t.Run(sc, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				runScenario(t, tools, bins, sc)
			})
		}
	})
}

type binaries struct {
	mcpgate, driver, browser string
}

// build compiles mcpgate and the driver once for the whole test, without
// the race detector: the suite judges what mcpgate says on the wire, and
// the code those processes run is raced in-process by the packages' own
// tests (manager, oauth, internal/cli).
func build(t *testing.T) binaries {
	t.Helper()
	return binaries{
		mcpgate: testbin.McpgateWithoutRace(t),
		driver:  testbin.Build(t, "./internal/conformance/driver", false),
		browser: fake.BuildBrowser(t),
	}
}

var listed = regexp.MustCompile(`^\s+- (\S+)`)

// scenarios lists client scenarios as the suite names them. With
// --requirements only the scored ones count: the list stops where the
// suite starts naming those it runs without scoring.
func scenarios(t *testing.T, tools *nodetest.Tools, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := tools.Command(ctx, "conformance", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("conformance list %s: %v", strings.Join(args, " "), err)
	}
	var names []string
	inClient := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Client scenarios"):
			inClient = true
		case strings.HasPrefix(line, "Run and reported, but never scored"),
			strings.HasPrefix(line, "Authorization server scenarios"),
			strings.HasPrefix(line, "Server scenarios"):
			inClient = false
		case inClient:
			if m := listed.FindStringSubmatch(line); m != nil {
				names = append(names, m[1])
			}
		}
	}
	return names
}

// runScenario runs one scenario alone and fails the test unless the suite
// judges it passed.
func runScenario(t *testing.T, tools *nodetest.Tools, b binaries, scenario string, extra ...string) {
	if why, ok := pending[strings.TrimPrefix(t.Name(), "TestConformance/")]; ok {
		t.Skip("pending: " + why)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"client", "--command", b.driver, "--scenario", scenario, "-o", out}, extra...)
	cmd := tools.Command(ctx, "conformance", args...)
	cmd.Env = append(cmd.Env, "MCPGATE_BIN="+b.mcpgate, "FAKEBROWSER="+b.browser)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if err == nil && strings.Contains(buf.String(), "OVERALL: PASSED") {
		return
	}
	t.Errorf("scenario %s failed (%v):\n%s", scenario, err, summary(buf.String()))
}

// summary keeps the part of the suite's report that says what failed, and
// the driver's transcript of mcpgate commands.
func summary(report string) string {
	var b strings.Builder
	keep := false
	for _, line := range strings.Split(report, "\n") {
		switch {
		case strings.HasPrefix(line, "Checks:"), strings.HasPrefix(line, "Stderr:"),
			strings.HasPrefix(line, "Failed Checks:"), strings.HasPrefix(line, "Warning Checks:"),
			strings.Contains(line, "CLIENT"):
			keep = true
		case strings.HasPrefix(line, "Test Results:"), strings.HasPrefix(line, "Stdout:"):
			keep = false
		}
		if keep {
			fmt.Fprintln(&b, line)
		}
	}
	if b.Len() == 0 {
		return report
	}
	if b.Len() > 8000 {
		return b.String()[:8000] + "\n…"
	}
	return b.String()
}
