package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// Direct mode mirrors the bridge onto the front: every enabled remote tool
// is registered under its safe name, every prompt, resource and resource
// template under its server-qualified name, and they are registered again
// when a catalog or the configuration changes, which makes the go-sdk send
// the list_changed notifications to the host. The first mirror happens on
// the host's first request that needs it (a list, a call, a prompt, a
// read), so starting the front touches no network, and a fresh session
// can call, get a prompt or read a resource without listing first.

// mirror is the front's copy of the bridge's catalogs.
type mirror struct {
	regMu       sync.Mutex                       // guards the maps
	direct      map[string]gateway.Descriptor    // registered bridged tools by name
	prompts     map[string]bool                  // registered /server:prompt names
	resources   map[string]string                // registered resource URI → @server:uri
	templates   map[string]string                // registered URI template → @server:template
	generations map[string]uint64                // catalog generation last mirrored, per server
	added       map[string]*mcp.ResourceTemplate // template registered per @server:template

	seen listSeen // what each host has listed, to tell it only of changes

	syncMu    sync.Mutex // one sync at a time
	firstSync sync.Once
	synced    atomic.Bool
	resync    chan struct{}
	lastMiss  atomic.Int64 // unix nanos of the last sync for an unknown name
}

func (m *mirror) init() {
	m.direct = make(map[string]gateway.Descriptor)
	m.prompts = make(map[string]bool)
	m.resources = make(map[string]string)
	m.templates = make(map[string]string)
	m.generations = make(map[string]uint64)
	m.resync = make(chan struct{}, 1)
}

// missSyncEvery bounds how often a request for a name the mirror does not
// have makes the front sync again (a server that failed to list at first
// may be reachable now).
const missSyncEvery = 5 * time.Second

// enableDirect installs the lazy first sync, and holds back the
// list_changed notifications a host already has the news of (listSeen).
// New calls it for Direct.
func (f *Front) enableDirect() {
	f.seen.live = f.server.Sessions
	f.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if k, ok := listKindOf(method); ok {
				answering := func() {}
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
					answering = f.seen.listing(ss, k)
				}
				f.firstSync.Do(func() { f.Sync(ctx) })
				answering()
			}
			switch method {
			case "tools/call", "prompts/get", "resources/read":
				f.mirrorFor(ctx, func() bool { return f.has(method, req) })
			}
			return next(ctx, method, req)
		}
	})
	f.server.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if kinds := changedKinds(method); kinds != nil {
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !f.seen.tell(ctx, ss, kinds) {
					return nil, nil
				}
			}
			return next(ctx, method, req)
		}
	})
}

// has reports whether the mirror has what req asks for.
func (f *Front) has(method string, req mcp.Request) bool {
	f.regMu.Lock()
	defer f.regMu.Unlock()
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		_, ok := f.direct[r.Params.Name]
		return ok
	case *mcp.GetPromptRequest:
		return f.prompts["/"+r.Params.Name]
	case *mcp.ReadResourceRequest:
		_, ok := f.resources[r.Params.URI]
		return ok || len(f.templates) > 0 // a template may match; the SDK decides
	}
	return true
}

func (f *Front) missAllowed() bool {
	now := time.Now().UnixNano()
	last := f.lastMiss.Load()
	return now-last >= int64(missSyncEvery) && f.lastMiss.CompareAndSwap(last, now)
}

// StateChanged is meant for manager.Options.OnStateChange: when a
// server's catalog changed, the front's registrations are brought up to
// date in the background.
func (f *Front) StateChanged(st manager.Status) {
	if !f.opts.Direct {
		return
	}
	f.regMu.Lock()
	seen, known := f.generations[st.ID]
	changed := !known || seen != st.Generation
	f.generations[st.ID] = st.Generation
	f.regMu.Unlock()
	if changed {
		f.requestSync()
	}
}

