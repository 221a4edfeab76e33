// Package testbin builds the programs tests run as separate processes,
// the way people and operators do: ./cmd/mcpgate with the race detector
// when the tests have it, so a race in a process fails its test too (or
// without, McpgateWithoutRace, where the same code runs in-process under
// the detector anyway), and any other main package with Build. Each is
// linked once per `go test` run, whichever package's tests ask first, and
// shared through the user's cache (see Build).
//
//	func TestMain(m *testing.M) {
//		testbin.NoExitPause()
//		goleak.VerifyTestMain(testbin.Removing(m))
//	}
//	...
//	bin := testbin.Mcpgate(t) // skips under -short
//	var out testbin.Output    // the process's stderr, read while it runs
//	cmd.Stderr = &out
package testbin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// Race says the tests run with the race detector, and so does the binary.
const Race = raceEnabled

// Mcpgate returns the path of ./cmd/mcpgate built for this test run, with
// the race detector when the tests have it. A test under -short is
// skipped instead: the build takes a while.
func Mcpgate(t testing.TB) string {
	t.Helper()
	return Build(t, "./cmd/mcpgate", raceEnabled)
}

// McpgateWithoutRace is ./cmd/mcpgate built without the race detector,
// for processes whose code the race detector covers elsewhere (the same
// commands run in-process under -race) and that a test starts by the
// dozen: a race-built process takes several times the CPU.
func McpgateWithoutRace(t testing.TB) string {
	t.Helper()
	return Build(t, "./cmd/mcpgate", false)
}

var builds struct {
	mu   sync.Mutex
	done map[string]*built
}

type built struct {
	once      sync.Once
	path, tmp string // tmp: a folder of this process's own, removed by Remove
	err       error
}

// Build returns the path of the main package pkg (relative to the module
// root, "./cmd/mcpgate"), built with -race when race is true, once per
// test binary. The binary is kept in the user's cache under a name made
// from the checkout's path and the build settings, and `go build -o`
// there relinks only when its inputs changed (its own up-to-date check,
// the one `go install` uses): the test binaries of one `go test ./...`
// share one link instead of each making its own, and a changed source
// is never run stale. A lock file keeps two test binaries from building
// it at once. Skips under -short.
func Build(t testing.TB, pkg string, race bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds " + pkg)
	}
	key := pkg
	if race {
		key += " -race"
	}
	builds.mu.Lock()
	if builds.done == nil {
		builds.done = map[string]*built{}
	}
	b := builds.done[key]
	if b == nil {
		b = &built{}
		builds.done[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.path, b.tmp, b.err = build(pkg, race) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// root is the module's root folder.
func root() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

func build(pkg string, race bool) (path, tmp string, err error) {
	name := filepath.Base(pkg)
	if race {
		name += "-race"
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	goBuild := func(out string) error {
		// -trimpath keeps the checkout's path out of what the build
		// cache keys on, so a fresh clone links from packages another
		// checkout of the same sources compiled.
		args := []string{"build", "-trimpath", "-o", out}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = root()
		if msg, err := cmd.CombinedOutput(); err != nil {
			return errors.New("go build " + pkg + ": " + err.Error() + "\n" + string(msg))
		}
		return nil
	}
	if dir, ok := sharedDir(); ok {
		unlock, err := lock(filepath.Join(dir, "lock"))
		if err == nil {
			defer unlock()
			path = filepath.Join(dir, name)
			return path, "", goBuild(path)
		}
	}
	// No cache to share (or no file locks here): a folder of our own.
	if tmp, err = os.MkdirTemp("", "mcpgate-test-bin-"); err != nil {
		return "", "", err
	}
	path = filepath.Join(tmp, name)
	return path, tmp, goBuild(path)
}

// sharedDir is the cache folder for this checkout and build settings:
// two checkouts (worktrees) never replace each other's binaries, and
// settings go build takes from the environment get folders of their own.
func sharedDir() (string, bool) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", false
	}
	abs, err := filepath.Abs(root())
	if err != nil {
		return "", false
	}
	h := sha256.New()
	h.Write([]byte(abs))
	for _, k := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GOTOOLCHAIN"} {
		h.Write([]byte("\x00" + k + "=" + os.Getenv(k)))
	}
	dir := filepath.Join(cache, "mcpgate-test", "bin-"+hex.EncodeToString(h.Sum(nil)[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false
	}
	return dir, true
}

// Remove deletes the binaries this test binary built in folders of its
// own (the shared ones stay, for the next test binary); TestMain calls it
// after the tests ran.
func Remove() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	for _, b := range builds.done {
		if b.tmp != "" {
			os.RemoveAll(b.tmp)
		}
	}
}

// Removing runs m's tests, then removes the binaries: what TestMain hands
// to goleak.VerifyTestMain (or calls Run on).
func Removing(m *testing.M) interface{ Run() int } { return removing{m} }

type removing struct{ m *testing.M }

func (r removing) Run() int {
	code := r.m.Run()
	Remove()
	return code
}

// Output collects what a process writes, safe to read while it runs.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// NoExitPause is the first call of every package's TestMain. A program
// built with -race waits a second before it exits (the race detector's
// atexit_sleep_ms, for goroutines still running as main returns), so
// each of `go test -race ./...`'s thirty test binaries held a place in
// the run for a second doing nothing, and each race-built mcpgate a test
// starts made that test wait a second more. With -race on Unix it re-runs
// the test binary in place (exec: same process, arguments and output)
// with GORACE=atexit_sleep_ms=0 added, which every process the tests
// start inherits; with a GORACE that already sets atexit_sleep_ms, or
// without -race, it does nothing. Races are found as before: the testing
// package fails the test a race happens in, and a race after the tests
// still makes the binary exit with status 66.
func NoExitPause() { skipExitPause() }

// Waiting raises how many parallel tests run at once to n, for a package
// whose tests spend their time waiting on processes and servers rather
// than computing: the default, one per CPU, leaves a two-core machine
// idle while they wait. A -test.parallel given on the command line wins.
// Call it from TestMain, before m.Run.
func Waiting(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n)) // the testing package always defines it
	}
}
