package lazyregexp

import "testing"

// TestNewCompilesAtFirstUseOnly: an expression is not compiled when New
// is called (a bad one does not panic there), is compiled once, and
// panics at its first use if bad.
func TestNewCompilesAtFirstUseOnly(t *testing.T) {
	bad := New(`(`) // compiled now, this would panic
	good := New(`^a+$`)
	if re := good(); re != good() || !re.MatchString("aaa") || re.MatchString("ab") {
		t.Errorf("good() = %v, not the one expression it compiled", re)
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic at its first use")
		}
	}()
	bad()
}
