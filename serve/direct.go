package serve

import (
	"context"
	"reflect"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Direct mode mirrors the bridge onto the front: every enabled remote tool
// is registered under its safe name, and re-registered when a catalog
// changes, which makes the go-sdk send tools/list_changed to the client.
// The first mirror happens on the client's first list request, so starting
// the front touches no network.

// EnableDirect installs the lazy first sync. New calls it for Direct.
func (f *Front) enableDirect() {
	f.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list", "prompts/list", "resources/list":
				f.firstSync.Do(func() { f.Sync(ctx) })
			}
			return next(ctx, method, req)
		}
	})
}

// StateChanged is meant for manager.Options.OnStateChange: when a
// server's catalog changed, the front's registrations are brought up to
// date in the background.
func (f *Front) StateChanged(st manager.Status) {
	if !f.opts.Direct {
		return
	}
	f.mu.Lock()
	seen, known := f.generations[st.ID]
	changed := !known || seen != st.Generation
	f.generations[st.ID] = st.Generation
	f.mu.Unlock()
	if !changed || !f.synced.Load() {
		return
	}
	select {
	case f.resync <- struct{}{}:
	default: // a resync is already pending
	}
}

// syncLoop runs resyncs requested by StateChanged until ctx ends.
func (f *Front) syncLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.resync:
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			f.Sync(sctx)
			cancel()
		}
	}
}

// Sync mirrors the bridge's tools, prompts and resources onto the front.
func (f *Front) Sync(ctx context.Context) {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	defer f.synced.Store(true)
	b := f.opts.Bridge
	descs, _, err := b.Tools(ctx)
	if err != nil {
		return
	}
	want := make(map[string]gateway.Descriptor, len(descs))
	for _, d := range descs {
		want[d.Name] = d
	}
	var gone []string
	f.mu.Lock()
	for name := range f.direct {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(f.direct, name)
		}
	}
	var add []gateway.Descriptor
	for name, d := range want {
		if old, ok := f.direct[name]; !ok || !reflect.DeepEqual(old.Def, d.Def) {
			add = append(add, d)
			f.direct[name] = d
		}
	}
	f.mu.Unlock()
	if len(gone) > 0 {
		f.server.RemoveTools(gone...)
	}
	for _, d := range add {
		def := *d.Def
		def.Description = "[" + d.Server + "] " + def.Description
		f.server.AddTool(&def, f.directHandler(d))
	}
	f.syncPrompts(ctx, b)
	f.syncResources(ctx, b)
}

func (f *Front) directHandler(d gateway.Descriptor) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		defer f.calling(d.Server, req.Session)()
		return f.opts.Bridge.Call(ctx, d, req.Params.Arguments), nil
	}
}

func (f *Front) syncPrompts(ctx context.Context, b *gateway.Bridge) {
	prompts, _ := b.Prompts(ctx)
	f.mu.Lock()
	var gone []string
	for name := range f.prompts {
		if _, ok := prompts[name]; !ok {
			gone = append(gone, strings.TrimPrefix(name, "/"))
			delete(f.prompts, name)
		}
	}
	var add []string
	for name := range prompts {
		if !f.prompts[name] {
			f.prompts[name] = true
			add = append(add, name)
		}
	}
	f.mu.Unlock()
	if len(gone) > 0 {
		f.server.RemovePrompts(gone...)
	}
	for _, name := range add {
		p := *prompts[name]
		p.Name = strings.TrimPrefix(name, "/") // clients add their own slash
		f.server.AddPrompt(&p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			res := b.GetPrompt(ctx, name, req.Params.Arguments)
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: res.Content[0]}}}, nil
		})
	}
}

func (f *Front) syncResources(ctx context.Context, b *gateway.Bridge) {
	resources, _ := b.Resources(ctx)
	f.mu.Lock()
	var gone []string
	for uri, name := range f.resources {
		if _, ok := resources[name]; !ok {
			gone = append(gone, uri)
			delete(f.resources, uri)
		}
	}
	var add []string
	for name, r := range resources {
		if _, taken := f.resources[r.URI]; !taken {
			f.resources[r.URI] = name
			add = append(add, name)
		}
	}
	f.mu.Unlock()
	if len(gone) > 0 {
		f.server.RemoveResources(gone...)
	}
	for _, name := range add {
		r := *resources[name]
		r.Name = name
		f.server.AddResource(&r, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			res := b.Read(ctx, name)
			text := ""
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
	}
}
