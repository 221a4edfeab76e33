package serve_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tinyPNG is a 1×1 PNG, the blob of up://pixel.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// catalog is the upstream of these tests: a tool with an output schema,
// one whose structured result is too big to pass on, one that reports
// progress, one that logs, one that asks twice, resources of three MIME
// types, a resource template and a prompt.
func catalog(s *mcp.Server) {
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":` + props + `}`)
	}
	s.AddTool(&mcp.Tool{Name: "weather", Description: "Weather of a city.",
		InputSchema:  obj(`{"city":{"type":"string"}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"},"conditions":{"type":"string"}},"required":["temperature","conditions"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: `{"temperature":21,"conditions":"sunny"}`}},
			StructuredContent: map[string]any{"temperature": 21, "conditions": "sunny"},
		}, nil
	})
	s.AddTool(&mcp.Tool{Name: "huge", Description: "A structured result over every bound.", InputSchema: obj(`{}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see structured"}},
				StructuredContent: map[string]any{"blob": strings.Repeat("x", 200<<10)}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "count", Description: "Counts to three, reporting progress.", InputSchema: obj(`{}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			if tok == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "counted, nobody asked for progress"}}}, nil
			}
			for i := 1; i <= 3; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d\x1b[31m", i)})
				time.Sleep(20 * time.Millisecond) // as work between steps would (see chatty)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "counted"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "chatty", Description: "Logs a line, then answers.", InputSchema: obj(`{}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "engine", Data: "hello from chatty"})
			// The go-sdk client may handle a notification after a response
			// that follows it at once; work after logging is the usual case.
			time.Sleep(20 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chatted"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "asktwice", Description: "Asks two questions.", InputSchema: obj(`{}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var got []string
			for _, q := range []string{"first?", "second?"} {
				res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: q,
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)})
				if err != nil {
					return nil, err
				}
				got = append(got, res.Action+":"+fmt.Sprint(res.Content["answer"]))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(got, " ")}}}, nil
		})
	text := func(uri, mime, body string) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: body}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: "up://notes", Name: "notes", MIMEType: "text/markdown", Description: "Release notes."}, text("up://notes", "text/markdown", "# Notes\nfixed things"))
	s.AddResource(&mcp.Resource{URI: "up://data", Name: "data", MIMEType: "application/json"}, text("up://data", "application/json", `{"ok":true}`))
	s.AddResource(&mcp.Resource{URI: "up://pixel", Name: "pixel", MIMEType: "image/png"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "up://pixel", MIMEType: "image/png", Blob: tinyPNG}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "up://items/{id}", Name: "item", MIMEType: "application/json", Description: "One item by ID."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, "up://items/")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: `{"id":"` + id + `"}`}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "hello", Description: "Says hello.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}}}}, nil
		})
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCapabilitiesAdvertisedBeforeAnythingIsListed(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	each(t, func(t *testing.T, version string) {
		for _, direct := range []bool{false, true} {
			r := startHost(t, host{direct: direct, version: version}, cfg("demo", srv.URL))
			caps := r.cs.InitializeResult().Capabilities
			if caps == nil || caps.Tools == nil || !caps.Tools.ListChanged {
				t.Fatalf("direct=%v: no tools capability in %+v", direct, caps)
			}
			if direct && (caps.Prompts == nil || caps.Resources == nil || !caps.Prompts.ListChanged || !caps.Resources.ListChanged) {
				t.Errorf("direct: prompts or resources not advertised: %+v", caps)
			}
			//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
			if caps.Logging == nil {
				t.Errorf("direct=%v: logging not advertised", direct)
			}
		}
		if srv.Initializes() != 0 {
			t.Error("advertising capabilities connected to a remote server")
		}
	})
}

func TestDirectFreshSessionWithoutListing(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	each(t, func(t *testing.T, version string) {
		r := startHost(t, host{direct: true, version: version}, cfg("up", url))
		ctx := ctx10(t)
		res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__up__weather", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil || res.IsError {
			t.Fatalf("a call before any list: %v %v", err, res)
		}
		pr, err := r.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up:hello", Arguments: map[string]string{"name": "Ada"}})
		if err != nil || len(pr.Messages) != 1 || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "Hello, Ada!") {
			t.Fatalf("a prompt before any list: %v %+v", err, pr)
		}
		rr, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://data"})
		if err != nil || len(rr.Contents) != 1 {
			t.Fatalf("a read before any list: %v %+v", err, rr)
		}
		if rr.Contents[0].MIMEType != "application/json" || !strings.Contains(rr.Contents[0].Text, `{"ok":true}`) {
			t.Errorf("read up://data: %+v", rr.Contents[0])
		}
	})
}

func TestDirectStructuredContent(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	each(t, func(t *testing.T, version string) {
		r := startHost(t, host{direct: true, version: version}, cfg("up", url))
		ctx := ctx10(t)
		tools, err := r.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var weather *mcp.Tool
		for _, tl := range tools.Tools {
			if tl.Name == "mcp__up__weather" {
				weather = tl
			}
		}
		if weather == nil || weather.OutputSchema == nil {
			t.Fatalf("the tool's output schema is not listed: %+v", weather)
		}
		res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__up__weather", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		got, _ := json.Marshal(res.StructuredContent)
		if string(got) != `{"conditions":"sunny","temperature":21}` {
			t.Errorf("structured content: %s", got)
		}
		if !strings.Contains(textOf(res), "<untrusted-content nonce=") {
			t.Errorf("the text for the model is not marked untrusted: %s", textOf(res))
		}
		res, err = r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__up__huge"})
		if err != nil || !res.IsError || res.StructuredContent != nil || !strings.Contains(textOf(res), "over the") {
			t.Errorf("an oversized structured result: %v %+v", err, res)
		}
	})
}

