package hosted_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Killing one replica while calls run through the balancer loses no call:
// every call reported done ran exactly once on the server, every call
// that was cut is reported failed (and ran at most once), and the calls
// after it go to the replica that is left.
func TestKillingAReplicaMidLoad(t *testing.T) {
	t.Parallel()
	c := newCluster(t, &clusterOptions{processes: true})
	key := c.apiKey("acme", "alice")
	const callers = 16

	type outcome struct {
		text string
		ok   bool
		late bool // started after the kill was noticed
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		calls    atomic.Int64
		killed   atomic.Bool
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, _ := connect(c.rr.URL, key) // nil on failure: made again below
			for n := 0; ; n++ {
				select {
				case <-stop:
					if cs != nil {
						cs.Close()
					}
					return
				default:
				}
				if cs == nil {
					var err error
					if cs, err = connect(c.rr.URL, key); err != nil {
						cs = nil
						time.Sleep(10 * time.Millisecond)
						continue
					}
				}
				text := fmt.Sprintf("call-%d-%d", i, n)
				late := killed.Load()
				out, err := gw(t, cs, map[string]any{"action": "call", "server": "open", "tool": "tally", "arguments": map[string]any{"key": text}})
				mu.Lock()
				outcomes = append(outcomes, outcome{text: text, ok: err == nil && strings.Contains(out, text), late: late})
				mu.Unlock()
				calls.Add(1)
				if err != nil {
					cs.Close() // a host whose call failed starts afresh
					cs = nil
				}
			}
		}()
	}
	waitFor := func(n int64) {
		deadline := time.Now().Add(60 * time.Second)
		for calls.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d calls in a minute", calls.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(300)
	a := c.replicas[0]
	if err := a.proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := calls.Load()
	// The balancer's health check notices a moment later.
	time.Sleep(100 * time.Millisecond)
	c.rr.SetDown(0, true)
	killed.Store(true)
	waitFor(killedAt + 300)
	close(stop)
	wg.Wait()

	var ok, failed, lateOK int
	for _, o := range outcomes {
		n := c.open.Tally(o.text)
		switch {
		case n.Started > 1:
			t.Errorf("%s ran %d times", o.text, n.Started)
		case o.ok && (n.Started != 1 || n.Finished != 1):
			t.Errorf("%s was reported done but ran %d times, finished %d", o.text, n.Started, n.Finished)
		}
		if o.ok {
			ok++
			if o.late {
				lateOK++
			}
		} else {
			failed++
		}
	}
	t.Logf("%d calls: %d done, %d reported failed (the kill came after %d)", len(outcomes), ok, failed, killedAt)
	if lateOK == 0 {
		t.Error("no call succeeded after the replica was killed")
	}
}

// SIGTERM drains a replica: the call in flight finishes and is answered,
// the replica stops taking new connections, says so, and exits cleanly.
func TestSIGTERMDrainsAReplica(t *testing.T) {
	t.Parallel()
	c := newCluster(t, &clusterOptions{processes: true, replicas: 1})
	a := c.replicas[0]
	cs := c.host(a.URL, c.apiKey("acme", "alice"))
	mustGW(t, cs, map[string]any{"action": "call", "server": "open", "tool": "echo", "arguments": map[string]any{"text": "warm"}})
	done := make(chan error, 1)
	go func() {
		out, err := gw(t, cs, map[string]any{"action": "call", "server": "open", "tool": "slow", "arguments": map[string]any{"seconds": 1}})
		if err == nil && !strings.Contains(out, "done") {
			err = fmt.Errorf("answer %q", out)
		}
		done <- err
	}()
	for c.open.InFlight("slow") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("the call in flight when the drain began: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(a.out.String(), "drained and stopped") {
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not say it stopped:\n%s", a.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(a.out.String(), "stopping: /readyz fails now") {
		t.Errorf("the replica did not say it was draining:\n%s", a.out.String())
	}
	if _, err := connect(a.URL, "x"); err == nil {
		t.Error("the drained replica still takes connections")
	}
}
