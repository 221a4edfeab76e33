//go:build !race || !unix

package testbin

// skipExitPause does nothing: without the race detector there is no
// pause, and where exec is not a system call the pause stays.
func skipExitPause() {}
