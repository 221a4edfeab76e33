package manager

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestCallTimesOut(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	c := cfg("s", srv.URL)
	c.Timeout = time.Second
	m := newManager(t, nil, c)
	// Connected first, so the timeout is the call's alone: on a loaded
	// machine a connect could take it all, and the call would never be
	// sent (nor its cancellation).
	if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	calls := srv.Requests("tools/call")
	_, err := m.CallTool(ctxT(t, 10*time.Second), "s", "slow", raw(`{"seconds":30}`), nil)
	if !errors.Is(err, mcpgate.ErrTimeout) {
		t.Fatalf("slow call: %v, want a timeout", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("timeout took %v", time.Since(start))
	}
	// The server learns of it through notifications/cancelled, when the
	// call reached it: on a loaded machine the deadline can pass before
	// the call is sent, and then it is not sent at all.
	if srv.Requests("tools/call") > calls {
		eventually(t, "server saw the cancellation", func() bool { return len(srv.Cancellations()) == 1 })
	} else {
		t.Log("the deadline passed before the call was sent")
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady {
		t.Errorf("a timed-out call hurt the session: %s", st.State)
	}
	// The per-call timeout overrides the server's.
	res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "slow", raw(`{"seconds":0.3}`), &CallOptions{Timeout: 5 * time.Second})
	if err != nil || text(t, res) != "done" {
		t.Fatalf("call with a longer per-call timeout: %v", err)
	}
}

func TestCancelByOperationID(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	ctx := ctxT(t, 20*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "s", "slow", raw(`{"seconds":30}`), &CallOptions{OperationID: "op-1"})
		done <- err
	}()
	eventually(t, "slow call running", func() bool { return srv.InFlight("slow") == 1 })
	m.Cancel("op-1")
	if err := <-done; !errors.Is(err, mcpgate.ErrCancelled) {
		t.Fatalf("cancelled call: %v", err)
	}
	eventually(t, "server saw the cancellation", func() bool { return len(srv.Cancellations()) == 1 })
}

func TestCancelBeforeAdmissionWins(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	m.Cancel("op-early")
	_, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`{"text":"x"}`), &CallOptions{OperationID: "op-early"})
	if !errors.Is(err, mcpgate.ErrCancelled) {
		t.Fatalf("call cancelled before admission ran: %v", err)
	}
	if n := srv.Requests("tools/call"); n != 0 {
		t.Errorf("a call cancelled before admission reached the server %d times", n)
	}
	// The record is consumed: a later call with the same ID runs.
	if _, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`{"text":"x"}`), &CallOptions{OperationID: "op-early"}); err != nil {
		t.Fatalf("a later call with a consumed ID: %v", err)
	}
}

func TestEarlyCancelRecordIsBounded(t *testing.T) {
	t.Parallel()
	ops := newOperations()
	now := time.Unix(1000, 0)
	ops.now = func() time.Time { return now }
	for i := range 5000 {
		ops.cancel("op-" + string(rune('a'+i%26)) + time.Duration(i).String())
	}
	if n := ops.remembered(); n > ops.maxKept {
		t.Fatalf("kept %d early cancels, bound %d", n, ops.maxKept)
	}
	now = now.Add(ops.maxAge + time.Second)
	ops.cancel("fresh")
	if n := ops.remembered(); n != 1 {
		t.Fatalf("after maxAge %d early cancels kept, want only the fresh one", n)
	}
}

func TestCallNotResentAfter500(t *testing.T) {
	t.Parallel()
	hook := fake.Status500()
	h := fake.StartHostile(t, fake.HostileOptions{CallTool: hook.Call})
	m := newManager(t, nil, cfg("s", h.URL))
	_, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil)
	var me *mcpgate.Error
	if !errors.As(err, &me) || me.HTTPStatus != http.StatusInternalServerError {
		t.Fatalf("call answered 500: %v", err)
	}
	if strings.Contains(err.Error(), "sk-live") || strings.Contains(err.Error(), "internal detail") {
		t.Errorf("remote error body leaked into the error: %q", err)
	}
	if hook.Hits() != 1 {
		t.Errorf("call sent %d times, want exactly 1", hook.Hits())
	}
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady {
		t.Errorf("a 500 on one call ended the session: %s", st.State)
	}
}

func TestCallNotResentAfterDroppedConnection(t *testing.T) {
	t.Parallel()
	hook := fake.DropConnection()
	h := fake.StartHostile(t, fake.HostileOptions{CallTool: hook.Call})
	m := newManager(t, nil, cfg("s", h.URL))
	_, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil)
	if !errors.Is(err, mcpgate.ErrNetwork) {
		t.Fatalf("dropped call: %v, want a network error", err)
	}
	if hook.Hits() != 1 {
		t.Errorf("call sent %d times, want exactly 1", hook.Hits())
	}
	// The server is alive: the ping probe keeps the session.
	if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady {
		t.Errorf("state %s after a dropped call to a live server", st.State)
	}
}

