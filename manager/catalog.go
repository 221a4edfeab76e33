package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Catalogs mirror the server's tools, prompts and resources. Each kind has
// a generation: every refresh takes the next one when it starts, and a
// result is committed only if no newer refresh has committed already, so
// the newest valid result wins whatever order the answers arrive in. A
// failed or malformed refresh keeps the last valid catalog and marks it
// stale.

type kind int

const (
	kindTools kind = iota
	kindPrompts
	kindResources
	numKinds
)

var kindNames = [numKinds]string{"tools", "prompts", "resources"}

type mirror struct {
	loaded    bool
	stale     bool
	requested uint64 // generation of the newest refresh started
	committed uint64 // generation of the catalog held
	diags     []string
}

type catalogs struct {
	m          [numKinds]mirror
	generation uint64 // bumped on every commit and reset
	tools      []*mcp.Tool
	prompts    []*mcp.Prompt
	resources  []*mcp.Resource
}

func (c *catalogs) fill(st *Status, cfg *mcpgate.ServerConfig) {
	for _, t := range c.tools {
		if cfg.ToolEnabled(t.Name) {
			st.Tools++
		}
	}
	st.Generation = c.generation
	st.Prompts = len(c.prompts)
	st.Resources = len(c.resources)
	for i := range c.m {
		st.Stale = st.Stale || c.m[i].stale
		st.Diagnostics = append(st.Diagnostics, c.m[i].diags...)
	}
}

func (c *catalogs) reset() { *c = catalogs{generation: c.generation + 1} }

// supports reports whether the server advertised the capability for k.
func (sess *session) supports(k kind) bool {
	switch k {
	case kindPrompts:
		return sess.caps.Prompts != nil
	case kindResources:
		return sess.caps.Resources != nil
	}
	return true // tools are listed even when a server forgets to advertise them
}

// loadCatalogs fetches every catalog the server offers for a new session.
func (s *server) loadCatalogs(ctx context.Context, sess *session) {
	s.mu.Lock()
	s.catalog.reset()
	s.installing = sess
	s.mu.Unlock()
	for k := range numKinds {
		if sess.supports(k) {
			s.refresh(ctx, sess, k)
		}
	}
	s.mu.Lock()
	s.installing = nil
	s.mu.Unlock()
}

// currentLocked reports whether sess is the live session or the one being
// installed; only those may change the catalog.
func (s *server) currentLocked(sess *session) bool {
	return (s.sess != nil && s.sess.id == sess.id) || (s.installing != nil && s.installing.id == sess.id)
}

// listChanged refreshes a catalog in the background after a notification.
func (s *server) listChanged(sess *session, k kind) {
	if !sess.live.Load() || sess.ctx.Err() != nil {
		return
	}
	sess.wg.Add(1)
	go func() {
		defer sess.wg.Done()
		ctx, cancel := context.WithTimeout(sess.ctx, s.m.opts.ConnectTimeout)
		defer cancel()
		s.refresh(ctx, sess, k)
		s.notify()
	}()
}

// refresh lists one catalog and commits it if it is still the newest.
func (s *server) refresh(ctx context.Context, sess *session, k kind) {
	s.mu.Lock()
	if !s.currentLocked(sess) {
		s.mu.Unlock()
		return
	}
	mi := &s.catalog.m[k]
	mi.requested++
	gen := mi.requested
	lim := s.m.opts.Limits
	s.mu.Unlock()

	var tools []*mcp.Tool
	var prompts []*mcp.Prompt
	var resources []*mcp.Resource
	var diags []string
	var err error
	ctx, obs := withObservation(ctx)
	switch k {
	case kindTools:
		tools, diags, err = fetch(ctx, lim, "tools", func(ctx context.Context, cur string) ([]*mcp.Tool, string, error) {
			r, err := sess.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cur})
			if err != nil {
				return nil, "", err
			}
			return r.Tools, r.NextCursor, nil
		}, validTool, func(t *mcp.Tool) string { return t.Name })
	case kindPrompts:
		prompts, diags, err = fetch(ctx, lim, "prompts", func(ctx context.Context, cur string) ([]*mcp.Prompt, string, error) {
			r, err := sess.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cur})
			if err != nil {
				return nil, "", err
			}
			return r.Prompts, r.NextCursor, nil
		}, validPrompt, func(p *mcp.Prompt) string { return p.Name })
	case kindResources:
		resources, diags, err = fetch(ctx, lim, "resources", func(ctx context.Context, cur string) ([]*mcp.Resource, string, error) {
			r, err := sess.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur})
			if err != nil {
				return nil, "", err
			}
			return r.Resources, r.NextCursor, nil
		}, validResource, func(r *mcp.Resource) string { return r.URI })
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.currentLocked(sess) {
		return // the session was replaced meanwhile
	}
	if err != nil {
		e := classify(ctx, "listing "+kindNames[k], err, obs)
		mi.stale = mi.loaded
		mi.diags = []string{e.Message + keptNote(mi.loaded)}
		s.m.logf(s.id, "%s", e.Message)
		return
	}
	if gen <= mi.committed {
		return // a newer refresh already committed
	}
	mi.committed = gen
	s.catalog.generation++
	mi.loaded = true
	mi.stale = false
	mi.diags = diags
	switch k {
	case kindTools:
		s.catalog.tools = tools
	case kindPrompts:
		s.catalog.prompts = prompts
	case kindResources:
		s.catalog.resources = resources
	}
}

