package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envBaseline names another mcpgate binary (main's, say) whose serve
// paths the benchmark alternates with this one's, as a baseline measured
// in the same run.
const envBaseline = "MCPGATE_BENCH_BASELINE"

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
	cmd  *exec.Cmd // the process serving the calls, if one is
}

// cpuTime is the user and system CPU time cmd's process has used so far,
// read from /proc (0 where there is none).
func cpuTime(cmd *exec.Cmd) time.Duration {
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th, in clock ticks of 1/100 s.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkServeCallLatency measures one echo call six ways, alternating
// them in one run so all see the same machine:
//
//   - direct: the go-sdk client to the fake server over Streamable HTTP;
//   - stdio-hop: the go-sdk client to a go-sdk stdio echo server (one
//     stdio hop alone, no network);
//   - direct-2026: direct, but speaking 2026-07-28, as mcpgate's manager
//     does to the fake (which serves that generation statelessly);
//   - direct-session-era: direct to a second fake that speaks only the
//     session era (2025-11-25 down), to which mcpgate speaks 2025-11-25
//     too;
//   - raw-proxy, raw-proxy-2025: through the raw proxy (rawproxy_test.go),
//     which forwards each call's line with its own POST, speaking
//     2026-07-28 upstream as mcpgate's manager does, or 2025-11-25 as
//     direct does: the ceiling of any stdio proxy with one HTTP hop;
//   - serve-direct: through `mcpgate serve --direct` (mcp__demo__echo);
//   - serve-gateway: through `mcpgate serve`, the gateway's call action;
//   - serve-gateway-2026: the same, from a host speaking 2026-07-28;
//   - serve-direct-session-era: `serve --direct` to the session-era fake
//     (mcp__old__echo).
//
// The floor for a stdio proxy is direct + stdio-hop (floor-2026:
// direct-2026 + stdio-hop; floor-session-era: direct-session-era +
// stdio-hop, the one floor where the proxy and direct speak the same
// generation to the same server as the does). It reports each path's p50 and each proxy
// path's p50 against both floors, then the throughput of 8 concurrent
// callers through direct-2026 and each proxy path against direct (and
// each proxy's against direct-2026), the median of six passes:
//
//	go test -run '^$' -bench ServeCallLatency -benchtime 3000x -count 2 ./internal/cli/
//
// With MCPGATE_BENCH_BASELINE=/path/to/another/mcpgate, that binary's
// serve paths (base-serve-direct, base-serve-gateway,
// base-serve-gateway-2026, base-serve-direct-session-era) are alternated with these too, on the same
// config and data directory.
func BenchmarkServeCallLatency(b *testing.B) {
	srv := fake.Start(b, nil)
	old := fake.Start(b, &fake.Options{Versions: fake.SessionEra})
	p := newProcs(b)
	p.mustRun(0, "add", "demo", srv.URL, "--auth", "none")
	p.mustRun(0, "add", "old", old.URL, "--auth", "none")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	connectAt := func(name string, t mcp.Transport, version string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	connect := func(name string, t mcp.Transport) *mcp.ClientSession { return connectAt(name, t, "2025-11-25") }
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	echo := exec.CommandContext(ctx, self)
	echo.Env = append(os.Environ(), envStdioEcho+"=1")
	text := map[string]any{"text": "ping"}
	gatewayArgs := json.RawMessage(`{"action":"call","server":"demo","tool":"echo","arguments":{"text":"ping"}}`)
	process := func(name string, cmd *exec.Cmd, tool string, args any) callPath {
		return callPath{name, connect(name, &mcp.CommandTransport{Command: cmd}), tool, args, cmd}
	}
	process2026 := func(name string, cmd *exec.Cmd, tool string, args any) callPath {
		return callPath{name, connectAt(name, &mcp.CommandTransport{Command: cmd}, "2026-07-28"), tool, args, cmd}
	}
	rawProxy := func(name, version string) callPath {
		cs, cmd := startRawProxy(b, ctx, srv.URL, version)
		return callPath{name, cs, "echo", text, cmd}
	}
	paths := []callPath{
		{"direct", connect("direct", &mcp.StreamableClientTransport{Endpoint: srv.URL}), "echo", text, nil},
		process("stdio-hop", echo, "echo", text),
		{"direct-2026", connectAt("direct-2026", &mcp.StreamableClientTransport{Endpoint: srv.URL}, "2026-07-28"), "echo", text, nil},
		{"direct-session-era", connect("direct-session-era", &mcp.StreamableClientTransport{Endpoint: old.URL}), "echo", text, nil},
		rawProxy("raw-proxy", "2026-07-28"),
		rawProxy("raw-proxy-2025", "2025-11-25"),
		process("serve-direct", p.command(ctx, "serve", "--direct"), "mcp__demo__echo", text),
		process("serve-gateway", p.command(ctx, "serve"), "mcp", gatewayArgs),
		process2026("serve-gateway-2026", p.command(ctx, "serve"), "mcp", gatewayArgs),
		process("serve-direct-session-era", p.command(ctx, "serve", "--direct"), "mcp__old__echo", text),
	}
	if base := os.Getenv(envBaseline); base != "" {
		baseline := func(args ...string) *exec.Cmd {
			cmd := p.command(ctx, args...)
			cmd.Path, cmd.Args[0] = base, base
			return cmd
		}
		paths = append(paths,
			process("base-serve-direct", baseline("serve", "--direct"), "mcp__demo__echo", text),
			process("base-serve-gateway", baseline("serve"), "mcp", gatewayArgs),
			process2026("base-serve-gateway-2026", baseline("serve"), "mcp", gatewayArgs),
			process("base-serve-direct-session-era", baseline("serve", "--direct"), "mcp__old__echo", text))
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
	cpu := make([]time.Duration, len(paths))
	for i, p := range paths {
		cpu[i] = cpuTime(p.cmd)
	}
	b.ResetTimer()
	order := rand.New(rand.NewPCG(1, 2))
	for range b.N {
		// Each round takes the paths in another order: a path measured
		// right after another process's call pays for what that process
		// still does once it has answered (a fixed order made
		// serve-direct, after stdio-hop, 15 % slower than serve-gateway;
		// starting each round one path further on still measured every
		// path after the same one, and serve-gateway, always after
		// serve-direct, came out 5-6 % slower than it, main's
		// base-serve-direct, always after serve-gateway, 7 % slower than
		// its own gateway).
		for _, i := range order.Perm(len(paths)) {
			start := time.Now()
			call(paths[i])
			took[i] = append(took[i], time.Since(start))
		}
	}
	b.StopTimer()
	// The CPU each process spent per call: unlike wall time, other work
	// on the machine hardly moves it.
	for i, p := range paths {
		if p.cmd != nil {
			b.ReportMetric(float64((cpuTime(p.cmd)-cpu[i]).Microseconds())/float64(b.N), p.name+"-cpu-µs/call")
		}
	}
	p50 := make([]time.Duration, len(paths))
	for i := range paths {
		slices.Sort(took[i])
		p50[i] = took[i][len(took[i])/2]
		b.ReportMetric(float64(p50[i].Microseconds()), paths[i].name+"-p50-µs")
	}
	const firstProxy = 4 // paths before it are the floors' parts
	floor, floor26, floorOld := p50[0]+p50[1], p50[2]+p50[1], p50[3]+p50[1]
	for i := firstProxy; i < len(paths); i++ {
		b.ReportMetric(float64(p50[i])/float64(floor), paths[i].name+"/floor")
		b.ReportMetric(float64(p50[i])/float64(floor26), paths[i].name+"/floor-2026")
		if strings.HasSuffix(paths[i].name, "-session-era") {
			b.ReportMetric(float64(p50[i])/float64(floorOld), paths[i].name+"/floor-session-era")
		}
	}

	// Throughput: 8 callers at once on each path's session but the stdio
	// hop's. With the machine busy, the wall-clock ratio swings with
	// whatever else runs;
	// the CPU a call costs (this process: the host's client and the fake
	// server; plus the serving process) is what bounds the throughput of
	// a machine the calls keep busy, so it is reported beside it.
	const callers, each = 8, 200
	// Each path is measured in six passes, every other one in the reverse
	// order, so that a drift of the machine's load during the phase does
	// not all land on the paths measured last or first (in one fixed
	// order, two identical builds differed by up to 6 % in CPU per call).
	// A throughput ratio is taken within each pass, between paths measured
	// moments apart, and the median of the passes is reported: with two
	// passes, one burst of other work on the machine moved a ratio by a
	// tenth.
	const passes = 6
	measured := []int{0, 2, 3} // direct, direct-2026, direct-session-era, then the proxies
	for i := firstProxy; i < len(paths); i++ {
		measured = append(measured, i)
	}
	busy := make([][passes]time.Duration, len(paths))
	used := make([]time.Duration, len(paths))
	served := make([]time.Duration, len(paths)) // the serving process's part of used
	measure := func(i, pass int) {
		p := paths[i]
		var wg sync.WaitGroup
		self, proc := selfCPU(), cpuTime(p.cmd)
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
		busy[i][pass] = time.Since(start)
		used[i] += selfCPU() - self + cpuTime(p.cmd) - proc
		served[i] += cpuTime(p.cmd) - proc
	}
	for pass := range passes {
		order := slices.Clone(measured)
		if pass%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			measure(i, pass)
		}
	}
	const calls = passes * callers * each
	// ratio is the median over the passes of path i's throughput against
	// path j's in the same pass.
	ratio := func(i, j int) float64 {
		r := make([]float64, passes)
		for pass := range passes {
			r[pass] = busy[j][pass].Seconds() / busy[i][pass].Seconds()
		}
		slices.Sort(r)
		return (r[passes/2-1] + r[passes/2]) / 2
	}
	cpuPerCall := func(i int) float64 { return float64(used[i].Microseconds()) / calls }
	b.ReportMetric(cpuPerCall(0), "direct-cpu-µs/call-8")
	b.ReportMetric(ratio(2, 0), "direct-2026-throughput/direct")
	b.ReportMetric(cpuPerCall(2), "direct-2026-cpu-µs/call-8")
	for i := firstProxy; i < len(paths); i++ {
		name := paths[i].name
		b.ReportMetric(ratio(i, 0), name+"-throughput/direct")
		b.ReportMetric(ratio(i, 2), name+"-throughput/direct-2026")
		if strings.HasSuffix(name, "-session-era") || name == "raw-proxy-2025" {
			b.ReportMetric(ratio(i, 3), name+"-throughput/direct-session-era")
		}
		b.ReportMetric(cpuPerCall(i), name+"-cpu-µs/call-8")
		// The serving process alone: this process's part (the host's
		// client, the fake, and the collection of everything every path
		// left behind) moves with the machine more than the proxy does.
		b.ReportMetric(float64(served[i].Microseconds())/calls, name+"-proc-cpu-µs/call-8")
		b.ReportMetric(cpuPerCall(0)/cpuPerCall(i), name+"-cpu-throughput/direct")
	}
	b.Logf("p50: %s; floor %v, floor-2026 %v, floor-session-era %v", fmt.Sprint(p50), floor, floor26, floorOld)
	b.ReportMetric(0, "ns/op")
}