func TestHugeResultIsBounded(t *testing.T) {
	t.Parallel()
	hook := fake.HugeResult(8 << 20)
	h := fake.StartHostile(t, fake.HostileOptions{CallTool: hook.Call})
	m := newManager(t, &Options{Limits: Limits{MaxResponseBytes: 1 << 20}}, cfg("s", h.URL))
	_, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil)
	if !errors.Is(err, mcpgate.ErrProtocol) || !strings.Contains(err.Error(), "size bound") {
		t.Fatalf("huge result: %v, want a protocol error about the size bound", err)
	}
	// The next call works (a new session if the SDK gave up on this one).
	if _, err := m.Tools(ctxT(t, 10*time.Second), "s"); err != nil {
		t.Fatal(err)
	}
}

func TestStandaloneStream(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{fake.GetStreamHang, fake.GetStreamClose, fake.GetStream405} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			h := fake.StartHostile(t, fake.HostileOptions{GetStream: mode, Sessions: true})
			m := newManager(t, &Options{ConnectTimeout: 6 * time.Second}, cfg("s", h.URL))
			start := time.Now()
			if err := m.Connect(ctxT(t, 10*time.Second), "s"); err != nil {
				t.Fatalf("connect: %v", err)
			}
			// A hanging stream is waited for firstOpenWait; one that held
			// the connect would hold it for its whole timeout (6 s).
			if d := time.Since(start); d > firstOpenWait+3*time.Second {
				t.Errorf("connect took %v: the GET stream held it", d)
			}
			// Give a closing stream time to be retried and given up on.
			time.Sleep(1500 * time.Millisecond)
			if _, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ping", nil, nil); err != nil {
				t.Fatalf("call on a session whose GET stream is %s: %v", mode, err)
			}
			if st := mustStatus(t, m, "s"); st.State != mcpgate.StateReady {
				t.Errorf("state %s: the GET stream ended a healthy session", st.State)
			}
		})
	}
}

