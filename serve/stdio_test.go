package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawHost talks newline-delimited JSON to a front over StdioTransport, as
// a host's process does over a pipe.
type rawHost struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *bufio.Scanner
	front *serve.Front
}

func startRaw(t *testing.T, direct bool) *rawHost { return startRawWith(t, direct) }

func startRawWith(t *testing.T, direct bool, servers ...mcpgate.ServerConfig) *rawHost {
	t.Helper()
	return startRawFront(t, rawFront{direct: direct}, servers...)
}

// rawFront says how startRawFront builds the front.
type rawFront struct {
	direct bool
	// wired passes the manager's questions, logs and state changes to the
	// front, as `mcpgate serve` does.
	wired bool
	// middleware, when set, is the front's ServerMiddleware: every
	// request then goes through the go-sdk server.
	middleware mcp.Middleware
}

func startRawFront(t *testing.T, rf rawFront, servers ...mcpgate.ServerConfig) *rawHost {
	t.Helper()
	var front *serve.Front
	var mopts *manager.Options
	if rf.wired {
		mopts = &manager.Options{
			Elicit: func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
				return front.Elicit(ctx, r)
			},
			OnStateChange: func(st manager.Status) { front.StateChanged(st) },
			//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
			OnLog: func(server string, msg *mcp.LoggingMessageParams) { front.Log(server, msg) },
		}
	}
	m, err := manager.New(servers, mopts)
	if err != nil {
		t.Fatal(err)
	}
	opts := &gateway.Options{Manager: m}
	front = serve.New(&serve.Options{Gateway: gateway.New(opts), Bridge: gateway.NewBridge(opts), Direct: rf.direct, ServerMiddleware: rf.middleware})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		front.Run(ctx, serve.StdioTransport(inR, outW))
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		go io.Copy(io.Discard, outR)
		<-done
		m.Close()
	})
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	return &rawHost{t: t, in: inW, out: sc, front: front}
}

func (h *rawHost) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int64 `json:"code"`
	} `json:"error"`
}

// line reads the next line the front writes.
func (h *rawHost) line() string {
	h.t.Helper()
	got := make(chan bool, 1)
	go func() { got <- h.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			h.t.Fatalf("the front closed stdout: %v", h.out.Err())
		}
	case <-time.After(10 * time.Second):
		h.t.Fatal("no answer from the front")
	}
	return h.out.Text()
}

// reply reads the next message the front writes.
func (h *rawHost) reply() rawReply {
	h.t.Helper()
	h.line()
	var r rawReply
	if err := json.Unmarshal(h.out.Bytes(), &r); err != nil {
		h.t.Fatalf("the front wrote a line that is not JSON: %q", h.out.Text())
	}
	return r
}

func TestMalformedLinesAreAnsweredNotFatal(t *testing.T) {
	t.Parallel()
	h := startRaw(t, false)
	for _, tc := range []struct {
		line string
		code int64
		id   string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{`, -32700, "null"},
		{`this is not json`, -32700, "null"},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
		{`[]`, -32600, "null"},
		{`42`, -32600, "null"},
	} {
		h.send(tc.line)
		r := h.reply()
		if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != tc.id {
			t.Errorf("%s: answered id %s error %+v, want code %d id %s", tc.line, r.ID, r.Error, tc.code, tc.id)
		}
	}
	h.send("")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := h.reply(); r.Error != nil || string(r.ID) != "1" || !strings.Contains(string(r.Result), `"tools"`) {
		t.Fatalf("initialize after bad lines: id %s result %s error %+v", r.ID, r.Result, r.Error)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"`)
	if r := h.reply(); r.Error == nil || r.Error.Code != -32700 {
		t.Fatalf("a truncated request: %+v", r)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if r := h.reply(); r.Error != nil || string(r.ID) != "3" || !strings.Contains(string(r.Result), `"name":"mcp"`) {
		t.Fatalf("tools/list after a bad line: %s %+v", r.Result, r.Error)
	}
}
