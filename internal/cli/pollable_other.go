//go:build !unix

package cli

// pollable returns s: only Unix pipes move to the poller.
func pollable(s any) (_ any, done func()) { return s, func() {} }