// The manager speaks every generation: 2026-07-28 first, then the session
// era down to 2025-03-26, and remembers per server what worked.
func TestProtocolNegotiation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		versions  []string
		want      string
		initCalls int // initialize requests of the first connect
	}{
		{"every version", nil, "2026-07-28", 0},
		{"2026-07-28 only", []string{"2026-07-28"}, "2026-07-28", 0},
		{"2025-11-25", []string{"2025-11-25", "2025-06-18", "2025-03-26"}, "2025-11-25", 1},
		{"2025-06-18 only", []string{"2025-06-18"}, "2025-06-18", 1},
		{"2025-03-26 only", []string{"2025-03-26"}, "2025-03-26", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fake.Start(t, &fake.Options{Versions: tc.versions})
			m := newManager(t, nil, cfg("s", srv.URL))
			ctx := ctxT(t, 10*time.Second)
			res, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"hi"}`), nil)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if text(t, res) != "hi" {
				t.Errorf("echo answered %q", text(t, res))
			}
			st := mustStatus(t, m, "s")
			if st.ProtocolVersion != tc.want || st.State != mcpgate.StateReady {
				t.Fatalf("negotiated %q (state %s), want %s", st.ProtocolVersion, st.State, tc.want)
			}
			if got := srv.Initializes(); got != tc.initCalls {
				t.Errorf("%d initialize requests, want %d", got, tc.initCalls)
			}
			// The next connection goes straight to what worked.
			discovers := srv.Requests("server/discover")
			if err := m.Reconnect(ctx, "s"); err != nil {
				t.Fatal(err)
			}
			if tc.initCalls > 0 && srv.Requests("server/discover") != discovers {
				t.Errorf("a session-era server was sent server/discover again on reconnect")
			}
			if v := mustStatus(t, m, "s").ProtocolVersion; v != tc.want {
				t.Errorf("reconnect negotiated %q", v)
			}
		})
	}
}

// Versions before Streamable HTTP are refused with a reason.
func TestProtocolBeforeStreamableHTTPRefused(t *testing.T) {
	t.Parallel()
	older := fake.StartHostile(t, fake.HostileOptions{ProtocolVersion: "2024-11-05"})
	m := newManager(t, nil, cfg("older", older.URL))
	err := m.Connect(ctxT(t, 10*time.Second), "older")
	if err == nil || !strings.Contains(err.Error(), "2024-11-05") || mcpgate.CategoryOf(err) != mcpgate.CategoryProtocol {
		t.Fatalf("2024-11-05: %v", err)
	}
}

func TestBearerAndHeaders(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, &fake.Options{BearerToken: "tok-123", RequireHeader: map[string]string{"X-Api-Key": "k-456"}})
	env := map[string]string{"TOKEN": "tok-123", "KEY": "k-456"}
	c := cfg("s", srv.URL)
	c.Auth = mcpgate.AuthBearer
	c.BearerTokenEnv = "TOKEN"
	c.Headers = map[string]string{"X-Api-Key": "${env:KEY}"}
	m := newManager(t, &Options{Getenv: func(k string) string { return env[k] }}, c)
	if _, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`{"text":"x"}`), nil); err != nil {
		t.Fatal(err)
	}

	wrong := cfg("w", srv.URL)
	wrong.Auth = mcpgate.AuthBearer
	wrong.BearerTokenEnv = "WRONG"
	wrong.Headers = c.Headers
	env["WRONG"] = "nope"
	m2 := newManager(t, &Options{Getenv: func(k string) string { return env[k] }}, wrong)
	err := m2.Connect(ctxT(t, 10*time.Second), "w")
	if !errors.Is(err, mcpgate.ErrAuthRequired) {
		t.Fatalf("wrong token: %v, want authorization required", err)
	}
	st := mustStatus(t, m2, "w")
	if st.State != mcpgate.StateNeedsAuth || st.Error.HTTPStatus != 401 || st.Error.Code != "invalid_token" {
		t.Errorf("status with a wrong token: %+v %+v", st, st.Error)
	}
	if strings.Contains(st.Error.Message, "nope") {
		t.Error("the token appeared in the status message")
	}
}

func TestMissingHeaderVariableIsClear(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	c := cfg("s", srv.URL)
	c.Headers = map[string]string{"X-Api-Key": "${MISSING_KEY}"}
	m := newManager(t, &Options{Getenv: func(string) string { return "" }}, c)
	err := m.Connect(ctxT(t, 10*time.Second), "s")
	if !errors.Is(err, mcpgate.ErrInvalid) || !strings.Contains(err.Error(), "MISSING_KEY") {
		t.Fatalf("missing variable: %v", err)
	}
	if srv.Initializes() != 0 {
		t.Error("connected without the header")
	}
}

func TestElicitationRouting(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	var got *ElicitRequest
	m := newManager(t, &Options{Elicit: func(ctx context.Context, req *ElicitRequest) (*mcp.ElicitResult, error) {
		got = req
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace", "lucky": 3}}, nil
	}}, cfg("s", srv.URL))
	res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "ask", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Server != "s" || !strings.Contains(string(got.Schema), `"name"`) {
		t.Fatalf("elicitation request: %+v", got)
	}
	if s := text(t, res); s != "accepted: name=Grace lucky=3" {
		t.Errorf("result %q", s)
	}

	// Without anyone to ask, elicitation is declined.
	m2 := newManager(t, nil, cfg("s", srv.URL))
	res, err = m2.CallTool(ctxT(t, 10*time.Second), "s", "ask", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := text(t, res); s != "declined" {
		t.Errorf("result without an elicitation route %q, want declined", s)
	}
}

func TestToolErrorResultIsNotAnError(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	res, err := m.CallTool(ctxT(t, 10*time.Second), "s", "fail", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || text(t, res) != "the widget is broken" {
		t.Errorf("fail result %+v", res)
	}
	if _, err := m.CallTool(ctxT(t, 10*time.Second), "s", "echo", raw(`[1,2]`), nil); !errors.Is(err, mcpgate.ErrInvalid) {
		t.Errorf("array arguments: %v", err)
	}
}

func TestPromptsAndResources(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	m := newManager(t, nil, cfg("s", srv.URL))
	ctx := ctxT(t, 10*time.Second)
	prompts, err := m.Prompts(ctx, "s")
	if err != nil || len(prompts) == 0 {
		t.Fatalf("prompts: %v %d", err, len(prompts))
	}
	pr, err := m.GetPrompt(ctx, "s", "greet", map[string]string{"name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Hello, Ada!" {
		t.Errorf("prompt result %+v", pr.Messages[0].Content)
	}
	resources, err := m.Resources(ctx, "s")
	if err != nil || len(resources) != 2 {
		t.Fatalf("resources: %v %d", err, len(resources))
	}
	rr, err := m.ReadResource(ctx, "s", "fake://readme")
	if err != nil {
		t.Fatal(err)
	}
	if rr.Contents[0].Text != "This is the fake server's readme." {
		t.Errorf("resource text %q", rr.Contents[0].Text)
	}
}

// TestServerVariants runs the ordinary flow against the ways a
// spec-following server may answer: with or without sessions, SSE or JSON
// responses.
func TestServerVariants(t *testing.T) {
	t.Parallel()
	for _, v := range []struct {
		name string
		opts fake.Options
	}{
		{"sessions-sse", fake.Options{}},
		{"sessions-json", fake.Options{JSONResponse: true}},
		{"stateless-sse", fake.Options{Stateless: true}},
		{"stateless-json", fake.Options{Stateless: true, JSONResponse: true}},
	} {
		t.Run(v.name, func(t *testing.T) {
			srv := fake.Start(t, &v.opts)
			m := newManager(t, nil, cfg("s", srv.URL))
			ctx := ctxT(t, 10*time.Second)
			res, err := m.CallTool(ctx, "s", "add", raw(`{"a":2,"b":3}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, res); got != "5" {
				t.Errorf("add = %q", got)
			}
			if _, err := m.ReadResource(ctx, "s", "fake://readme"); err != nil {
				t.Fatal(err)
			}
			st := mustStatus(t, m, "s")
			if st.State != mcpgate.StateReady || st.Tools == 0 || st.Prompts == 0 || st.Resources == 0 {
				t.Errorf("status %+v", st)
			}
		})
	}
}