func keptNote(loaded bool) string {
	if loaded {
		return "; keeping the last valid catalog"
	}
	return ""
}

// fetch pages through a list with bounds on pages, entries and entry size,
// validating every entry. Entries that break a rule are dropped with a
// diagnostic; a malformed page fails the whole fetch.
func fetch[T any](ctx context.Context, lim Limits, what string,
	list func(context.Context, string) ([]*T, string, error),
	valid func(*T) error, key func(*T) string) ([]*T, []string, error) {
	var out []*T
	var diags []string
	note := func(format string, args ...any) {
		if len(diags) < 20 {
			diags = append(diags, mcpgate.Sanitize(fmt.Sprintf(format, args...), 300))
		} else if len(diags) == 20 {
			diags = append(diags, what+": more entries dropped")
		}
	}
	seen := make(map[string]bool)
	cursors := make(map[string]bool)
	cursor := ""
	for page := 0; ; page++ {
		if page == lim.MaxPages {
			note("%s: stopped after %d pages; the server kept returning a next cursor", what, lim.MaxPages)
			break
		}
		items, next, err := list(ctx, cursor)
		if err != nil {
			return nil, nil, err
		}
		for i, it := range items {
			if it == nil {
				note("%s: dropped a null entry on page %d", what, page+1)
				continue
			}
			if err := valid(it); err != nil {
				note("%s: dropped entry %d on page %d: %v", what, i+1, page+1, err)
				continue
			}
			b, err := json.Marshal(it)
			if err != nil || len(b) > lim.MaxEntryBytes {
				note("%s: dropped %q: %d bytes exceeds the %d-byte bound", what, key(it), len(b), lim.MaxEntryBytes)
				continue
			}
			if seen[key(it)] {
				note("%s: dropped duplicate %q", what, key(it))
				continue
			}
			if len(out) == lim.MaxEntries {
				note("%s: kept the first %d entries; the rest were dropped", what, lim.MaxEntries)
				return out, diags, nil
			}
			seen[key(it)] = true
			out = append(out, it)
		}
		if next == "" {
			break
		}
		if cursors[next] {
			note("%s: stopped: the server repeated a cursor", what)
			break
		}
		cursors[next] = true
		cursor = next
	}
	return out, diags, nil
}

const maxNameBytes = 128

func validName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty name")
	case len(name) > maxNameBytes:
		return fmt.Errorf("name longer than %d bytes", maxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("name is not valid UTF-8")
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("name %q contains spaces or control characters", mcpgate.Sanitize(name, 60))
	}
	return nil
}

func validTool(t *mcp.Tool) error {
	if err := validName(t.Name); err != nil {
		return err
	}
	schema, ok := t.InputSchema.(map[string]any)
	if !ok || schema["type"] != "object" {
		return fmt.Errorf("tool %q: inputSchema must be a JSON Schema object with type \"object\"", t.Name)
	}
	return nil
}

func validPrompt(p *mcp.Prompt) error {
	if err := validName(p.Name); err != nil {
		return err
	}
	for _, a := range p.Arguments {
		if a == nil || validName(a.Name) != nil {
			return fmt.Errorf("prompt %q: an argument has no valid name", p.Name)
		}
	}
	return nil
}

func validResource(r *mcp.Resource) error {
	switch {
	case r.URI == "":
		return fmt.Errorf("resource without a URI")
	case len(r.URI) > 2048:
		return fmt.Errorf("resource URI longer than 2048 bytes")
	case strings.IndexFunc(r.URI, unicode.IsControl) >= 0:
		return fmt.Errorf("resource URI contains control characters")
	}
	return nil
}

// lookup helpers used by the Manager's read paths; callers hold s.mu.

func (c *catalogs) tool(name string) *mcp.Tool {
	i := slices.IndexFunc(c.tools, func(t *mcp.Tool) bool { return t.Name == name })
	if i < 0 {
		return nil
	}
	return c.tools[i]
}
