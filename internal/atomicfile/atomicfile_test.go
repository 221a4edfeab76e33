package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestWriteReplacesWholeOrNotAtAll: the new contents with the mode asked
// for; when the rename fails, the old file whole and no temporary file
// left beside it.
func TestWriteReplacesWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o644, os.Rename); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("contents %q, want new", got)
	}
	if fi, err := os.Stat(path); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", fi.Mode().Perm(), err)
	}

	failed := errors.New("disk gone")
	err := Write(path, []byte("newer"), 0o600, func(string, string) error { return failed })
	if !errors.Is(err, failed) {
		t.Fatalf("Write with a failing rename: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("after a failed rename: %q, want the old contents", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left beside the file: %v", entries)
	}
}

// TestWriteCacheReplacesWhole: the new contents, 0600, and no temporary
// file left beside it.
func TestWriteCacheReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache")
	for _, data := range []string{"first", "second"} {
		if err := WriteCache(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != data {
			t.Errorf("contents %q, want %q", got, data)
		}
	}
	if fi, err := os.Stat(path); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the folder, want the one", len(entries))
	}
}
