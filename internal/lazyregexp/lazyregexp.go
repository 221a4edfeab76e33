// Package lazyregexp compiles a package's regular expression at its first
// use instead of at program start. Every mcpgate process starts with the
// same binary, and a search or a call would otherwise compile, and touch
// fresh memory for, the expressions of host configs, imports and logs it
// never reads.
package lazyregexp

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr once, at its first call,
// panicking there if expr is not a valid expression as regexp.MustCompile
// does; a test that uses the expression therefore checks it.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
