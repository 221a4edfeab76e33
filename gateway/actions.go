package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	defaultListLimit   = 50
	defaultSearchLimit = 8
	maxListLimit       = 200
	descriptionInLine  = 110
)

func (g *Gateway) status(ctx context.Context, in *Input) (string, error) {
	sts := g.m.Statuses()
	if len(sts) == 0 {
		return "No MCP servers are configured. The person can add one in a terminal:\n" +
			"  mcpgate add NAME https://server.example/mcp --auth oauth\n" +
			"  mcpgate auth NAME\n" +
			"or import their Claude Code, Cursor or VS Code servers with: mcpgate import FILE\n" +
			"Then call status again.", nil
	}
	if in.Server != "" {
		st, err := g.m.Status(in.Server)
		if err != nil {
			return "", g.unknownServer(in.Server, err)
		}
		sts = []manager.Status{st}
	}
	var b strings.Builder
	for _, st := range sts {
		b.WriteString(statusLine(st))
		b.WriteByte('\n')
	}
	b.WriteString("(disconnected servers connect when used; a cached catalog is what a server offered when last listed; needs-auth: call authenticate; error: call reconnect)")
	return b.String(), nil
}

func statusLine(st manager.Status) string {
	state := string(st.State)
	if !st.Enabled {
		state = "disabled"
	}
	line := fmt.Sprintf("%s: %s, auth %s", st.ID, state, st.Auth)
	switch {
	case st.State == mcpgate.StateReady:
		line += ", " + manager.Counted(st.Tools, "tool") + ", " + manager.Counted(st.Prompts, "prompt") + ", " + manager.Counted(st.Resources, "resource")
		if st.Stale {
			line += " (catalog stale: the last refresh failed)"
		}
	case st.Cached && st.Enabled:
		// Not connected: what it offered when last listed, which list,
		// search and describe use; a call connects.
		line += ", cached catalog: " + manager.Counted(st.Tools, "tool") + ", " + manager.Counted(st.Prompts, "prompt") + ", " + manager.Counted(st.Resources, "resource")
	}
	if st.Error != nil {
		line += " [" + string(st.Error.Category)
		if st.Error.HTTPStatus != 0 {
			line += fmt.Sprintf(", HTTP %d", st.Error.HTTPStatus)
		}
		if code := mcpgate.SafeCode(st.Error.Code); code != "" {
			line += ", code " + code
		}
		line += "]"
	}
	return line
}

func (g *Gateway) reconnect(ctx context.Context, in *Input) (string, error) {
	if in.Server == "" {
		return "", needs("server", "reconnect")
	}
	if err := g.m.Reconnect(ctx, in.Server); err != nil {
		return "", g.unknownServer(in.Server, err)
	}
	st, err := g.m.Status(in.Server)
	if err != nil {
		return "", err
	}
	return "reconnected. " + statusLine(st), nil
}

func needs(param, action string) error {
	return mcpgate.Errorf(mcpgate.CategoryInvalid, "%s needs %q.", action, param)
}

// unknownServer adds closest names to a not-found server error.
func (g *Gateway) unknownServer(id string, err error) error {
	if mcpgate.CategoryOf(err) != mcpgate.CategoryNotFound {
		return err
	}
	if _, known := g.m.Status(id); known == nil {
		return err // the server exists: something else was not found
	}
	msg := fmt.Sprintf("there is no server %q.", clip(id, 40))
	if c := names.Closest(id, g.serverIDs(), 3); len(c) > 0 {
		msg += " Did you mean " + strings.Join(c, ", ") + "?"
	} else {
		msg += " Servers: " + strings.Join(g.serverIDs(), ", ") + "."
	}
	return &mcpgate.Error{Category: mcpgate.CategoryNotFound, Message: msg}
}

