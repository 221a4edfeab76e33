package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// isTerminal reports whether v is an *os.File open on a terminal. The null
// device is a character device too, but nobody types into it.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// startProgress draws a spinner with msg() on w until the returned stop is
// called, which erases it. It draws only when on is true (stderr is a
// terminal), so pipes and logs never see it.
func startProgress(w io.Writer, on bool, msg func() string) (stop func()) {
	if !on {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(w, "\r\x1b[K%c %s", spinnerFrames[i%len(spinnerFrames)], msg())
			select {
			case <-done:
				fmt.Fprint(w, "\r\x1b[K")
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// readHidden reads one line from the terminal f without echoing it. When
// ctx ends first (Ctrl-C) it restores the terminal and gives up; the read
// itself cannot be interrupted and ends with the process.
func readHidden(ctx context.Context, f *os.File) (string, error) {
	fd := int(f.Fd())
	state, err := term.GetState(fd)
	if err != nil {
		return "", err
	}
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := term.ReadPassword(fd)
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		return string(r.b), r.err
	case <-ctx.Done():
		term.Restore(fd, state)
		return "", ctx.Err()
	}
}
