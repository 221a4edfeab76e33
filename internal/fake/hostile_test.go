package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHostileDefaults(t *testing.T) {
	t.Parallel()
	for _, sessions := range []bool{false, true} {
		name := "sessionless"
		if sessions {
			name = "sessions"
		}
		t.Run(name, func(t *testing.T) {
			h := fake.StartHostile(t, fake.HostileOptions{Sessions: sessions})
			cs := connect(t, h.URL, nil, nil)
			ctx := testContext(t)
			if (cs.ID() != "") != sessions {
				t.Errorf("session ID %q with Sessions=%v", cs.ID(), sessions)
			}
			if v := cs.InitializeResult().ProtocolVersion; v != protocolVersion {
				t.Errorf("protocol version %q", v)
			}

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 1 || tools.Tools[0].Name != "ping" {
				t.Errorf("tools = %v, want [ping]", tools.Tools)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping"})
			if err != nil || text(res) != "pong" {
				t.Errorf("ping = %v, %v", res, err)
			}
			if p, err := cs.ListPrompts(ctx, nil); err != nil || len(p.Prompts) != 0 {
				t.Errorf("prompts = %v, %v", p, err)
			}
			if r, err := cs.ListResources(ctx, nil); err != nil || len(r.Resources) != 0 {
				t.Errorf("resources = %v, %v", r, err)
			}
			if err := cs.Ping(ctx, nil); err != nil {
				t.Errorf("ping: %v", err)
			}

			var header http.Header
			if sessions {
				header = http.Header{"Mcp-Session-Id": {cs.ID()}}
			}
			resp := post(t, h.URL, `{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`, header)
			var rpc struct {
				ID    int `json:"id"`
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&rpc); err != nil || rpc.ID != 7 || rpc.Error.Code != -32601 {
				t.Errorf("unknown method answered %+v (%v), want error -32601", rpc, err)
			}

			if n := h.Initializes(); n != 1 {
				t.Errorf("Initializes() = %d", n)
			}
			if n := h.Requests("notifications/initialized"); n != 1 {
				t.Errorf("Requests(notifications/initialized) = %d", n)
			}
			if n := h.GetStreams(); n != 1 {
				t.Errorf("GetStreams() = %d, want 1 (answered 405)", n)
			}
			cs.Close()
			if want := map[bool]int{false: 0, true: 1}[sessions]; h.Deletes() != want {
				t.Errorf("Deletes() = %d, want %d", h.Deletes(), want)
			}
		})
	}

	t.Run("session enforcement", func(t *testing.T) {
		h := fake.StartHostile(t, fake.HostileOptions{Sessions: true})
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		if resp := post(t, h.URL, body, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("without session ID: %s, want 400", resp.Status)
		}
		if resp := post(t, h.URL, body, http.Header{"Mcp-Session-Id": {"nope"}}); resp.StatusCode != http.StatusNotFound {
			t.Errorf("unknown session ID: %s, want 404", resp.Status)
		}
	})
}

func TestHostileInitialize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts fake.HostileOptions
		want string // in the Connect error
	}{
		{"401", fake.HostileOptions{InitializeStatus: http.StatusUnauthorized}, "Unauthorized"},
		{"500", fake.HostileOptions{InitializeStatus: http.StatusInternalServerError}, "Internal Server Error"},
		{"unknown protocol version", fake.HostileOptions{ProtocolVersion: "1999-01-01"}, "unsupported protocol version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fake.StartHostile(t, tc.opts)
			_, err := dial(h.URL, nil, &mcp.StreamableClientTransport{Endpoint: h.URL})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Connect error = %v, want one containing %q", err, tc.want)
			}
		})
	}

	h := fake.StartHostile(t, fake.HostileOptions{InitializeStatus: http.StatusUnauthorized})
	resp := post(t, h.URL, initializeBody, nil)
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || got != `Bearer error="invalid_token"` {
		t.Errorf("initialize: %s, WWW-Authenticate %q", resp.Status, got)
	}
}

