package testbin

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSourceKeyFollowsWhatABuildReads: the folder a binary is kept in
// changes with every file a build can read (a Go file, an embedded asset,
// go.sum) and with nothing it cannot (a test, testdata, a hidden folder),
// and not with the checkout's path.
func TestSourceKeyFollowsWhatABuildReads(t *testing.T) {
	write := func(root, rel, body string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tree := func() string {
		root := t.TempDir()
		write(root, "go.mod", "module x\n")
		write(root, "go.sum", "")
		write(root, "main.go", "package main\n")
		write(root, "web/assets/app.js", "1")
		write(root, "main_test.go", "package main\n")
		write(root, "testdata/in.json", "{}")
		write(root, ".git/HEAD", "ref")
		return root
	}
	key := func(root string) string {
		t.Helper()
		k, err := sourceKey(root)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, b := tree(), tree()
	base := key(a)
	if key(b) != base {
		t.Fatal("two checkouts of the same sources have different keys")
	}
	for _, ignored := range []string{"main_test.go", "testdata/in.json", ".git/HEAD", "README.md", "internal/cli/cli.test", "cpu.prof", "mem.pprof"} {
		write(b, ignored, "changed")
		if key(b) != base {
			t.Errorf("changing %s, which no build reads, changed the key", ignored)
		}
	}
	for _, read := range []string{"main.go", "web/assets/app.js", "go.sum", "cmd/new.go"} {
		c := tree()
		write(c, read, "package main // changed\n")
		if key(c) == base {
			t.Errorf("changing %s did not change the key", read)
		}
	}
	t.Setenv("GOFLAGS", "-tags=other")
	if key(a) == base {
		t.Error("GOFLAGS did not change the key")
	}
}

// TestPruneSharedKeepsWhatIsInUse: folders unused since the cutoff go,
// the one in use and recent ones stay, and nothing else is touched.
func TestPruneSharedKeepsWhatIsInUse(t *testing.T) {
	parent := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(parent, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keep := mk("src-current", old)
	stale, legacy := mk("src-stale", old), mk("bin-legacy", old)
	recent := mk("src-recent", time.Now())
	other := mk("elsewhere", old)
	pruneShared(parent, keep, time.Now().Add(-24*time.Hour))
	for p, want := range map[string]bool{keep: true, stale: false, legacy: false, recent: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: kept %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