func TestDirectResourcesKeepTheirMIMETypes(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	each(t, func(t *testing.T, version string) {
		r := startHost(t, host{direct: true, version: version}, cfg("up", url))
		ctx := ctx10(t)
		for uri, want := range map[string]string{"up://notes": "text/markdown", "up://data": "application/json", "up://pixel": "image/png"} {
			rr, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].MIMEType != want {
				t.Errorf("read %s: %v %+v", uri, err, rr)
			}
		}
		rr, _ := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://pixel"})
		if rr != nil && len(rr.Contents) == 1 && string(rr.Contents[0].Blob) != string(tinyPNG) {
			t.Error("the blob changed on the way")
		}
		rr, _ = r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://notes"})
		if rr != nil && len(rr.Contents) == 1 && (!strings.Contains(rr.Contents[0].Text, "<untrusted-content nonce=") || !strings.Contains(rr.Contents[0].Text, "fixed things")) {
			t.Errorf("resource text for a model: %q", rr.Contents[0].Text)
		}
	})
}

func TestDisabledToolLeavesTheListAndIsRefused(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	each(t, func(t *testing.T, version string) { disabledToolLeaves(t, srv, version) })
}

// disabledToolLeaves: a 2026-07-28 host hears of the change on its
// subscriptions/listen stream, the others on the session.
func disabledToolLeaves(t *testing.T, srv *fake.Server, version string) {
	changed := make(chan struct{}, 16)
	r := startHost(t, host{direct: true, version: version, client: &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}}, cfg("demo", srv.URL))
	ctx := ctx10(t)
	names := func() map[string]bool {
		tools, err := r.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tl := range tools.Tools {
			out[tl.Name] = true
		}
		return out
	}
	if !names()["mcp__demo__echo"] {
		t.Fatal("echo is not listed")
	}
	// The first list mirrored every tool before it was answered: the
	// host has it all, and is not told its list changed (the go-sdk
	// would, 10 ms after the last registration).
	time.Sleep(200 * time.Millisecond)
	if len(changed) > 0 {
		t.Fatal("the host was told its tool list changed right after listing it whole")
	}
	c := cfg("demo", srv.URL)
	c.DisabledTools = []string{"echo"}
	if err := r.m.Update(ctx, []mcpgate.ServerConfig{c}); err != nil {
		t.Fatal(err)
	}
	r.front.ConfigChanged()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed after the tool was disabled")
	}
	if got := names(); got["mcp__demo__echo"] || !got["mcp__demo__add"] {
		t.Errorf("after disabling echo: %v", got)
	}
	if res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__demo__echo", Arguments: map[string]any{"text": "x"}}); err == nil && !res.IsError {
		t.Error("a disabled tool was called")
	}
	servedBy(t, r, version, 1)
}

func TestGatewayToolNamesTheServersAfterAConfigChange(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	changed := make(chan struct{}, 16)
	r := startHost(t, host{client: &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}}, cfg("demo", srv.URL))
	ctx := ctx10(t)
	if err := r.m.Update(ctx, []mcpgate.ServerConfig{cfg("demo", srv.URL), cfg("docs", srv.URL)}); err != nil {
		t.Fatal(err)
	}
	r.front.ConfigChanged()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed after a server was added")
	}
	tools, _ := r.cs.ListTools(ctx, nil)
	if len(tools.Tools) != 1 || !strings.Contains(tools.Tools[0].Description, "demo, docs") {
		t.Errorf("the gateway tool after the change: %+v", tools.Tools)
	}
	c := cfg("demo", srv.URL)
	c.DisabledTools = []string{"echo"}
	r.m.Update(ctx, []mcpgate.ServerConfig{c})
	out, isErr := callMCP(t, r.cs, `{"action":"call","server":"demo","tool":"echo","arguments":{"text":"x"}}`)
	if !isErr || !strings.Contains(out, "disabled") {
		t.Errorf("a disabled tool through the gateway: %s", out)
	}
}

// TestDirectMirrorIsBuiltInABurst holds the front to calling Burst around
// the mirror's sync, so that a process serving on one processor (mcpgate
// serve) builds a large mirror on all of them.
func TestDirectMirrorIsBuiltInABurst(t *testing.T) {
	t.Parallel()
	url := upstream(t, catalog)
	var (
		front        atomic.Pointer[serve.Front]
		mu           sync.Mutex
		open, bursts int
		before       []int // the mirror's size as each burst began
		after        []int // and as it ended
	)
	mirrored := func() int {
		if f := front.Load(); f != nil {
			return serve.DirectTools(f)
		}
		return -1 // a burst before the host's first request
	}
	burst := func() func() {
		mu.Lock()
		defer mu.Unlock()
		open++
		bursts++
		before = append(before, mirrored())
		return func() {
			mu.Lock()
			defer mu.Unlock()
			open--
			after = append(after, mirrored())
		}
	}
	r := startHost(t, host{direct: true, burst: burst}, cfg("up", url))
	front.Store(r.front)
	res, err := r.cs.ListTools(ctx10(t), nil)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("list: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if bursts == 0 || open != 0 {
		t.Fatalf("the mirror's sync ran in %d bursts, %d still open; want at least one, all ended", bursts, open)
	}
	if before[0] != 0 || after[0] != len(res.Tools) {
		t.Errorf("the first burst began with %d tools mirrored and ended with %d; want 0 and the %d listed", before[0], after[0], len(res.Tools))
	}
}
