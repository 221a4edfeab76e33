//go:build unix

package cli

import (
	"os"
	"syscall"
)

// pollable returns a copy of s on the runtime's poller when s is a pipe
// or a socket, and s otherwise, with what puts things back as they were.
//
// A read of a blocking pipe holds a thread in the system call while it
// waits, and under load the runtime's monitor keeps taking that thread's
// processor back, waking every 20 µs to do so: serving a host over stdio,
// a fifth of the process's CPU went to the monitor. On the poller a
// waiting read holds nothing (the serve process's CPU per call fell by
// about a tenth; docs/performance.md). The copy is a duplicate descriptor
// set non-blocking; that mode belongs to the pipe's end, which is the
// process's own (the host holds the other end), and done puts it back.
// A terminal, a file, or a descriptor that cannot be duplicated is
// returned as it is.
func pollable(s any) (_ any, done func()) {
	nothing := func() {}
	f, ok := s.(*os.File)
	if !ok {
		return s, nothing
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return s, nothing
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return s, nothing
	}
	dup := -1
	rc.Control(func(fd uintptr) {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		if d, err := syscall.Dup(int(fd)); err == nil {
			syscall.CloseOnExec(d)
			dup = d
		}
	})
	if dup < 0 {
		return s, nothing
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return s, nothing
	}
	// os.NewFile sees the descriptor non-blocking and polls it.
	p := os.NewFile(uintptr(dup), f.Name())
	return p, func() {
		if rc, err := p.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
		}
		p.Close()
	}
}
