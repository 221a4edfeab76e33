package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// host describes the agent host a test connects to the front.
type host struct {
	direct bool
	// version is the MCP version the host asks for; default 2025-11-25.
	// 2026-07-28 makes the go-sdk client use server/discover and
	// per-request metadata.
	version string
	client  *mcp.ClientOptions
	// memory connects over in-memory transports instead of stdio pipes.
	memory bool
	// burst is the front's Options.Burst.
	burst func() (done func())
}

// running is a front serving one host over in-memory transports.
type running struct {
	cs    *mcp.ClientSession
	m     *manager.Manager
	front *serve.Front
	// hostIn is the front's stdin, as the host holds it (nil in memory).
	hostIn io.Closer
}

func startHost(t *testing.T, h host, servers ...mcpgate.ServerConfig) *running {
	t.Helper()
	var front *serve.Front
	m, err := manager.New(servers, &manager.Options{
		Elicit: func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
			return front.Elicit(ctx, r)
		},
		OnStateChange: func(st manager.Status) { front.StateChanged(st) },
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		OnLog: func(server string, msg *mcp.LoggingMessageParams) { front.Log(server, msg) },
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := &gateway.Options{Manager: m}
	front = serve.New(&serve.Options{Gateway: gateway.New(opts), Bridge: gateway.NewBridge(opts), Direct: h.direct, Burst: h.burst})
	// Over stdio, as `mcpgate serve` runs: session-era hosts' tool calls
	// take the fast path (passthru.go); memory uses the go-sdk's
	// in-memory transports, where every request goes through the go-sdk.
	var ct, st mcp.Transport
	var hostIn, hostOut io.Closer
	if h.memory {
		ct, st = mcp.NewInMemoryTransports()
	} else {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ct = &mcp.IOTransport{Reader: outR, Writer: inW}
		st = serve.StdioTransport(inR, outW)
		hostIn, hostOut = inW, outW
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		front.Run(ctx, st)
		if hostOut != nil {
			hostOut.Close()
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, h.client)
	version := h.version
	if version == "" {
		version = "2025-11-25"
	}
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the host asked for MCP %s and got %s", version, got)
	}
	t.Cleanup(func() {
		cs.Close()
		if hostIn != nil {
			hostIn.Close()
		}
		cancel()
		<-done
		m.Close()
	})
	return &running{cs: cs, m: m, front: front, hostIn: hostIn}
}

// start runs a front for a 2025-11-25 host and returns its session.
func start(t *testing.T, direct bool, clientOpts *mcp.ClientOptions, servers ...mcpgate.ServerConfig) *mcp.ClientSession {
	t.Helper()
	return startHost(t, host{direct: direct, client: clientOpts}, servers...).cs
}

// upstream runs a remote MCP server of the test's own making over
// Streamable HTTP on loopback and returns its URL. It keeps sessions, so
// the manager speaks 2025-11-25 to it.
func upstream(t *testing.T, build func(*mcp.Server)) string {
	t.Helper()
	return upstreamWith(t, nil, build)
}

// upstreamWith is upstream with handler options: Stateless makes it a
// 2026-07-28 server.
func upstreamWith(t *testing.T, opts *mcp.StreamableHTTPOptions, build func(*mcp.Server)) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	build(s)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts))
	t.Cleanup(hs.Close)
	return hs.URL
}

var versions = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

func each(t *testing.T, f func(t *testing.T, version string)) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) { f(t, v) })
	}
}
