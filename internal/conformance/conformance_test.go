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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
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
	// The two lists (a node start each) while the binaries build.
	var required, all []scenario
	var errRequired, errAll error
	var listing sync.WaitGroup
	listing.Go(func() { required, errRequired = scenarios(tools, "--client", "--requirements", revision) })
	listing.Go(func() { all, errAll = scenarios(tools, "--client") })
	bins := build(t)
	listing.Wait()
	if err := errors.Join(errRequired, errAll); err != nil {
		t.Fatal(err)
	}
	if len(required) == 0 || len(all) == 0 {
		t.Fatal("the suite listed no client scenarios")
	}

	// A run alone starts node, the driver and several mcpgate processes,
	// and mostly waits on loopback; a few at a time keep it quick without
	// starving the machine. The same run is made once: its verdict is
	// kept for a second set that asks for it again.
	sem := make(chan struct{}, 4)
	var mu sync.Mutex
	verdicts := map[string]string{}
	alone := func(t *testing.T, sc string, extra ...string) {
		if why, ok := pending[strings.TrimPrefix(t.Name(), "TestConformance/")]; ok {
			t.Skip("pending: " + why)
		}
		key := strings.Join(append([]string{sc}, extra...), " ")
		mu.Lock()
		failure, ran := verdicts[key]
		mu.Unlock()
		if !ran {
			sem <- struct{}{}
			failure = runScenario(tools, bins, sc, extra...)
			<-sem
			mu.Lock()
			verdicts[key] = failure
			mu.Unlock()
		}
		if failure != "" {
			t.Error(failure)
		}
	}
	atRevision := []string{"--spec-version", revision, "--force"}
	t.Run(revision, func(t *testing.T) {
		clean := runSuite(t, tools, bins, "--requirements", revision)
		for _, sc := range required {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				if clean[sc.name] {
					return
				}
				alone(t, sc.name, atRevision...)
			})
		}
	})
	t.Run("all", func(t *testing.T) {
		clean := runSuite(t, tools, bins, "--suite", "all")
		for _, sc := range all {
			if notRequired.MatchString(sc.name) {
				continue
			}
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				if clean[sc.name] {
					return
				}
				// Alone, the suite runs a scenario at the revision that
				// introduced it, so one that exists only at revision is
				// the very run the first set made.
				if slices.Equal(sc.versions, []string{revision}) {
					alone(t, sc.name, atRevision...)
				} else {
					alone(t, sc.name)
				}
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

// listed is a scenario's line in the suite's list: its name, and the
// spec versions it applies at ("[2025-11-25,2026-07-28]", "[extension]").
var listed = regexp.MustCompile(`^\s+- (\S+)(?: \[([^\]]*)\])?`)

// scenario is a client scenario as the suite lists it.
type scenario struct {
	name     string
	versions []string
}

// scenarios lists client scenarios as the suite names them. With
// --requirements only the scored ones count: the list stops where the
// suite starts naming those it runs without scoring.
func scenarios(tools *nodetest.Tools, args ...string) ([]scenario, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := tools.Command(ctx, "conformance", append([]string{"list"}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("conformance list %s: %v", strings.Join(args, " "), err)
	}
	var list []scenario
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
				s := scenario{name: m[1]}
				if m[2] != "" {
					s.versions = strings.Split(m[2], ",")
				}
				list = append(list, s)
			}
		}
	}
	return list, nil
}

// runSuite runs a whole set of scenarios in one process of the suite, its
// parallel mode (--requirements or --suite), and returns those that passed
// there beyond doubt: every check a success or informational, and the
// driver's own line saying it exited 0 (the suite's parallel mode keeps
// the checks of each scenario but not the client's exit status, and a
// client it killed at the timeout writes no such line). Such a scenario
// passes as it would alone. Every other one is run again alone and judged
// by the suite there: the ones where a correct client must give up (the
// driver exits 1, which only the lone run's judgement allows), and any
// the parallel run failed or did not finish. Node's start, most of what
// a run costs, is paid once per set instead of once per scenario.
func runSuite(t *testing.T, tools *nodetest.Tools, b binaries, set ...string) map[string]bool {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"client", "--command", b.driver, "--timeout", "60000", "-o", out}, set...)
	cmd := tools.Command(ctx, "conformance", args...)
	cmd.Env = append(cmd.Env, "MCPGATE_BIN="+b.mcpgate, "FAKEBROWSER="+b.browser)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	// Its exit status judges the set as a whole; each scenario is judged
	// below, or alone.
	if err := cmd.Run(); err != nil && ctx.Err() != nil {
		t.Logf("the suite's parallel run (%s) did not finish: %v; every scenario runs alone", strings.Join(set, " "), err)
	}
	clean := map[string]bool{}
	_ = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(out, path)
		m := resultDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return nil
		}
		clean[m[1]] = passedClean(path)
		return filepath.SkipDir
	})
	return clean
}

// resultDir is the folder the suite saves a scenario's results in:
// its name, then the time it started.
var resultDir = regexp.MustCompile(`^(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// passedClean says a scenario's saved results are a pass as the suite
// judges a lone run: no check failed or warned, and the client exited 0.
func passedClean(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "checks.json"))
	if err != nil {
		return false
	}
	var checks []struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(raw, &checks) != nil || len(checks) == 0 {
		return false
	}
	for _, c := range checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			return false
		}
	}
	stdout, err := os.ReadFile(filepath.Join(dir, "stdout.txt"))
	return err == nil && slices.Contains(strings.Split(string(stdout), "\n"), exitedZero)
}

// exitedZero is the line the driver prints last when it exits 0.
const exitedZero = "driver: exit 0"

// runScenario runs one scenario alone and says why the suite judged it
// failed, or "" when it passed.
func runScenario(tools *nodetest.Tools, b binaries, scenario string, extra ...string) string {
	out, err := os.MkdirTemp("", "conformance-")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"client", "--command", b.driver, "--scenario", scenario, "-o", out}, extra...)
	cmd := tools.Command(ctx, "conformance", args...)
	cmd.Env = append(cmd.Env, "MCPGATE_BIN="+b.mcpgate, "FAKEBROWSER="+b.browser)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	if err == nil && strings.Contains(buf.String(), "OVERALL: PASSED") {
		return ""
	}
	return fmt.Sprintf("scenario %s failed (%v):\n%s", scenario, err, summary(buf.String()))
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
