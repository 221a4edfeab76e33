package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bridge exposes every enabled remote tool as its own descriptor, named
// mcp__{server}__{tool}, for agents that register tools directly (and for
// `mcpgate serve --direct`); prompts are named /server:prompt and resources
// @server:uri. Names are safe for model APIs (^[a-zA-Z0-9_-]{1,64}$) and
// unique; the mapping back to server and tool is kept. Results are bounded
// and marked untrusted exactly as the gateway's. Annotations are shown,
// never trusted for decisions.
type Bridge struct {
	g *Gateway
}

// NewBridge returns a bridge over opts.Manager.
func NewBridge(opts *Options) *Bridge { return &Bridge{g: New(opts)} }

// Descriptor is one bridged tool.
type Descriptor struct {
	// Name is the safe, unique name to register.
	Name string
	// Server and Tool are what Name maps back to.
	Server, Tool string
	// Def is the remote definition with Name replaced; its description is
	// remote text, to be treated as untrusted.
	Def *mcp.Tool
	// TaskOnly is set for a tool that runs only as a task, which mcpgate
	// does not support; its description says so and calls are refused.
	TaskOnly bool
}

var unsafeChars = lazyregexp.New(`[^a-zA-Z0-9_-]`)

const maxToolName = 64

// bridgeNames assigns every (server, tool) a safe unique name. Names that
// had to be changed (unsafe characters, too long, or colliding) get a
// short hash of the original so they stay stable across runs.
func bridgeNames(byServer map[string][]*mcp.Tool) []Descriptor {
	var out []Descriptor
	used := make(map[string]bool)
	for _, id := range sortedKeys(byServer) {
		tools := append([]*mcp.Tool(nil), byServer[id]...)
		sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
		for _, t := range tools {
			name := "mcp__" + unsafeChars().ReplaceAllString(id, "_") + "__" + unsafeChars().ReplaceAllString(t.Name, "_")
			changed := name != "mcp__"+id+"__"+t.Name
			if len(name) > maxToolName || changed || used[name] {
				sum := sha256.Sum256([]byte(id + "\x00" + t.Name))
				suffix := "_" + hex.EncodeToString(sum[:3])
				if len(name)+len(suffix) > maxToolName {
					name = name[:maxToolName-len(suffix)]
				}
				name += suffix
			}
			for used[name] { // a hash collision among 16M: extend deterministically
				name = name[:len(name)-1] + "x"
			}
			used[name] = true
			def := *t
			def.Name = name
			out = append(out, Descriptor{Name: name, Server: id, Tool: t.Name, Def: &def})
		}
	}
	return out
}

// Tools returns a descriptor for every enabled tool of every enabled
// server, connecting them as needed. Servers that fail are left out and
// named in the second result. A tool that runs only as a task (see
// tasks.go) says so first in its description; calls to it are refused.
func (b *Bridge) Tools(ctx context.Context) ([]Descriptor, []string, error) {
	byServer, failed, err := b.g.toolsOf(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	descs := bridgeNames(byServer)
	for i, d := range descs {
		if _, ok := d.Def.Meta[manager.MetaTaskSupport]; ok {
			d.Def.Meta = maps.Clone(d.Def.Meta)
			delete(d.Def.Meta, manager.MetaTaskSupport)
		}
		if b.g.tasks.required(d.Server, byServerTool(byServer, d)) {
			descs[i].TaskOnly = true
			descs[i].Def.Description = tasksMark + " " + d.Def.Description
		}
	}
	return descs, failed, nil
}

func byServerTool(byServer map[string][]*mcp.Tool, d Descriptor) *mcp.Tool {
	for _, t := range byServer[d.Server] {
		if t.Name == d.Tool {
			return t
		}
	}
	return nil
}

// Call calls a bridged tool by its descriptor. Failures are results with
// IsError set and model-safe text. The text the model reads is bounded and
// inside an untrusted-content block, as the gateway's; the server's
// structured content is passed on unchanged for hosts that validate it
// against the tool's output schema, up to Limits.MaxStructuredBytes (a
// larger one makes the result an error that says so).
func (b *Bridge) Call(ctx context.Context, d Descriptor, args json.RawMessage, opts *manager.CallOptions) *mcp.CallToolResult {
	out, structured := b.g.callStructured(ctx, &Input{Action: "call", Server: d.Server, Tool: d.Tool, Arguments: args}, opts)
	if structured == nil {
		return out
	}
	raw, err := json.Marshal(structured)
	switch {
	case err != nil:
		out.IsError = true
		out.Content = append(out.Content, &mcp.TextContent{Text: "[the structured result could not be encoded; it is not passed on]"})
	case len(raw) > b.g.lim.MaxStructuredBytes:
		out.IsError = true
		out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf(
			"[the structured result is %d bytes, over the %d-byte bound; it is not passed on]", len(raw), b.g.lim.MaxStructuredBytes)})
	default:
		out.StructuredContent = json.RawMessage(raw)
	}
	return out
}

