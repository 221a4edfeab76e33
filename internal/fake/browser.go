package fake

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// browserSource is the fake browser's program, built standalone by
// BuildBrowser so that it works from any package's tests.
//
//go:embed fakebrowser/main.go
var browserSource []byte

var browser struct {
	once sync.Once
	path string
	err  error
}

// BuildBrowser returns the path of the fake browser (see the fakebrowser
// command), ready to be $BROWSER. It is built at most once per test binary,
// into the user's cache directory under a name that hashes its source and
// the Go version, so later test runs reuse it; where that directory is not
// writable it is built into a fresh temporary directory.
func BuildBrowser(t testing.TB) string {
	t.Helper()
	browser.once.Do(func() { browser.path, browser.err = buildBrowser() })
	if browser.err != nil {
		t.Fatalf("fake: building the fake browser: %v", browser.err)
	}
	return browser.path
}

func buildBrowser() (string, error) {
	sum := sha256.Sum256(append([]byte(runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n"), browserSource...))
	name := "fakebrowser-" + hex.EncodeToString(sum[:8])
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if cache, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(cache, "mcpgate-test")
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		if os.MkdirAll(dir, 0o700) == nil {
			if err := compileBrowser(dir, name); err == nil {
				return path, nil
			}
		}
	}
	dir, err := os.MkdirTemp("", "mcpgate-fakebrowser-")
	if err != nil {
		return "", err
	}
	if err := compileBrowser(dir, name); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// compileBrowser builds browserSource as a module of its own and moves the
// binary to dir/name in one rename, so concurrent test binaries never see a
// half-written file.
func compileBrowser(dir, name string) error {
	src, err := os.MkdirTemp("", "mcpgate-fakebrowser-src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module fakebrowser\n\ngo 1.22\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), browserSource, 0o600); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".tmp-"+name+"-"+fmt.Sprint(os.Getpid()))
	cmd := exec.Command(goCommand(), "build", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// goCommand finds the go command: on $PATH (go test puts its own GOROOT's
// bin first there), else in $GOROOT.
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

// UseBrowser makes the fake browser this test's $BROWSER (with t.Setenv, so
// not in parallel tests) and returns the path of its log, for [BrowserLog].
func UseBrowser(t testing.TB) (logPath string) {
	t.Helper()
	path := BuildBrowser(t)
	logPath = filepath.Join(t.TempDir(), "browser.log")
	t.Setenv("BROWSER", path)
	t.Setenv("FAKEBROWSER_LOG", logPath)
	return logPath
}

// BrowserLog returns the arguments of every run of the fake browser logged
// at path, oldest first: one []string per run, normally just the URL. A
// missing log means no run; an unreadable one panics, since the test can
// only be wrong then.
func BrowserLog(path string) [][]string {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		panic(fmt.Sprintf("fake: reading the browser log: %v", err))
	}
	var runs [][]string
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var args []string
		if err := json.Unmarshal(line, &args); err != nil {
			panic(fmt.Sprintf("fake: browser log line %q: %v", line, err))
		}
		runs = append(runs, args)
	}
	return runs
}
