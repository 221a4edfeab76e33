package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkServeCallLatency measures one tool call through `mcpgate serve`
// (host → stdio → gateway → remote server) against the same call made
// directly with the go-sdk client, alternating the two in one run so both
// see the same machine. It reports each and their ratio.
func BenchmarkServeCallLatency(b *testing.B) {
	srv := fake.Start(b, nil)
	p := newProcs(b)
	p.mustRun(0, "add", "demo", srv.URL, "--auth", "none")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := p.command(ctx, "serve")
	host := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1"}, nil)
	viaServe, err := host.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer viaServe.Close()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	gatewayArgs := json.RawMessage(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"ping"}}`)
	directArgs := map[string]any{"text": "ping"}
	// Warm both paths: the first gateway call connects the remote server.
	if _, err := viaServe.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: gatewayArgs}); err != nil {
		b.Fatal(err)
	}
	var viaD, dirD time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: directArgs}); err != nil {
			b.Fatal(err)
		}
		dirD += time.Since(start)
		start = time.Now()
		res, err := viaServe.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: gatewayArgs})
		if err != nil || res.IsError {
			b.Fatalf("via serve: %v", err)
		}
		viaD += time.Since(start)
	}
	b.ReportMetric(float64(dirD.Nanoseconds())/float64(b.N), "direct-ns/call")
	b.ReportMetric(float64(viaD.Nanoseconds())/float64(b.N), "serve-ns/call")
	b.ReportMetric(float64(viaD)/float64(dirD), "serve/direct")
}