// TaskOnly reports whether d's tool is known, by now, to run only as a
// task: a call may have just taught the bridge so.
func (b *Bridge) TaskOnly(d Descriptor) bool {
	return d.TaskOnly || b.g.tasks.required(d.Server, &mcp.Tool{Name: d.Tool, Meta: d.Def.Meta})
}

// PromptName and ResourceName are how prompts and resources are named.
func PromptName(server, prompt string) string { return "/" + server + ":" + prompt }

// ResourceName names a remote resource for people and models.
func ResourceName(server, uri string) string { return "@" + server + ":" + uri }

// ParsePromptName splits /server:prompt.
func ParsePromptName(name string) (server, prompt string, ok bool) {
	s, p, ok := strings.Cut(strings.TrimPrefix(name, "/"), ":")
	return s, p, ok && strings.HasPrefix(name, "/") && s != "" && p != ""
}

// ParseResourceName splits @server:uri.
func ParseResourceName(name string) (server, uri string, ok bool) {
	s, u, ok := strings.Cut(strings.TrimPrefix(name, "@"), ":")
	return s, u, ok && strings.HasPrefix(name, "@") && s != "" && u != ""
}

// GetPrompt renders /server:prompt as one user message holding the
// prompt's messages, bounded and inside an untrusted-content block. A
// failure is an error with model-safe text.
func (b *Bridge) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	server, prompt, ok := ParsePromptName(name)
	if !ok {
		return nil, errors.New("prompt names look like /server:prompt")
	}
	raw, _ := json.Marshal(args)
	res := b.g.prompt(ctx, &Input{Action: "prompt", Server: server, Prompt: prompt, Arguments: raw})
	if res.IsError {
		return nil, errors.New(textOf(res))
	}
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: res.Content[0]}}}, nil
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// maxContents bounds the contents of one read passed on.
const maxContents = 32

// Read reads uri from server for a host: every content keeps its URI and
// the server's MIME type; text is bounded and inside an untrusted-content
// block (whatever its MIME type says, it is server text a model may read);
// binary data is passed on up to Limits.MaxImageBytes each and
// Limits.MaxAttachedBytes together, and described otherwise. A failure is an error with model-safe text.
func (b *Bridge) Read(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	g := b.g
	res, err := g.m.ReadResource(ctx, server, uri)
	if err != nil {
		return nil, errors.New(g.modelError(server, g.unknownServer(server, err)))
	}
	out := &mcp.ReadResourceResult{}
	budget := attachBudget{lim: g.lim}
	for i, rc := range res.Contents {
		if i == maxContents {
			out.Contents = append(out.Contents, &mcp.ResourceContents{URI: uri, MIMEType: "text/plain",
				Text: fmt.Sprintf("[%d more contents not shown]", len(res.Contents)-maxContents)})
			break
		}
		c := &mcp.ResourceContents{URI: rc.URI, MIMEType: rc.MIMEType, Meta: rc.Meta}
		if c.URI == "" {
			c.URI = uri
		}
		switch {
		case rc.Blob == nil:
			c.Text = untrusted("server "+server+", resource "+clip(c.URI, 200), rc.Text, g.lim)
		case budget.take(len(rc.Blob)):
			c.Blob = rc.Blob
		default:
			c.MIMEType = "text/plain"
			c.Text = fmt.Sprintf("[binary content %s, %d bytes: too large to pass on]", safeMIME(rc.MIMEType), len(rc.Blob))
		}
		out.Contents = append(out.Contents, c)
	}
	return out, nil
}

// Prompts lists /server:prompt names with their remote definitions.
func (b *Bridge) Prompts(ctx context.Context) (map[string]*mcp.Prompt, error) {
	out := make(map[string]*mcp.Prompt)
	for _, id := range b.g.serverIDs() {
		ps, err := b.g.m.Prompts(ctx, id)
		if err != nil {
			continue
		}
		for _, p := range ps {
			out[PromptName(id, p.Name)] = p
		}
	}
	return out, nil
}

// Resources lists @server:uri names with their remote definitions.
func (b *Bridge) Resources(ctx context.Context) (map[string]*mcp.Resource, error) {
	out := make(map[string]*mcp.Resource)
	for _, id := range b.g.serverIDs() {
		rs, err := b.g.m.Resources(ctx, id)
		if err != nil {
			continue
		}
		for _, r := range rs {
			out[ResourceName(id, r.URI)] = r
		}
	}
	return out, nil
}

// Templates lists @server:template names with the servers' resource
// templates.
func (b *Bridge) Templates(ctx context.Context) (map[string]*mcp.ResourceTemplate, error) {
	out := make(map[string]*mcp.ResourceTemplate)
	for _, id := range b.g.serverIDs() {
		ts, err := b.g.templates(ctx, id)
		if err != nil {
			continue
		}
		for _, t := range ts {
			out[ResourceName(id, t.URITemplate)] = t
		}
	}
	return out, nil
}

// Manager is the manager the bridge uses.
func (b *Bridge) Manager() *manager.Manager { return b.g.m }
