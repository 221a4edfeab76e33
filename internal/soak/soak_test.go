package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	goleak.VerifyTestMain(m)
}

// defaultCalls keeps `go test -race ./...` short; CI runs the full count.
const defaultCalls = 400

// workers is how many calls are in flight at once.
const workers = 32

// callTimeout bounds one call, and connectTimeout one connect: a stalled
// request shows as a timeout, a failure honestly reported, counted apart.
const (
	callTimeout    = 1500 * time.Millisecond
	connectTimeout = 1500 * time.Millisecond
)

// overrun is how long after its deadline a call may still return: far
// beyond a noisy machine's delays, it catches a call that waits on
// something its deadline does not bound.
const overrun = 30 * time.Second

func soakCalls(t *testing.T) int {
	v := os.Getenv("MCPGATE_SOAK_CALLS")
	if v == "" {
		return defaultCalls
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		t.Fatalf("MCPGATE_SOAK_CALLS=%q: want a number of calls, at least 2", v)
	}
	return n
}

// TestSoak sends calls through the manager and the gateway to a server
// behind a fault proxy, half of them to a server of 2026-07-28 and half to
// one of the session era (the two at once: most of a soak is waiting for
// the calls the faults stall), and checks that every call either succeeded
// once or was reported failed, that nothing ran twice, and that goroutines
// and heap come back to where they were.
func TestSoak(t *testing.T) {
	calls := soakCalls(t)
	goroutinesBefore, heapBefore := settle()
	t.Run("generations", func(t *testing.T) {
		for i, gen := range []struct {
			name     string
			versions []string
		}{
			{"2026-07-28", []string{"2026-07-28"}},
			{"session-era", fake.SessionEra},
		} {
			t.Run(gen.name, func(t *testing.T) {
				t.Parallel()
				n := calls / 2
				if i == 0 {
					n = calls - calls/2
				}
				soak(t, n, gen.versions, uint64(i+1))
			})
		}
	})
	goroutinesAfter, heapAfter := settleTo(goroutinesBefore)
	if goroutinesAfter > goroutinesBefore {
		t.Errorf("goroutines: %d before, %d after", goroutinesBefore, goroutinesAfter)
	}
	// Heap: what a soak leaves behind beyond noise (sync.Pools, the
	// runtime's own caches) is a leak; 8 MiB is far below what 10,000
	// kept calls would hold.
	if heapAfter > heapBefore+8<<20 {
		t.Errorf("heap: %d KiB before, %d KiB after", heapBefore>>10, heapAfter>>10)
	}
	t.Logf("soak %s: goroutines before=%d after=%d; heap before=%d KiB after=%d KiB",
		t.Name(), goroutinesBefore, goroutinesAfter, heapBefore>>10, heapAfter>>10)
}

// outcome is how one call ended, as its caller saw it.
type outcome struct {
	key     string
	ok      bool
	text    string // what the caller was told
	timeout bool
	took    time.Duration
}