// toolsOf lists the enabled tools of the named servers (all enabled ones
// when server is ""), connecting them concurrently. Servers that fail are
// reported, not fatal, when listing several.
func (g *Gateway) toolsOf(ctx context.Context, server string) (map[string][]*mcp.Tool, []string, error) {
	ids := g.serverIDs()
	if server != "" {
		if _, err := g.m.Status(server); err != nil {
			return nil, nil, g.unknownServer(server, err)
		}
		ids = []string{server}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[string][]*mcp.Tool)
	var failed []string
	var firstErr error
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tools, err := g.m.Tools(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, id+" ("+string(mcpgate.CategoryOf(err))+")")
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out[id] = tools
		}()
	}
	wg.Wait()
	sort.Strings(failed)
	if server != "" && firstErr != nil {
		return nil, nil, firstErr
	}
	return out, failed, nil
}

func (g *Gateway) list(ctx context.Context, in *Input) (string, error) {
	byServer, failed, err := g.catalogOf(ctx, in.Server)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, e := range sortedEntries(byServer) {
		lines = append(lines, e.line())
	}
	limit := clamp(in.Limit, defaultListLimit, maxListLimit)
	offset := max(in.Offset, 0)
	total := len(lines)
	if offset > total {
		offset = total
	}
	end := min(offset+limit, total)
	var b strings.Builder
	b.WriteString(counts(byServer))
	if offset > 0 || end < total {
		fmt.Fprintf(&b, "; showing %d-%d of %d (use offset to page)", offset+1, end, total)
	}
	b.WriteString(":\n")
	b.WriteString(untrusted(catalogSource(byServer), strings.Join(lines[offset:end], "\n"), g.lim))
	writeFailed(&b, failed)
	return b.String(), nil
}

