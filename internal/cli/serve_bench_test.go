package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envStdioEcho makes this test binary a go-sdk stdio server with one tool,
// echo: the cost of one stdio hop alone, the floor's second part.
const envStdioEcho = "MCPGATE_BENCH_STDIO_ECHO"

// serveStdioEcho runs the stdio echo server when the test binary was
// started as one; TestMain calls it first.
func serveStdioEcho() {
	if os.Getenv(envStdioEcho) == "" {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-echo", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// callPath is one way of making the echo call.
type callPath struct {
	name string
	cs   *mcp.ClientSession
	tool string
	args any
}

// BenchmarkServeCallLatency measures one echo call four ways, alternating
// them in one run so all see the same machine:
//
//   - direct: the go-sdk client to the fake server over Streamable HTTP;
//   - stdio-hop: the go-sdk client to a go-sdk stdio echo server (one
//     stdio hop alone, no network);
//   - serve-direct: through `mcpgate serve --direct` (mcp__demo__echo);
//   - serve-gateway: through `mcpgate serve`, the gateway's call action.
//
// The floor for a stdio proxy is direct + stdio-hop. It reports each
// path's p50 and each serve path's p50 against the floor, then the
// throughput of 8 concurrent callers through each serve path against
// direct:
//
//	go test -run '^$' -bench ServeCallLatency -benchtime 2000x ./internal/cli/
func BenchmarkServeCallLatency(b *testing.B) {
	srv := fake.Start(b, nil)
	p := newProcs(b)
	p.mustRun(0, "add", "demo", srv.URL, "--auth", "none")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	connect := func(name string, t mcp.Transport) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	echo := exec.CommandContext(ctx, self)
	echo.Env = append(os.Environ(), envStdioEcho+"=1")
	text := map[string]any{"text": "ping"}
	paths := []callPath{
		{"direct", connect("direct", &mcp.StreamableClientTransport{Endpoint: srv.URL}), "echo", text},
		{"stdio-hop", connect("stdio-hop", &mcp.CommandTransport{Command: echo}), "echo", text},
		{"serve-direct", connect("serve-direct", &mcp.CommandTransport{Command: p.command(ctx, "serve", "--direct")}), "mcp__demo__echo", text},
		{"serve-gateway", connect("serve-gateway", &mcp.CommandTransport{Command: p.command(ctx, "serve")}), "mcp",
			json.RawMessage(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"ping"}}`)},
	}
	call := func(p callPath) {
		res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: p.tool, Arguments: p.args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", p.name, err, res)
		}
	}
	for _, p := range paths { // warm: the serve paths connect the remote server
		for range 20 {
			call(p)
		}
	}
	took := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for range b.N {
		for i, p := range paths {
			start := time.Now()
			call(p)
			took[i] = append(took[i], time.Since(start))
		}
	}
	b.StopTimer()
	p50 := make([]time.Duration, len(paths))
	for i := range paths {
		slices.Sort(took[i])
		p50[i] = took[i][len(took[i])/2]
		b.ReportMetric(float64(p50[i].Microseconds()), paths[i].name+"-p50-µs")
	}
	floor := p50[0] + p50[1]
	b.ReportMetric(float64(p50[2])/float64(floor), "serve-direct/floor")
	b.ReportMetric(float64(p50[3])/float64(floor), "gateway/floor")

	// Throughput: 8 callers at once on each path's session.
	const callers, each = 8, 200
	rate := func(p callPath) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: p.tool, Arguments: p.args}); err != nil || res.IsError {
						b.Errorf("%s: %v", p.name, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(callers*each) / time.Since(start).Seconds()
	}
	direct := rate(paths[0])
	for _, p := range paths[2:] {
		r := rate(p)
		b.ReportMetric(r/direct, p.name+"-throughput/direct")
	}
	b.Logf("p50: %s; floor %v", fmt.Sprint(p50), floor)
	b.ReportMetric(0, "ns/op")
}
