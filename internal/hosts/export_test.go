package hosts

import "testing"

// SetRename replaces the rename step of Apply for the rest of the test.
func SetRename(t testing.TB, f func(oldpath, newpath string) error) {
	old := rename
	rename = f
	t.Cleanup(func() { rename = old })
}