func writeFailed(b *strings.Builder, failed []string) {
	if len(failed) > 0 {
		b.WriteString("\nNot listed (call status for details): " + strings.Join(failed, ", "))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func clamp(v, def, hi int) int {
	if v <= 0 {
		return def
	}
	return min(v, hi)
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return mcpgate.Sanitize(s, n)
}

// maxQuery is the longest query search takes, in characters: a need put
// in words fits in a few sentences, and what ranking costs grows with the
// query, which a shared gateway takes from anyone it serves.
const maxQuery = 2000

// checkQuery refuses an empty query, and one longer than maxQuery.
func checkQuery(query string) error {
	if strings.TrimSpace(query) == "" {
		return needs("query", "search")
	}
	if n := utf8.RuneCountInString(query); n > maxQuery {
		return mcpgate.Errorf(mcpgate.CategoryInvalid,
			"the query is %d characters long; search takes at most %d. Say what the tool should do in a sentence or two.", n, maxQuery)
	}
	return nil
}

func (g *Gateway) search(ctx context.Context, in *Input) (string, error) {
	if err := checkQuery(in.Query); err != nil {
		return "", err
	}
	byServer, failed, err := g.catalogOf(ctx, in.Server)
	if err != nil {
		return "", err
	}
	hits := g.index.search(g.m, byServer, in.Query, clamp(in.Limit, defaultSearchLimit, maxListLimit), nil)
	var b strings.Builder
	if len(hits) == 0 {
		b.WriteString("Nothing matches. Try other words, or list (server) to browse.")
		writeFailed(&b, failed)
		return b.String(), nil
	}
	if len(hits) == 1 {
		b.WriteString("The best match (describe it before using it):\n")
	} else {
		fmt.Fprintf(&b, "%d best matches (describe one before using it):\n", len(hits))
	}
	lines := make([]string, len(hits))
	for i, h := range hits {
		e := h.entry
		if e.kind == kindTool {
			e.tasks = g.tasks.required(e.server, e.tool) // the index may predate a refusal
		}
		lines[i] = e.line()
	}
	b.WriteString(untrusted(catalogSource(byServer), strings.Join(lines, "\n"), g.lim))
	writeFailed(&b, failed)
	return b.String(), nil
}

// SearchHit is one result of [Gateway.Search]. Description is remote text.
type SearchHit struct {
	Server      string  `json:"server"`
	Tool        string  `json:"tool"`
	Score       float64 `json:"score"`
	Description string  `json:"description"`
}

// Search ranks the enabled tools of server (every enabled server when "")
// for query, best first, connecting servers as needed. Servers that could
// not be listed are named in failed. An empty query, or one longer than
// 2,000 characters, is an error of CategoryInvalid.
func (g *Gateway) Search(ctx context.Context, query, server string, limit int) (hits []SearchHit, failed []string, err error) {
	if err := checkQuery(query); err != nil {
		return nil, nil, err
	}
	limit = clamp(limit, defaultSearchLimit, maxListLimit)
	var key [sha256.Size]byte
	keep := false
	if g.cache != nil && server == "" {
		if key, keep = g.indexKey(); keep {
			if hits, ok := g.searchCached(key, query, limit); ok {
				return hits, nil, nil
			}
		}
	}
	byServer, failed, err := g.catalogOf(ctx, server)
	if err != nil {
		return nil, nil, err
	}
	onlyTools := func(e entry) bool { return e.kind == kindTool }
	for _, h := range g.index.search(g.m, byServer, query, limit, onlyTools) {
		hits = append(hits, SearchHit{Server: h.server, Tool: h.tool.Name, Score: h.score, Description: h.tool.Description})
	}
	if keep {
		g.saveIndex(key)
	}
	return hits, failed, nil
}

func (g *Gateway) describe(ctx context.Context, in *Input) (string, error) {
	switch {
	case in.Server == "" || (in.Tool == "" && in.Prompt == "" && in.URI == ""):
		return "", needs("server and one of tool, prompt, uri", "describe")
	case in.Prompt != "":
		return g.describePrompt(ctx, in)
	case in.URI != "":
		return g.describeResource(ctx, in)
	}
	t, err := g.m.Tool(ctx, in.Server, in.Tool)
	if err != nil {
		return "", g.unknownServer(in.Server, err)
	}
	schema, _ := json.MarshalIndent(t.InputSchema, "", " ")
	var body strings.Builder
	fmt.Fprintf(&body, "tool: %s\n", t.Name)
	if t.Title != "" {
		fmt.Fprintf(&body, "title: %s\n", t.Title)
	}
	if a := annotations(t.Annotations); a != "" {
		fmt.Fprintf(&body, "annotations (claims of the server, not guarantees): %s\n", a)
	}
	fmt.Fprintf(&body, "description:\n%s\ninput schema:\n%s\n", strings.TrimSpace(t.Description), schema)
	if t.OutputSchema != nil {
		out, _ := json.MarshalIndent(t.OutputSchema, "", " ")
		fmt.Fprintf(&body, "output schema:\n%s\n", out)
	}
	head := fmt.Sprintf("Call it with {\"action\":\"call\",\"server\":%q,\"tool\":%q,\"arguments\":{...}}.\n", in.Server, t.Name)
	if g.tasks.required(in.Server, t) {
		head = "This tool runs only as an MCP task, which mcpgate does not support: calls to it are refused.\n"
	}
	return head + untrusted("server "+in.Server+", tool "+t.Name, body.String(), g.lim), nil
}

func (g *Gateway) describePrompt(ctx context.Context, in *Input) (string, error) {
	ps, err := g.m.Prompts(ctx, in.Server)
	if err != nil {
		return "", g.unknownServer(in.Server, err)
	}
	var p *mcp.Prompt
	for _, x := range ps {
		if x.Name == in.Prompt {
			p = x
		}
	}
	if p == nil {
		return "", notOffered(in.Server, "prompt", in.Prompt)
	}
	var body strings.Builder
	fmt.Fprintf(&body, "prompt: %s\n", p.Name)
	if p.Title != "" {
		fmt.Fprintf(&body, "title: %s\n", p.Title)
	}
	fmt.Fprintf(&body, "description:\n%s\n", strings.TrimSpace(p.Description))
	if len(p.Arguments) > 0 {
		body.WriteString("arguments (strings):\n")
		for _, a := range p.Arguments {
			req := "optional"
			if a.Required {
				req = "required"
			}
			fmt.Fprintf(&body, "- %s (%s): %s\n", a.Name, req, strings.TrimSpace(a.Description))
		}
	}
	return fmt.Sprintf("Render it with {\"action\":\"prompt\",\"server\":%q,\"prompt\":%q,\"arguments\":{...}}.\n", in.Server, p.Name) +
		untrusted("server "+in.Server+", prompt "+p.Name, body.String(), g.lim), nil
}

func (g *Gateway) describeResource(ctx context.Context, in *Input) (string, error) {
	rs, err := g.m.Resources(ctx, in.Server)
	if err != nil {
		return "", g.unknownServer(in.Server, err)
	}
	ts, _ := g.templates(ctx, in.Server)
	var body strings.Builder
	head := ""
	for _, r := range rs {
		if r.URI == in.URI && head == "" {
			head = fmt.Sprintf("Read it with {\"action\":\"read\",\"server\":%q,\"uri\":%q}.\n", in.Server, r.URI)
			fmt.Fprintf(&body, "resource: %s\nname: %s\n", r.URI, r.Name)
			if r.Title != "" {
				fmt.Fprintf(&body, "title: %s\n", r.Title)
			}
			if r.MIMEType != "" {
				fmt.Fprintf(&body, "MIME type: %s\n", r.MIMEType)
			}
			if r.Size > 0 {
				fmt.Fprintf(&body, "size: %d bytes\n", r.Size)
			}
			fmt.Fprintf(&body, "description:\n%s\n", strings.TrimSpace(r.Description))
		}
	}
	for _, t := range ts {
		if t.URITemplate == in.URI && head == "" {
			head = fmt.Sprintf("Fill in its {variables} and read the URI with {\"action\":\"read\",\"server\":%q,\"uri\":...}.\n", in.Server)
			fmt.Fprintf(&body, "resource template: %s\nname: %s\n", t.URITemplate, t.Name)
			if t.Title != "" {
				fmt.Fprintf(&body, "title: %s\n", t.Title)
			}
			if t.MIMEType != "" {
				fmt.Fprintf(&body, "MIME type: %s\n", t.MIMEType)
			}
			fmt.Fprintf(&body, "description:\n%s\n", strings.TrimSpace(t.Description))
		}
	}
	if head == "" {
		return "", notOffered(in.Server, "resource or template", in.URI)
	}
	return head + untrusted("server "+in.Server+", resource "+clip(in.URI, 200), body.String(), g.lim), nil
}

// notOffered says a server has no such prompt or resource. Its names
// are remote text, so they are not suggested here: list shows them inside
// a boundary.
func notOffered(server, what, name string) error {
	return &mcpgate.Error{Category: mcpgate.CategoryNotFound,
		Message: fmt.Sprintf("server %q has no %s %q. Call {\"action\":\"list\",\"server\":%q} to see what it offers.", server, what, clip(name, 200), server)}
}

func annotations(a *mcp.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	var parts []string
	if a.ReadOnlyHint {
		parts = append(parts, "read-only")
	} else {
		if a.DestructiveHint == nil || *a.DestructiveHint {
			parts = append(parts, "may be destructive")
		}
		if a.IdempotentHint {
			parts = append(parts, "idempotent")
		}
	}
	if a.OpenWorldHint != nil && !*a.OpenWorldHint {
		parts = append(parts, "closed world")
	}
	return strings.Join(parts, ", ")
}

func (g *Gateway) call(ctx context.Context, in *Input, opts *manager.CallOptions) *mcp.CallToolResult {
	out, _ := g.callStructured(ctx, in, opts)
	return out
}

// callStructured calls a tool and returns what the model sees and, apart,
// the server's structured content (nil when there is none), which only
// the bridge passes on.
func (g *Gateway) callStructured(ctx context.Context, in *Input, opts *manager.CallOptions) (*mcp.CallToolResult, any) {
	if in.Server == "" || in.Tool == "" {
		return failure(g.modelError(in.Server, needs("server and tool", "call"))), nil
	}
	if t, ok := g.m.CachedTool(in.Server, in.Tool); ok && g.tasks.required(in.Server, t) {
		return failure(g.modelError(in.Server, tasksRefusal(in.Server, in.Tool, ""))), nil
	}
	res, err := g.m.CallTool(ctx, in.Server, in.Tool, in.Arguments, opts)
	if err != nil {
		st, _ := g.m.Status(in.Server)
		if code, ok := needsTasks(err, st.ProtocolVersion); ok {
			g.tasks.remember(in.Server, in.Tool)
			err = tasksRefusal(in.Server, in.Tool, code)
		}
		return failure(g.modelError(in.Server, g.unknownServer(in.Server, err))), nil
	}
	out := g.render("server "+in.Server+", tool "+in.Tool, res.Content, res.StructuredContent)
	out.IsError = res.IsError
	if res.IsError {
		prefix := &mcp.TextContent{Text: "The tool reported an error (its own output follows):"}
		out.Content = append([]mcp.Content{prefix}, out.Content...)
	}
	return out, res.StructuredContent
}

func (g *Gateway) read(ctx context.Context, in *Input) *mcp.CallToolResult {
	if in.Server == "" || in.URI == "" {
		return failure(g.modelError(in.Server, needs("server and uri", "read")))
	}
	res, err := g.m.ReadResource(ctx, in.Server, in.URI)
	if err != nil {
		return failure(g.modelError(in.Server, g.unknownServer(in.Server, err)))
	}
	var content []mcp.Content
	for _, rc := range res.Contents {
		if rc.Text != "" || rc.Blob == nil {
			content = append(content, &mcp.TextContent{Text: rc.Text})
		} else {
			content = append(content, &mcp.EmbeddedResource{Resource: rc})
		}
	}
	return g.render("server "+in.Server+", resource "+clip(in.URI, 200), content, nil)
}

func (g *Gateway) prompt(ctx context.Context, in *Input) *mcp.CallToolResult {
	if in.Server == "" || in.Prompt == "" {
		return failure(g.modelError(in.Server, needs("server and prompt", "prompt")))
	}
	args := map[string]string{}
	if len(in.Arguments) > 0 {
		var raw map[string]any
		if err := json.Unmarshal(in.Arguments, &raw); err != nil {
			return failure("prompt arguments must be an object of strings.")
		}
		for k, v := range raw {
			if s, ok := v.(string); ok {
				args[k] = s
			} else {
				b, _ := json.Marshal(v)
				args[k] = string(b)
			}
		}
	}
	res, err := g.m.GetPrompt(ctx, in.Server, in.Prompt, args)
	if err != nil {
		return failure(g.modelError(in.Server, g.unknownServer(in.Server, err)))
	}
	var content []mcp.Content
	for _, msg := range res.Messages {
		content = append(content, &mcp.TextContent{Text: "[" + string(msg.Role) + "]"}, msg.Content)
	}
	return g.render("server "+in.Server+", prompt "+in.Prompt, content, nil)
}

func (g *Gateway) authenticate(ctx context.Context, in *Input) (string, error) {
	if in.Server == "" {
		return "", needs("server", "authenticate")
	}
	cfg, err := g.m.Config(in.Server)
	if err != nil {
		return "", g.unknownServer(in.Server, err)
	}
	if cfg.Auth != mcpgate.AuthOAuth {
		return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "server %q does not use OAuth (auth %s); the person fixes its credentials in a terminal (mcpgate add %s ... --replace).", cfg.ID, cfg.Auth, cfg.ID)
	}
	if g.auth == nil {
		return fmt.Sprintf("Ask the person to sign in from a terminal: mcpgate auth %s. Then call status.", cfg.ID), nil
	}
	pending, err := g.auth.StartLogin(ctx, cfg)
	if err != nil {
		return "", &personStep{err: err, command: "mcpgate auth " + cfg.ID}
	}
	return pending, nil
}

func (g *Gateway) logout(ctx context.Context, in *Input) (string, error) {
	if in.Server == "" {
		return "", needs("server", "logout")
	}
	cfg, err := g.m.Config(in.Server)
	if err != nil {
		return "", g.unknownServer(in.Server, err)
	}
	if g.auth == nil {
		return fmt.Sprintf("Ask the person to run: mcpgate logout %s.", cfg.ID), nil
	}
	if err := g.auth.Logout(ctx, cfg); err != nil {
		return "", &personStep{err: err, command: "mcpgate logout " + cfg.ID}
	}
	_ = g.m.Disconnect(ctx, cfg.ID)
	return "signed out of " + cfg.ID + "; its credential is deleted.", nil
}