// requestSync asks the sync loop for a sync, once the first has happened.
func (f *Front) requestSync() {
	if !f.synced.Load() {
		return // the first sync, when it comes, will see the change
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

// Sync mirrors the bridge's tools, prompts, resources and resource
// templates onto the front.
func (f *Front) Sync(ctx context.Context) {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	defer f.synced.Store(true)
	if f.opts.Burst != nil {
		defer f.opts.Burst()()
	}
	b := f.opts.Bridge
	if !f.syncTools(ctx, b) {
		return
	}
	f.syncPrompts(ctx, b)
	f.syncResources(ctx, b)
	f.syncTemplates(ctx, b)
}

// syncTools mirrors the bridge's tools; false if it could not list them.
func (f *Front) syncTools(ctx context.Context, b *gateway.Bridge) bool {
	descs, _, err := b.Tools(ctx)
	if err != nil {
		return false
	}
	want := make(map[string]gateway.Descriptor, len(descs))
	for _, d := range descs {
		want[d.Name] = d
	}
	var gone []string
	f.regMu.Lock()
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
	f.regMu.Unlock()
	if len(gone) > 0 || len(add) > 0 {
		defer f.seen.changing(kindTools)()
	}
	if len(gone) > 0 {
		f.server.RemoveTools(gone...)
	}
	// The go-sdk checks each schema it is given by encoding and decoding
	// it twice, most of what mirroring a large catalog costs; one tool's
	// registration does not wait for another's, so they go side by side.
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, d := range add {
		g.Go(func() error { f.addDirect(d); return nil })
	}
	g.Wait()
	return true
}

// addDirect registers a bridged tool with the go-sdk server, or, when
// the go-sdk refuses its definition, forgets it and says so.
func (f *Front) addDirect(d gateway.Descriptor) {
	def := *d.Def
	def.Description = "[" + d.Server + "] " + def.Description
	if err := guard(func() { f.server.AddTool(&def, f.directHandler(d)) }); err != nil {
		f.opts.Logger.Warn("serve: a remote tool could not be offered", "server", d.Server, "error", err)
		f.regMu.Lock()
		delete(f.direct, d.Name)
		f.regMu.Unlock()
	}
}

// guard runs a go-sdk registration, which panics on definitions it
// rejects (a remote tool with a malformed x-mcp-header, a template that
// does not parse): a remote server must not be able to end the process.
func guard(register func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	register()
	return nil
}

func (f *Front) directHandler(d gateway.Descriptor) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.directCall(ctx, toolRequest(req), d, req.Params.Arguments)
	}
}

// directCall serves one call of a bridged tool, whether the go-sdk server
// decoded it or the stdio fast path did (passthru.go).
func (f *Front) directCall(ctx context.Context, hr hostRequest, d gateway.Descriptor, args json.RawMessage) (*mcp.CallToolResult, error) {
	res, ask, err := f.serveCall(ctx, hr, d.Server, func(ctx context.Context, opts *manager.CallOptions) (any, error) {
		out := f.opts.Bridge.Call(ctx, d, args, opts)
		if out.IsError && !d.TaskOnly && f.opts.Bridge.TaskOnly(d) {
			f.requestSync() // the host's list should say so too
		}
		return out, nil
	})
	return toolResult(res, ask, err)
}

// mirrorFor makes the mirror a request for method needs, as the
// middleware of enableDirect does: the first sync, and a sync again
// (at most every missSyncEvery) when has says the mirror lacks the name.
func (f *Front) mirrorFor(ctx context.Context, has func() bool) {
	f.firstSync.Do(func() { f.Sync(ctx) })
	if !has() && f.missAllowed() {
		f.Sync(ctx)
	}
}

// directTool is the bridged tool registered as name.
func (f *Front) directTool(name string) (gateway.Descriptor, bool) {
	f.regMu.Lock()
	defer f.regMu.Unlock()
	d, ok := f.direct[name]
	return d, ok
}