// soak runs one generation's calls and judges them. What it started is
// closed when it returns, for TestSoak to count what is left.
func soak(t *testing.T, calls int, versions []string, seed uint64) {
	srv := fake.Start(t, &fake.Options{Versions: versions, Tally: true})
	proxy := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{
		Seed:           seed,
		Rate:           0.2,
		OversizedBytes: 2 << 20,
	})
	m, err := manager.New([]mcpgate.ServerConfig{{ID: "soak", URL: proxy.URL, Auth: mcpgate.AuthNone, Enabled: true}},
		&manager.Options{
			ConnectTimeout: connectTimeout,
			Limits:         manager.Limits{MaxResponseBytes: 1 << 20},
		})
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(&gateway.Options{Manager: m})

	start := time.Now()
	outcomes := make([]outcome, calls)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= calls {
					return
				}
				outcomes[i] = call(m, g, i)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	goroutinesLoaded := runtime.NumGoroutine()

	// Without faults the server is reachable again, and so must be
	// through the manager: nothing may stay stuck on a request the
	// proxy held.
	proxy.Calm()
	var why []string
	for i := range 3 {
		o := call(m, g, calls+i)
		if o.ok {
			why = nil
			break
		}
		why = append(why, fmt.Sprintf("%q after %s", o.text, o.took.Round(time.Millisecond)))
	}
	if why != nil {
		t.Errorf("with the faults gone, three calls in a row failed: %s", strings.Join(why, "; "))
	}

	m.Close()
	proxy.Close()
	srv.Close()
	// What the judgement needs, taken so that the proxy's records and the
	// server can be collected: once soak returns, nothing of it is held.
	tallies := srv.Tallies()
	sent := make(map[string]bool)
	records := proxy.Records()
	for _, r := range records {
		if r.Tool == "tally" && r.Sent {
			var a struct{ Key string }
			json.Unmarshal(r.Arguments, &a)
			sent[a.Key] = true
		}
	}
	requests, injected := len(records), proxy.Injected()

	// Judge every outcome against what the server ran.
	var ok, failed, timeouts, lost, duplicated int
	for _, o := range outcomes {
		if o.took > callTimeout+overrun {
			t.Errorf("call %s returned %s after it started, beyond its deadline of %s", o.key, o.took.Round(time.Millisecond), callTimeout)
		}
		tally := tallies[o.key]
		if tally.Started > 1 {
			duplicated++
			t.Errorf("call %s ran %d times on the server", o.key, tally.Started)
		}
		if tally.Started > 0 && !sent[o.key] {
			t.Errorf("call %s ran on the server, and the proxy never sent it: the proxy's records are wrong", o.key)
		}
		switch {
		case o.ok:
			ok++
			if tally.Finished != 1 {
				lost++
				t.Errorf("call %s was reported done, and the server finished it %d times", o.key, tally.Finished)
			}
			if !strings.Contains(o.text, o.key) {
				t.Errorf("call %s was reported done with the wrong answer %q", o.key, o.text)
			}
		default:
			failed++
			if o.timeout {
				timeouts++
			}
			if o.text == "" {
				t.Errorf("call %s failed without saying why", o.key)
			}
		}
	}
	if ok+failed != calls {
		t.Errorf("%d calls, %d outcomes", calls, ok+failed)
	}
	if ok == 0 {
		t.Errorf("no call succeeded: the faults are not what is being tested")
	}

	var kinds []string
	faults := 0
	for _, k := range slices.Sorted(maps.Keys(injected)) {
		if k != fake.FaultNone {
			faults += injected[k]
		}
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, injected[k]))
	}
	t.Logf("soak %s: calls=%d ok=%d failed=%d (timeouts %d) lost=%d duplicated=%d in %s",
		t.Name(), calls, ok, failed, timeouts, lost, duplicated, elapsed.Round(time.Millisecond))
	t.Logf("soak %s: requests=%d faults=%d: %s", t.Name(), requests, faults, strings.Join(kinds, " "))
	t.Logf("soak %s: goroutines loaded=%d (the process's: both generations run at once)", t.Name(), goroutinesLoaded)
}

// call makes call number i, every fourth through the gateway's call
// action (as a model would), the others through the manager.
func call(m *manager.Manager, g *gateway.Gateway, i int) (o outcome) {
	start := time.Now()
	defer func() { o.took = time.Since(start) }()
	key := fmt.Sprintf("call-%d", i)
	args := json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))
	ctx := context.Background()
	opts := &manager.CallOptions{Timeout: callTimeout}
	if i%4 == 3 {
		res := g.HandleCall(ctx, &gateway.Input{Action: "call", Server: "soak", Tool: "tally", Arguments: args}, opts)
		text := resultText(res)
		return outcome{key: key, ok: !res.IsError, text: text, timeout: res.IsError && strings.Contains(text, "timeout")}
	}
	res, err := m.CallTool(ctx, "soak", "tally", args, opts)
	if err != nil {
		var me *mcpgate.Error
		if !errors.As(err, &me) {
			return outcome{key: key, text: "not an attributed error: " + err.Error()}
		}
		return outcome{key: key, text: err.Error(), timeout: me.Category == mcpgate.CategoryTimeout}
	}
	if res.IsError {
		return outcome{key: key, text: resultText(res)}
	}
	return outcome{key: key, ok: true, text: resultText(res)}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// settle collects garbage and returns the goroutines and live heap now.
func settle() (goroutines int, heap uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// settleTo waits (a while at most) for goroutines ending on their own to
// come down to want, then settles.
func settleTo(want int) (goroutines int, heap uint64) {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return settle()
}
