package manager

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hooks the operating side plugs in: every call's end, every event
// stream's opening and end, and a sending middleware per server.
func TestOperatingHooks(t *testing.T) {
	t.Parallel()
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			srv := fake.Start(t, &fake.Options{Versions: g.versions})
			var mu sync.Mutex
			var ends []string
			var streams []bool
			var sent []string
			m := newManager(t, &Options{
				OnCallEnd: func(ctx context.Context, server, tool string, elapsed time.Duration, res *mcp.CallToolResult, err error) {
					mu.Lock()
					defer mu.Unlock()
					outcome := "ok"
					switch {
					case err != nil:
						outcome = string(mcpgate.CategoryOf(err))
					case res.IsError:
						outcome = "tool-error"
					}
					if elapsed <= 0 {
						outcome += " (no duration)"
					}
					ends = append(ends, server+"/"+tool+": "+outcome)
				},
				OnEventStream: func(server string, open bool) {
					mu.Lock()
					defer mu.Unlock()
					streams = append(streams, open)
				},
				ClientMiddleware: func(server string) mcp.Middleware {
					return func(next mcp.MethodHandler) mcp.MethodHandler {
						return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
							mu.Lock()
							sent = append(sent, server+" "+method)
							mu.Unlock()
							return next(ctx, method, req)
						}
					}
				},
			}, cfg("s", srv.URL))
			ctx := ctxT(t, 10*time.Second)
			if _, err := m.CallTool(ctx, "s", "echo", raw(`{"text":"x"}`), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := m.CallTool(ctx, "s", "fail", nil, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := m.CallTool(ctx, "s", "nope", nil, nil); !errors.Is(err, mcpgate.ErrNotFound) {
				t.Fatalf("unknown tool: %v", err)
			}
			eventually(t, "an event stream to open", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(streams, true)
			})
			m.Close()
			mu.Lock()
			defer mu.Unlock()
			want := []string{"s/echo: ok", "s/fail: tool-error", "s/nope: not-found"}
			if !slices.Equal(ends, want) {
				t.Errorf("call ends %q, want %q", ends, want)
			}
			if !slices.Contains(sent, "s tools/call") || !slices.Contains(sent, "s tools/list") {
				t.Errorf("the middleware saw %q", sent)
			}
			if n := len(streams); n == 0 || streams[n-1] {
				t.Errorf("stream events %v: the last should be its end", streams)
			}
		})
	}
}
