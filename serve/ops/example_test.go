package ops_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/serve/ops"
)

// A tenant over its rate gets a 429 that says when to try again, with a
// JSON-RPC error its host can show.
func ExampleLimiter_Wrap() {
	lim := ops.NewLimiter(&ops.LimiterOptions{
		Tenants: map[string]config.Limits{"acme": {RequestsPerMinute: 6}}, // a burst of 1, then one every 10 s
		Who:     func(context.Context) (string, string) { return "acme", "alice" },
	})
	h := lim.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
		fmt.Println(strings.TrimSpace(fmt.Sprintln(w.Code, w.Header().Get("Retry-After"), w.Body.String())))
	}
	// Output:
	// 200
	// 429 10 {"error":{"code":-32000,"data":{"limit":"rate","retryAfterSeconds":10},"message":"too many requests: this tenant may send 6 a minute; try again in 10 s"},"id":null,"jsonrpc":"2.0"}
}

// The trace context of a request reaches a remote server in its _meta, as
// MCP 2026-07-28 describes.
func ExampleInjectMeta() {
	ctx := ops.ExtractMeta(context.Background(), map[string]any{
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
	})
	meta := map[string]any{}
	ops.InjectMeta(ctx, meta)
	fmt.Println(meta["traceparent"])
	// Output:
	// 00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01
}
