//go:build unix

package cli

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPollablePipe: a pipe's end comes back on the poller (a read can
// have a deadline, which only a polled file can), reads what the pipe
// carries, and is blocking again once done.
func TestPollablePipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()

	got, done := pollable(r)
	p, ok := got.(*os.File)
	if !ok || p == r {
		t.Fatalf("pollable(pipe) = %T %v, want a new *os.File", got, got)
	}
	if err := p.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("the copy is not on the poller: %v", err)
	}
	if _, err := p.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read of an empty pipe past its deadline: %v", err)
	}
	p.SetReadDeadline(time.Time{})
	w.Write([]byte("hi"))
	buf := make([]byte, 2)
	if n, err := p.Read(buf); err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("read %q, %v; want \"hi\"", buf[:n], err)
	}

	done()
	if nonblocking(t, r) {
		t.Error("the pipe's end stayed non-blocking after done")
	}
}

// TestPollableLeavesOthers: what is not a pipe or a socket is returned as
// it is, and done does nothing to it.
func TestPollableLeavesOthers(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range []any{f, "not a file"} {
		got, done := pollable(s)
		if got != s {
			t.Errorf("pollable(%v) = %v, want it unchanged", s, got)
		}
		done()
	}
	if _, err := f.Write([]byte("still open")); err != nil {
		t.Errorf("done closed a file it did not make: %v", err)
	}
}

func nonblocking(t *testing.T, f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	rc.Control(func(fd uintptr) {
		flags, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	})
	return flags&syscall.O_NONBLOCK != 0
}
