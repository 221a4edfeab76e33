//go:build !unix

package testbin

import "errors"

// lock is not offered here: each test binary builds in a folder of its
// own.
func lock(string) (func(), error) { return nil, errors.New("no file locks") }