func TestHostileMalformedToolsList(t *testing.T) {
	t.Parallel()
	list := fake.MalformedToolsList()
	h := fake.StartHostile(t, fake.HostileOptions{ToolsList: list.List})
	cs := connect(t, h.URL, nil, nil)
	if res, err := cs.ListTools(testContext(t), nil); err == nil {
		t.Errorf("ListTools = %v, want a decoding error", res.Tools)
	}
	if list.Hits() != 1 {
		t.Errorf("Hits() = %d, want 1", list.Hits())
	}
}

func TestHostileOversizedToolsList(t *testing.T) {
	t.Parallel()
	const n, size = 3, 10_000
	list := fake.OversizedToolsList(n, size)
	h := fake.StartHostile(t, fake.HostileOptions{ToolsList: list.List})
	cs := connect(t, h.URL, nil, nil)
	res, err := cs.ListTools(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The go-sdk passes every entry through; validating them is the caller's job.
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if got, want := strings.Join(names, ","), "alpha,beta,huge_0,huge_1,huge_2,,bad_schema"; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
	if got := len(res.Tools[2].Description); got != size {
		t.Errorf("huge description is %d bytes, want %d", got, size)
	}
	if s, ok := res.Tools[len(res.Tools)-1].InputSchema.(string); !ok || s != "not-an-object" {
		t.Errorf("bad_schema inputSchema = %#v", res.Tools[len(res.Tools)-1].InputSchema)
	}
}

func TestHostileEndlessCursor(t *testing.T) {
	t.Parallel()
	list := fake.EndlessCursor()
	h := fake.StartHostile(t, fake.HostileOptions{ToolsList: list.List})
	cs := connect(t, h.URL, nil, nil)
	ctx := testContext(t)
	cursor := ""
	for page := 1; page <= 10; page++ {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != "endless_"+strconv.Itoa(page) || res.NextCursor == "" || res.NextCursor == cursor {
			t.Fatalf("page %d = %v, next %q", page, res.Tools, res.NextCursor)
		}
		cursor = res.NextCursor
	}
	if list.Hits() != 10 || h.Requests("tools/list") != 10 {
		t.Errorf("Hits() = %d, Requests = %d, want 10", list.Hits(), h.Requests("tools/list"))
	}
}

func TestHostileHugeResult(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	call := fake.HugeResult(size)
	h := fake.StartHostile(t, fake.HostileOptions{CallTool: call.Call})
	cs := connect(t, h.URL, nil, nil)
	res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ping"})
	if err != nil {
		t.Fatal(err)
	}
	got := text(res)
	if len(got) != size || strings.Count(got, "\n") != size/101 || strings.Trim(got, "x\n") != "" {
		t.Errorf("huge result: %d bytes, %d line breaks", len(got), strings.Count(got, "\n"))
	}
	if call.Hits() != 1 {
		t.Errorf("Hits() = %d", call.Hits())
	}
}

func TestHostileHugeResultSSE(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	for _, tc := range []struct {
		size    int
		wantErr bool
	}{
		{limit / 2, false},
		{2 * limit, true},
	} {
		call := fake.HugeResultSSE(tc.size)
		h := fake.StartHostile(t, fake.HostileOptions{CallTool: call.Call})
		cs, err := dial(h.URL, nil, &mcp.StreamableClientTransport{Endpoint: h.URL, MaxEventSize: limit})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		ctx := testContext(t)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping"})
		if tc.wantErr {
			if err == nil {
				t.Errorf("%d-byte event under a %d-byte cap succeeded", tc.size, limit)
			}
			// The go-sdk fails the whole session on an oversized event.
			if _, err := cs.ListTools(ctx, nil); err == nil {
				t.Error("session survived an oversized event")
			}
			continue
		}
		if err != nil || len(text(res)) != tc.size {
			t.Errorf("%d-byte event: %v", tc.size, err)
		}
	}
}

func TestHostileStatus500(t *testing.T) {
	t.Parallel()
	call := fake.Status500()
	h := fake.StartHostile(t, fake.HostileOptions{CallTool: call.Call})
	cs := connect(t, h.URL, nil, nil)
	ctx := testContext(t)
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping"})
	if err == nil {
		t.Fatal("call answered 500 succeeded")
	}
	if strings.Contains(err.Error(), fake.LeakCanary) {
		t.Errorf("the go-sdk put the body in its error: %v", err)
	}
	if call.Hits() != 1 {
		t.Errorf("Hits() = %d, want 1 (no retry)", call.Hits())
	}
	// The go-sdk treats 500 as transient: the session survives.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("session after a 500: %v", err)
	}

	resp := post(t, h.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`, nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !strings.Contains(string(body), fake.LeakCanary) {
		t.Errorf("raw answer %s %q", resp.Status, body)
	}
}

func TestHostileDropConnection(t *testing.T) {
	t.Parallel()
	call := fake.DropConnection()
	h := fake.StartHostile(t, fake.HostileOptions{CallTool: call.Call})
	cs := connect(t, h.URL, nil, nil)
	if _, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ping"}); err == nil {
		t.Fatal("call on a dropped connection succeeded")
	}
	if call.Hits() != 1 || h.Requests("tools/call") != 1 {
		t.Errorf("Hits() = %d, Requests = %d, want exactly 1 (never re-sent)", call.Hits(), h.Requests("tools/call"))
	}
}

func TestHostileOpenStreamNotify(t *testing.T) {
	t.Parallel()
	h := fake.StartHostile(t, fake.HostileOptions{GetStream: fake.GetStreamOpen, Sessions: true})
	changed := make(chan struct{}, 1)
	connect(t, h.URL, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, nil)
	// The go-sdk opens the stream inside Connect, so it is already there.
	if n := h.OpenStreams(); n != 1 {
		t.Fatalf("OpenStreams() = %d, want 1", n)
	}
	h.Notify("notifications/tools/list_changed")
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the client never saw notifications/tools/list_changed")
	}
}

func TestHostileClosingStream(t *testing.T) {
	t.Parallel()
	h := fake.StartHostile(t, fake.HostileOptions{GetStream: fake.GetStreamClose})
	cs := connect(t, h.URL, nil, nil)
	if _, err := cs.ListTools(testContext(t), nil); err != nil {
		t.Fatal(err)
	}
	// The go-sdk reconnects a standalone stream that ends (after about a second).
	waitFor(t, "the client to reopen the stream", func() bool { return h.GetStreams() >= 2 })
}

func TestHostileHangingStream(t *testing.T) {
	t.Parallel()
	h := fake.StartHostile(t, fake.HostileOptions{GetStream: fake.GetStreamHang})

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	if resp, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			resp.Body.Close()
		}
		t.Fatalf("hanging GET answered %v, %v; want no headers before the deadline", resp, err)
	}

	// Without the standalone stream the go-sdk client is fine.
	cs, err := dial(h.URL, nil, &mcp.StreamableClientTransport{Endpoint: h.URL, DisableStandaloneSSE: true})
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()

	// With it, Connect hangs and ignores its context (the stream uses a
	// context detached from Connect's), until the server goes away.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "fake-test", Version: "0.0.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.URL, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err == nil {
			cs.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("Connect returned before Stop: %v (the go-sdk no longer hangs here)", err)
	case <-time.After(500 * time.Millisecond):
		h.Stop()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Connect still hanging after Stop")
		}
	}
	// The probe and the go-sdk's own GET; a retry may slip in before Stop
	// closes the listener.
	if n := h.GetStreams(); n < 2 {
		t.Errorf("GetStreams() = %d, want at least 2", n)
	}
}

func TestHostileUnknownGetStream(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("NewHostile accepted GetStream \"sometimes\"")
		}
	}()
	fake.NewHostile(fake.HostileOptions{GetStream: "sometimes"}).Stop()
}
