package cli

import (
	"context"
	"encoding/base64"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkServeInProcess runs `mcpgate serve` (and --direct) in this
// process over pipes, so that a call's own work can be profiled with the
// rest of the path (host, gateway, manager, the fake server); the host
// speaks 2025-11-25, or 2026-07-28 in gateway-2026; in
// direct-session-era the server speaks only the session era:
//
//	go test -run '^$' -bench ServeInProcess -benchmem -cpuprofile cpu.out -memprofile mem.out ./internal/cli/
//
// BenchmarkServeCallLatency measures the real thing, a separate process.
func BenchmarkServeInProcess(b *testing.B) {
	for _, mode := range []string{"direct", "direct-session-era", "gateway", "gateway-2026"} {
		b.Run(mode, func(b *testing.B) {
			var opts *fake.Options
			if mode == "direct-session-era" {
				opts = &fake.Options{Versions: fake.SessionEra}
			}
			srv := fake.Start(b, opts)
			dir := b.TempDir()
			cfg, data := filepath.Join(dir, "c.json"), filepath.Join(dir, "d")
			env := map[string]string{"HOME": dir, "MCPGATE_KEYRING": "off", "MCPGATE_SECRET_KEY": base64.StdEncoding.EncodeToString(make([]byte, 32))}
			getenv := func(k string) string { return env[k] }
			var sink strings.Builder
			if code := run(context.Background(), []string{"--config", cfg, "--data-dir", data, "add", "demo", srv.URL, "--auth", "none"}, &IO{In: strings.NewReader(""), Out: &sink, ErrOut: &sink}, getenv); code != 0 {
				b.Fatal(sink.String())
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			args := []string{"--config", cfg, "--data-dir", data, "serve"}
			if strings.HasPrefix(mode, "direct") {
				args = append(args, "--direct")
			}
			go func() {
				defer close(done)
				run(ctx, args, &IO{In: inR, Out: outW, ErrOut: io.Discard}, getenv)
				outW.Close()
			}()
			version := "2025-11-25"
			if mode == "gateway-2026" {
				version = "2026-07-28"
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "p", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			name, callArgs := "mcp__demo__echo", any(map[string]any{"text": "ping"})
			if !strings.HasPrefix(mode, "direct") {
				name, callArgs = "mcp", map[string]any{"action": "call", "server": "demo", "tool": "echo", "arguments": map[string]any{"text": "ping"}}
			}
			for range 20 {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: callArgs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: callArgs}); err != nil || res.IsError {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cs.Close()
			inW.Close()
			cancel()
			<-done
		})
	}
}
