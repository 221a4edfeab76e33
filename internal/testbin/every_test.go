package testbin_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryPackageSkipsTheExitPause: every package of the module with
// tests calls NoExitPause from its TestMain; one that does not makes
// `go test -race ./...` wait a second more for it, and its mcpgate
// processes a second each.
func TestEveryPackageSkipsTheExitPause(t *testing.T) {
	calls := regexp.MustCompile(`(?m)^\t(testbin\.)?NoExitPause\(\)$`)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	tests := map[string]bool{} // directory → calls NoExitPause
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		tests[dir] = tests[dir] || calls.MatchString(string(src))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 10 {
		t.Fatalf("found tests in only %d directories under %s", len(tests), root)
	}
	for dir, ok := range tests {
		if !ok {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s has tests but no TestMain calling testbin.NoExitPause()", rel)
		}
	}
}
