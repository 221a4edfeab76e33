package manager

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestConcurrentConnectsShareOneInitialize(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	g := startGate(t, srv.URL)
	g.hold()
	m := newManager(t, nil, cfg("s", g.URL))

	const callers = 20
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := m.Tools(ctxT(t, 10*time.Second), "s")
			errs <- err
		}()
	}
	g.await(t)
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateConnecting {
		t.Errorf("state while initialize is held = %s, want connecting", st.State)
	}
	time.Sleep(50 * time.Millisecond) // let every caller join
	g.release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Connects(); n != 1 {
		t.Errorf("%d connects for %d concurrent callers, want 1", n, callers)
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady || st.Tools == 0 {
		t.Errorf("status = %+v, want ready with tools", st)
	}
}

func TestStaleConnectionCannotTouchCurrentSession(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	ctx := ctxT(t, 10*time.Second)
	if err := m.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	s, _ := m.server("s")
	s.mu.Lock()
	old := s.sess
	s.mu.Unlock()

	if err := m.Reconnect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	cur := mustStatus(t, m, "s")
	if cur.ConnectionID == old.id {
		t.Fatal("reconnect kept the old connectionId")
	}
	// A report from the old session must neither close nor replace the
	// current one, nor change the state.
	if s.drop(old, mcpgate.StateError, &mcpgate.Error{Category: mcpgate.CategoryNetwork, Message: "stale"}) {
		t.Error("drop with a stale connectionId was accepted")
	}
	s.refresh(ctx, old, kindTools, true)
	s.sessionEnded(old, errors.New("stale end"))
	st := mustStatus(t, m, "s")
	if st.State != mcpgate.StateReady || st.ConnectionID != cur.ConnectionID {
		t.Fatalf("after stale reports: state %s conn %d, want ready conn %d", st.State, st.ConnectionID, cur.ConnectionID)
	}
	if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"still here"}`), nil); err != nil {
		t.Fatalf("current session broken by a stale report: %v", err)
	}
}

func TestSupersededAttemptCannotInstallItsSession(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	g := startGate(t, srv.URL)
	g.hold()
	m := newManager(t, nil, cfg("s", g.URL))

	done := make(chan error, 1)
	go func() { done <- m.Connect(ctxT(t, 10*time.Second), "s") }()
	g.await(t)
	if err := m.Disconnect(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	g.release()
	err := <-done
	if !errors.Is(err, mcpgate.ErrCancelled) {
		t.Fatalf("superseded connect returned %v, want a cancelled error", err)
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateDisconnected || st.ConnectionID != 0 {
		t.Fatalf("superseded attempt installed a session: %+v", st)
	}
}

func TestURLChangePassesDisconnectBarrier(t *testing.T) {
	t.Parallel()
	a := fake.Start(t, &fake.Options{Versions: fake.SessionEra})
	b := fake.Start(t, &fake.Options{Versions: fake.SessionEra})
	m := newManager(t, nil, cfg("s", a.URL))
	ctx := ctxT(t, 10*time.Second)
	if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"a"}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Update(ctx, []mcpgate.ServerConfig{cfg("s", b.URL)}); err != nil {
		t.Fatal(err)
	}
	// When Update returns, the old session is closed (DELETE sent) and the
	// state no longer claims a session.
	if a.Deletes() != 1 {
		t.Errorf("old server saw %d DELETEs after the URL change, want 1", a.Deletes())
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateDisconnected || st.URL != b.URL {
		t.Errorf("after URL change: %+v", st)
	}
	aCalls := a.Requests("tools/call")
	if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"b"}`), nil); err != nil {
		t.Fatal(err)
	}
	if a.Requests("tools/call") != aCalls || b.Requests("tools/call") != 1 {
		t.Errorf("call after URL change went to the old server (a=%d, b=%d)", a.Requests("tools/call"), b.Requests("tools/call"))
	}
}

func TestURLChangeCancelsAttemptInFlight(t *testing.T) {
	t.Parallel()
	a := fake.Start(t, nil)
	g := startGate(t, a.URL)
	g.hold()
	b := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", g.URL))
	done := make(chan error, 1)
	go func() { _, err := m.Tools(ctxT(t, 10*time.Second), "s"); done <- err }()
	g.await(t)
	if err := m.Update(context.Background(), []mcpgate.ServerConfig{cfg("s", b.URL)}); err != nil {
		t.Fatal(err)
	}
	g.release()
	<-done
	if _, err := m.Tools(ctxT(t, 10*time.Second), "s"); err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, m, "s")
	if st.State != mcpgate.StateReady || b.Connects() != 1 {
		t.Fatalf("after barrier: state %s, new server initializes %d", st.State, b.Connects())
	}
	if n := a.Requests("tools/list"); n != 0 {
		t.Errorf("the attempt under the old URL went on to list tools (%d)", n)
	}
}

