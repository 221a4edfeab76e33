package manager_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
)

// countingProxy forwards TCP connections to target and counts them.
type countingProxy struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.conns.Add(1)
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.Close()
				d, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer d.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(d, c); done <- struct{}{} }()
				go func() { io.Copy(c, d); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

// Calls one after another reuse their connection: the caller's context
// ends as soon as it has the answer, a moment before the stream's end,
// and that must not throw the connection away (a dial per call).
func TestCallsReuseTheirConnection(t *testing.T) {
	t.Parallel()
	for name, versions := range map[string][]string{"2026-07-28": {"2026-07-28"}, "session era": fake.SessionEra} {
		// With a request log, its exchange watches for the answer; without
		// one, the body does.
		for _, logged := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: ", logged"}[logged], func(t *testing.T) {
				t.Parallel()
				reuse(t, versions, logged)
			})
		}
	}
}

// reuse makes 50 calls one after another and counts the connections.
func reuse(t *testing.T, versions []string, logged bool) {
	srv := fake.Start(t, &fake.Options{Versions: versions})
	origin := strings.TrimSuffix(strings.TrimPrefix(srv.URL, "http://"), fake.Endpoint)
	proxy := startCountingProxy(t, origin)
	opts := &manager.Options{}
	if logged {
		opts.RequestLog = func(manager.RequestLogEntry) {}
	}
	m, err := manager.New([]mcpgate.ServerConfig{{ID: "d", URL: "http://" + proxy.ln.Addr().String() + fake.Endpoint, Auth: mcpgate.AuthNone, Enabled: true}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	call := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel() // as every caller does, the moment it has the answer
		if _, err := m.CallTool(ctx, "d", "echo", json.RawMessage(`{"text":"x"}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		call()
	}
	before := proxy.conns.Load()
	for range 50 {
		call()
	}
	if n := proxy.conns.Load() - before; n > 2 {
		t.Errorf("50 calls one after another opened %d new connections", n)
	}
}
