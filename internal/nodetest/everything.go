package nodetest

import (
	"context"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testbin"
)

//go:embed loopback.mjs
var loopbackShim []byte

// Start runs an installed Node program (a path under node_modules, or a
// script of the test's own) as a server for the test, forced onto
// 127.0.0.1 and a free port, and returns its address ("127.0.0.1:PORT").
// The program is stopped when the test ends.
func (x *Tools) Start(t testing.TB, script string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	shim := filepath.Join(dir, "loopback.mjs")
	if err := os.WriteFile(shim, loopbackShim, 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "addr")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, x.Bin("node"), append([]string{"--import", "file://" + shim, script}, args...)...)
	cmd.Env = append(x.Env(os.Environ()), "MCPGATE_LISTEN_FILE="+addrFile)
	var out testbin.Output
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", script, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.After(30 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		select {
		case <-done:
			t.Fatalf("%s exited before listening:\n%s", script, out.String())
		case <-deadline:
			t.Fatalf("%s did not listen within 30s:\n%s", script, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StartEverything runs the reference server
// @modelcontextprotocol/server-everything over Streamable HTTP and returns
// its MCP endpoint.
func (x *Tools) StartEverything(t testing.TB) string {
	t.Helper()
	addr := x.Start(t, filepath.Join(x.Module("@modelcontextprotocol/server-everything"), "dist", "index.js"), "streamableHttp")
	return "http://" + addr + "/mcp"
}