func TestExpiredSessionIsReinitializedOnce(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, &fake.Options{Versions: fake.SessionEra})
	// Without a standalone stream, only the call itself can learn that the
	// server forgot the session: its request is answered 404.
	g := startGate(t, srv.URL)
	g.noStream = true
	m := newManager(t, nil, cfg("s", g.URL))
	ctx := ctxT(t, 10*time.Second)
	if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"1"}`), nil); err != nil {
		t.Fatal(err)
	}
	srv.ExpireSessions()
	res, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"2"}`), nil)
	if err != nil {
		t.Fatalf("call after session expiry: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "2" {
		t.Errorf("result %q, want 2", got)
	}
	if n := srv.Connects(); n != 2 {
		t.Errorf("initialize count %d, want 2 (one re-initialize)", n)
	}
	// 1 before expiry, 1 answered 404 (never executed), 1 re-sent: no more.
	if n := srv.Requests("tools/call"); n != 3 {
		t.Errorf("the server saw %d tools/call requests, want 3", n)
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady {
		t.Errorf("state %s, want ready", st.State)
	}
}

func TestServerGoneMeansError(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	ctx := ctxT(t, 20*time.Second)
	if err := m.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	// The lost GET stream alone must bring the state down, without a call.
	eventually(t, "state error after the server went away", func() bool {
		return mustStatus(t, m, "s").State == mcpgate.StateError
	})
	_, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"x"}`), nil)
	if !errors.Is(err, mcpgate.ErrNetwork) {
		t.Fatalf("call to a stopped server: %v, want a network error", err)
	}
	st := mustStatus(t, m, "s")
	if st.State != mcpgate.StateError || st.Error == nil || st.Error.Category != mcpgate.CategoryNetwork {
		t.Fatalf("status after the server went away: %+v", st)
	}
}

func TestCloseLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, &fake.Options{Versions: fake.SessionEra})
	m, err := New([]mcpgate.ServerConfig{cfg("s", srv.URL)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"x"}`), nil); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if srv.Deletes() != 1 {
		t.Errorf("Close sent %d DELETEs, want 1", srv.Deletes())
	}
	if _, err := m.Tools(ctx, "s"); !errors.Is(err, mcpgate.ErrCancelled) {
		t.Errorf("use after Close: %v", err)
	}
	// goleak in TestMain checks that no goroutine outlived Close.
}

func TestConnectOnStartupAndLazy(t *testing.T) {
	t.Parallel()
	eager := fake.Start(t, nil)
	lazy := fake.Start(t, nil)
	e := cfg("eager", eager.URL)
	e.ConnectOnStartup = true
	m := newManager(t, nil, e, cfg("lazy", lazy.URL))
	m.Start(context.Background())
	eventually(t, "eager server ready", func() bool { return mustStatus(t, m, "eager").State == mcpgate.StateReady })
	if lazy.Connects() != 0 || mustStatus(t, m, "lazy").State != mcpgate.StateDisconnected {
		t.Error("a server without connectOnStartup connected at start")
	}
}

func TestDisabledServerAndTool(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	c := cfg("s", srv.URL)
	c.DisabledTools = []string{"echo"}
	off := cfg("off", srv.URL)
	off.Enabled = false
	m := newManager(t, nil, c, off)
	ctx := ctxT(t, 10*time.Second)
	if _, err := m.Tools(ctx, "off"); !errors.Is(err, mcpgate.ErrDisabled) {
		t.Errorf("disabled server: %v", err)
	}
	tools, err := m.Tools(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == "echo" {
			t.Error("disabled tool listed")
		}
	}
	if _, err := m.CallTool(ctx, "s", "echo", nil, nil); !errors.Is(err, mcpgate.ErrDisabled) {
		t.Errorf("disabled tool call: %v", err)
	}
	if srv.Requests("tools/call") != 0 {
		t.Error("a disabled tool reached the server")
	}
	if _, err := m.CallTool(ctx, "s", "ech", nil, nil); !errors.Is(err, mcpgate.ErrNotFound) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := m.Tools(ctx, "nope"); !errors.Is(err, mcpgate.ErrNotFound) {
		t.Errorf("unknown server: %v", err)
	}
}

func TestCallInFlightWhenSessionExpiresIsNotResent(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, &fake.Options{Versions: fake.SessionEra})
	m := newManager(t, nil, cfg("s", srv.URL))
	ctx := ctxT(t, 20*time.Second)
	if err := m.Connect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := m.CallTool(ctx, "s", "slow", raw(`{"seconds":3}`), nil)
		done <- outcome{res, err}
	}()
	eventually(t, "slow call running", func() bool { return srv.InFlight("slow") == 1 })
	srv.ExpireSessions()
	// The server either answers the abandoned call as a tool error (its
	// handler saw its context end) or drops its stream: either way the call
	// is not reported done.
	o := <-done
	if o.err == nil && !o.res.IsError {
		t.Fatal("a call cut off by session expiry reported success")
	}
	if n := srv.Requests("tools/call"); n != 1 {
		t.Errorf("a call in doubt was sent %d times, want 1", n)
	}
}
