// Package testbin builds the mcpgate command for tests that run it as
// separate processes, the way people and operators do: once per test
// binary, with the race detector when the tests have it, so a race in a
// process fails its test too.
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

var binary struct {
	once      sync.Once
	dir, path string
	err       error
}

// Mcpgate returns the path of ./cmd/mcpgate built for this test run. A
// test under -short is skipped instead: the build takes a while.
func Mcpgate(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the mcpgate binary")
	}
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "mcpgate-test-bin-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "mcpgate")
		if runtime.GOOS == "windows" {
			binary.path += ".exe"
		}
		args := []string{"build", "-o", binary.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		_, here, _, _ := runtime.Caller(0)
		build := exec.Command("go", append(args, "./cmd/mcpgate")...)
		build.Dir = filepath.Join(filepath.Dir(here), "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			binary.err = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// Remove deletes the binary, if one was built; TestMain calls it after
// the tests ran.
func Remove() {
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
}

// Removing runs m's tests, then removes the binary: what TestMain hands
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
