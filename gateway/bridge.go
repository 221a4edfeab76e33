package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

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
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

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
			name := "mcp__" + unsafeChars.ReplaceAllString(id, "_") + "__" + unsafeChars.ReplaceAllString(t.Name, "_")
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
// named in the second result.
func (b *Bridge) Tools(ctx context.Context) ([]Descriptor, []string, error) {
	byServer, failed, err := b.g.toolsOf(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	return bridgeNames(byServer), failed, nil
}

// Call calls a bridged tool by its descriptor. Failures are results with
// IsError set and model-safe text.
func (b *Bridge) Call(ctx context.Context, d Descriptor, args json.RawMessage) *mcp.CallToolResult {
	return b.g.call(ctx, &Input{Action: "call", Server: d.Server, Tool: d.Tool, Arguments: args})
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

// GetPrompt renders /server:prompt; the result is bounded and untrusted.
func (b *Bridge) GetPrompt(ctx context.Context, name string, args map[string]string) *mcp.CallToolResult {
	server, prompt, ok := ParsePromptName(name)
	if !ok {
		return failure("prompt names look like /server:prompt")
	}
	raw, _ := json.Marshal(args)
	return b.g.prompt(ctx, &Input{Action: "prompt", Server: server, Prompt: prompt, Arguments: raw})
}

// Read reads @server:uri; the result is bounded and untrusted.
func (b *Bridge) Read(ctx context.Context, name string) *mcp.CallToolResult {
	server, uri, ok := ParseResourceName(name)
	if !ok {
		return failure("resource names look like @server:uri")
	}
	return b.g.read(ctx, &Input{Action: "read", Server: server, URI: uri})
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

// Manager is the manager the bridge uses.
func (b *Bridge) Manager() *manager.Manager { return b.g.m }