func (f *Front) syncPrompts(ctx context.Context, b *gateway.Bridge) {
	prompts, _ := b.Prompts(ctx)
	f.regMu.Lock()
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
	f.regMu.Unlock()
	if len(gone) > 0 || len(add) > 0 {
		defer f.seen.changing(kindPrompts)()
	}
	if len(gone) > 0 {
		f.server.RemovePrompts(gone...)
	}
	for _, name := range add {
		server, _, _ := gateway.ParsePromptName(name)
		p := *prompts[name]
		p.Name = strings.TrimPrefix(name, "/") // clients add their own slash
		f.server.AddPrompt(&p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			args := req.Params.Arguments
			res, ask, err := f.serveCall(ctx, promptRequest(req), server, func(ctx context.Context, _ *manager.CallOptions) (any, error) {
				return b.GetPrompt(ctx, name, args)
			})
			switch {
			case err != nil:
				return nil, err
			case ask != nil:
				return &mcp.GetPromptResult{InputRequests: ask.requests, RequestState: ask.state}, nil
			}
			return res.(*mcp.GetPromptResult), nil
		})
	}
}

func (f *Front) syncResources(ctx context.Context, b *gateway.Bridge) {
	resources, _ := b.Resources(ctx)
	f.regMu.Lock()
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
	f.regMu.Unlock()
	if len(gone) > 0 || len(add) > 0 {
		defer f.seen.changing(kindResources)()
	}
	if len(gone) > 0 {
		f.server.RemoveResources(gone...)
	}
	for _, name := range add {
		server, _, _ := gateway.ParseResourceName(name)
		r := *resources[name]
		r.Name = name
		f.server.AddResource(&r, f.readHandler(b, server))
	}
}

func (f *Front) syncTemplates(ctx context.Context, b *gateway.Bridge) {
	templates, _ := b.Templates(ctx)
	f.regMu.Lock()
	var gone []string
	for tmpl, name := range f.templates {
		if t, ok := templates[name]; !ok || !reflect.DeepEqual(t, f.added[name]) {
			gone = append(gone, tmpl)
			delete(f.templates, tmpl)
		}
	}
	var add []string
	for name, t := range templates {
		if _, taken := f.templates[t.URITemplate]; !taken {
			f.templates[t.URITemplate] = name
			add = append(add, name)
		}
	}
	f.regMu.Unlock()
	if len(gone) > 0 || len(add) > 0 {
		defer f.seen.changing(kindTemplates)()
	}
	if len(gone) > 0 {
		f.server.RemoveResourceTemplates(gone...)
	}
	for _, name := range add {
		server, _, _ := gateway.ParseResourceName(name)
		t := *templates[name]
		t.Name = name
		if err := guard(func() { f.server.AddResourceTemplate(&t, f.readHandler(b, server)) }); err != nil {
			f.opts.Logger.Warn("serve: a remote resource template could not be offered", "server", server, "error", err)
			f.regMu.Lock()
			delete(f.templates, t.URITemplate)
			f.regMu.Unlock()
			continue
		}
		f.regMu.Lock()
		if f.added == nil {
			f.added = make(map[string]*mcp.ResourceTemplate)
		}
		f.added[name] = templates[name]
		f.regMu.Unlock()
	}
}

// readHandler reads a resource (listed, or matching a template) from
// server, keeping the server's MIME types.
func (f *Front) readHandler(b *gateway.Bridge, server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		res, ask, err := f.serveCall(ctx, readRequest(req), server, func(ctx context.Context, _ *manager.CallOptions) (any, error) {
			return b.Read(ctx, server, uri)
		})
		switch {
		case err != nil:
			return nil, err
		case ask != nil:
			return &mcp.ReadResourceResult{InputRequests: ask.requests, RequestState: ask.state}, nil
		}
		return res.(*mcp.ReadResourceResult), nil
	}
}
