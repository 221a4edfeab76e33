package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These need the manager's forwarding of progress (CallOptions.Progress),
// of log messages (Options.OnLog) and its resource templates.

func TestDirectResourceTemplates(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	each(t, func(t *testing.T, version string) {
		r := startHost(t, host{direct: true, version: version}, cfg("up", url))
		ctx := ctx10(t)
		tl, err := r.cs.ListResourceTemplates(ctx, nil)
		if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "up://items/{id}" || tl.ResourceTemplates[0].MIMEType != "application/json" {
			t.Fatalf("templates: %v %+v", err, tl)
		}
		rr, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://items/42"})
		if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `{"id":"42"}`) || rr.Contents[0].URI != "up://items/42" {
			t.Fatalf("read through a template: %v %+v", err, rr)
		}
	})
}

func TestProgressReachesTheHost(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	each(t, func(t *testing.T, version string) {
		for _, direct := range []bool{false, true} {
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			r := startHost(t, host{direct: direct, version: version, client: &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					got = append(got, req.Params)
					mu.Unlock()
				},
			}}, cfg("up", url))
			params := &mcp.CallToolParams{Name: "mcp__up__count"}
			if !direct {
				params = &mcp.CallToolParams{Name: "mcp", Arguments: json.RawMessage(`{"action":"call","server":"up","tool":"count"}`)}
			}
			params.SetProgressToken("tok-1")
			res, err := r.cs.CallTool(ctx10(t), params)
			if err != nil || res.IsError {
				t.Fatalf("direct=%v: %v %+v", direct, err, res)
			}
			servedBy(t, r, version, 1)
			mu.Lock()
			if len(got) != 3 {
				t.Errorf("direct=%v: %d progress notifications before the result, want 3", direct, len(got))
			}
			for i, p := range got {
				if p.ProgressToken != "tok-1" || p.Progress != float64(i+1) || p.Total != 3 || strings.ContainsRune(p.Message, 0x1b) {
					t.Errorf("direct=%v: notification %d: %+v", direct, i, p)
				}
			}
			mu.Unlock()

			// A call whose host asked for no progress asks the server for
			// none: a token nobody reads costs the server work per call.
			delete(params.Meta, "progressToken")
			res, err = r.cs.CallTool(ctx10(t), params)
			if err != nil || res.IsError || len(res.Content) != 1 {
				t.Fatalf("direct=%v, no token: %v %+v", direct, err, res)
			}
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "counted, nobody asked for progress") {
				t.Errorf("direct=%v: a call without a progress token reached the server with one: %+v", direct, res.Content[0])
			}
		}
	})
}

func TestLogsReachTheHostWithACallInFlight(t *testing.T) {
	t.Parallel()
	// The manager asks a session-era server for log messages once, a
	// 2026-07-28 (stateless) one per request.
	for era, opts := range map[string]*mcp.StreamableHTTPOptions{"session-era server": nil, "2026-07-28 server": {Stateless: true}} {
		t.Run(era, func(t *testing.T) { logsReachTheHost(t, upstreamWith(t, opts, catalog)) })
	}
}

func logsReachTheHost(t *testing.T, url string) {
	each(t, func(t *testing.T, version string) {
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		logs := make(chan *mcp.LoggingMessageParams, 10)
		r := startHost(t, host{direct: true, version: version, client: &mcp.ClientOptions{
			//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
			LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params },
		}}, cfg("up", url))
		ctx := ctx10(t)
		if version < "2026-07-28" {
			//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
			if err := r.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
		}
		params := &mcp.CallToolParams{Name: "mcp__up__chatty"}
		if version >= "2026-07-28" {
			//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
			params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "info"}
		}
		if res, err := r.cs.CallTool(ctx, params); err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		if version < "2026-07-28" {
			servedBy(t, r, version, 1) // a log level in _meta keeps a 2026-07-28 call with the go-sdk
		}
		select {
		case l := <-logs:
			if l.Logger != "up/engine" || l.Level != "warning" || fmt.Sprint(l.Data) != "hello from chatty" {
				t.Errorf("log message: %+v", l)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the server's log message never reached the host")
		}
	})
}
