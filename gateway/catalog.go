package gateway

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway's view of a server's catalogs: tools, prompts, resources and
// resource templates as one list of entries, which list, search and
// describe share.

type kind string

const (
	kindTool     kind = "tool"
	kindPrompt   kind = "prompt"
	kindResource kind = "resource"
	kindTemplate kind = "template"
)

// entry is one thing a server offers. Everything in it but server and kind
// is remote text.
type entry struct {
	server   string
	kind     kind
	tool     *mcp.Tool
	prompt   *mcp.Prompt
	resource *mcp.Resource
	template *mcp.ResourceTemplate
	// tasks marks a tool that only runs as a task (see tasks.go).
	tasks bool
}

// name is what the entry is called by: a tool's or prompt's name, a
// resource's URI, a template's URI template.
func (e entry) name() string {
	switch e.kind {
	case kindTool:
		return e.tool.Name
	case kindPrompt:
		return e.prompt.Name
	case kindResource:
		return e.resource.URI
	default:
		return e.template.URITemplate
	}
}

func (e entry) title() string {
	switch e.kind {
	case kindTool:
		return e.tool.Title
	case kindPrompt:
		return e.prompt.Title
	case kindResource:
		return cmpOr(e.resource.Title, e.resource.Name)
	default:
		return cmpOr(e.template.Title, e.template.Name)
	}
}

func (e entry) description() string {
	switch e.kind {
	case kindTool:
		return e.tool.Description
	case kindPrompt:
		return e.prompt.Description
	case kindResource:
		return e.resource.Description
	default:
		return e.template.Description
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// line is the entry's one compact line for list and search.
func (e entry) line() string {
	desc := firstLine(e.description(), descriptionInLine)
	switch e.kind {
	case kindTool:
		line := e.server + "/" + e.tool.Name + " — " + desc
		if e.tasks {
			line += " " + tasksMark
		}
		return line
	case kindPrompt:
		var args []string
		for _, a := range e.prompt.Arguments {
			n := mcpgate.Sanitize(a.Name, 40)
			if !a.Required {
				n += "?"
			}
			args = append(args, n)
		}
		return e.server + " prompt " + e.prompt.Name + " (" + strings.Join(args, ", ") + ") — " + desc
	case kindResource:
		line := e.server + " resource " + mcpgate.Sanitize(e.resource.URI, 200)
		if m := safeMIME(e.resource.MIMEType); m != "of unknown type" {
			line += " (" + m + ")"
		}
		return line + " — " + cmpOr(desc, firstLine(e.title(), descriptionInLine))
	default:
		return e.server + " template " + mcpgate.Sanitize(e.template.URITemplate, 200) + " — " + cmpOr(desc, firstLine(e.title(), descriptionInLine))
	}
}

// catalogOf lists the entries of the named server (every enabled one when
// server is ""), connecting servers concurrently. A server whose tools
// cannot be listed is named in failed; its other catalogs are skipped.
func (g *Gateway) catalogOf(ctx context.Context, server string) (map[string][]entry, []string, error) {
	byServer, failed, err := g.toolsOf(ctx, server)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string][]entry, len(byServer))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, tools := range byServer {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entries := make([]entry, 0, len(tools))
			for _, t := range tools {
				entries = append(entries, entry{server: id, kind: kindTool, tool: t, tasks: g.tasks.required(id, t)})
			}
			// The session is up (its tools were listed), so these read the
			// mirrored catalogs; a server that offers none has none.
			if ps, err := g.m.Prompts(ctx, id); err == nil {
				for _, p := range ps {
					entries = append(entries, entry{server: id, kind: kindPrompt, prompt: p})
				}
			}
			if rs, err := g.m.Resources(ctx, id); err == nil {
				for _, r := range rs {
					entries = append(entries, entry{server: id, kind: kindResource, resource: r})
				}
			}
			if ts, err := g.templates(ctx, id); err == nil {
				for _, t := range ts {
					entries = append(entries, entry{server: id, kind: kindTemplate, template: t})
				}
			}
			mu.Lock()
			out[id] = entries
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, failed, nil
}

// templates returns a server's resource templates.
func (g *Gateway) templates(ctx context.Context, id string) ([]*mcp.ResourceTemplate, error) {
	return g.m.ResourceTemplates(ctx, id)
}

// counts says how many entries of each kind there are, e.g. "3 tools, 1
// prompt"; kinds with none are left out, except tools.
func counts(byServer map[string][]entry) string {
	n := map[kind]int{}
	for _, es := range byServer {
		for _, e := range es {
			n[e.kind]++
		}
	}
	parts := []string{plural(n[kindTool], "tool")}
	for _, k := range []kind{kindPrompt, kindResource, kindTemplate} {
		if n[k] > 0 {
			parts = append(parts, plural(n[k], map[kind]string{kindPrompt: "prompt", kindResource: "resource", kindTemplate: "resource template"}[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	s := strconv.Itoa(n) + " " + word
	if n != 1 {
		s += "s"
	}
	return s
}

// sortedEntries flattens byServer: by server, then tools, prompts,
// resources and templates, each in the server's order.
func sortedEntries(byServer map[string][]entry) []entry {
	order := map[kind]int{kindTool: 0, kindPrompt: 1, kindResource: 2, kindTemplate: 3}
	var out []entry
	for _, id := range sortedKeys(byServer) {
		es := append([]entry(nil), byServer[id]...)
		sort.SliceStable(es, func(i, j int) bool { return order[es[i].kind] < order[es[j].kind] })
		out = append(out, es...)
	}
	return out
}

func catalogSource(byServer map[string][]entry) string {
	return "catalogs of servers " + strings.Join(sortedKeys(byServer), ", ")
}
