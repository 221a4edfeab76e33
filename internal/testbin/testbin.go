// Package testbin builds the programs tests run as separate processes,
// the way people and operators do: ./cmd/mcpgate with the race detector
// when the tests have it, so a race in a process fails its test too (or
// without, McpgateWithoutRace, where the same code runs in-process under
// the detector anyway), and any other main package with Build. Each is
// linked once for a set of sources, by whichever test asks first, and
// kept in the user's cache for every later test binary, run and clone of
// those sources (see Build).
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
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
// test binary. The binary is kept in the user's cache, in a folder named
// by what it is built from (see sourceKey): every test binary of one `go
// test ./...`, every later run and every clone of the same sources find
// it there without running the go command, and a changed source gets a
// folder of its own, so a test never runs a stale binary and two
// checkouts never replace each other's. A lock file keeps two test
// binaries from building it at once. Skips under -short.
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
		// -trimpath keeps the checkout's path out of the binary and out
		// of what the build cache keys on, so a fresh clone links from
		// packages another checkout of the same sources compiled.
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
		path = filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			return path, "", nil
		}
		unlock, err := lock(filepath.Join(dir, "lock"))
		if err == nil {
			defer unlock()
			if _, err := os.Stat(path); err == nil {
				return path, "", nil // another test binary built it meanwhile
			}
			// Built beside its name and renamed: a binary at path is
			// always whole.
			part := path + ".part"
			if err := goBuild(part); err != nil {
				os.Remove(part)
				return "", "", err
			}
			return path, "", os.Rename(part, path)
		}
	}
	// No cache to share (or no file locks here): a folder of our own.
	if tmp, err = os.MkdirTemp("", "mcpgate-test-bin-"); err != nil {
		return "", "", err
	}
	path = filepath.Join(tmp, name)
	return path, tmp, goBuild(path)
}

// sharedDir is the cache folder of the binaries built from these sources
// with these settings, marked as used now; folders no test has used for
// a day are removed. The sources are hashed once per test binary, however
// many programs it builds.
var sharedDir = sync.OnceValues(func() (string, bool) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", false
	}
	key, err := sourceKey(root())
	if err != nil {
		return "", false
	}
	parent := filepath.Join(cache, "mcpgate-test")
	dir := filepath.Join(parent, "src-"+key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
	pruneShared(parent, dir, now.Add(-24*time.Hour))
	return dir, true
})

// sourceKey names what a binary of the module is built from: the Go
// toolchain, the settings go build takes from the environment, and the
// path and contents of every file of the module a build can read (all but
// tests, testdata, Markdown, what go test leaves behind (buildOutput),
// and hidden or underscore folders, which Go ignores too). The module's
// dependencies are named by go.mod and go.sum, which it covers.
func sourceKey(root string) (string, error) {
	h := sha256.New()
	h.Write([]byte(runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH))
	for _, k := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GOTOOLCHAIN", "GOWORK"} {
		h.Write([]byte("\x00" + k + "=" + os.Getenv(k)))
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".md") || buildOutput(name) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "\x00%s\x00", filepath.ToSlash(rel))
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:10]), nil
}

// buildOutput says a file is what go test leaves in a package's folder,
// which no build reads: the test binary of -c, -cpuprofile and the like
// (git ignores it), and a profile. Counting one would make a new key, and
// a rebuild of every binary, after a profiling run.
func buildOutput(name string) bool {
	return strings.HasSuffix(name, ".test") || strings.HasSuffix(name, ".prof") || strings.HasSuffix(name, ".pprof")
}

// pruneShared removes the folders of binaries beside keep that no test
// has used since before: each holds a hundred megabytes, and every change
// to the sources makes a new one.
func pruneShared(parent, keep string, before time.Time) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(parent, e.Name())
		if !e.IsDir() || p == keep || !(strings.HasPrefix(e.Name(), "src-") || strings.HasPrefix(e.Name(), "bin-")) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(before) {
			os.RemoveAll(p)
		}
	}
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
