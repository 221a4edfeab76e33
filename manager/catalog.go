package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Catalogs mirror the server's tools, prompts, resources and resource
// templates. Refreshes of one kind never overlap: a change announced while
// one runs queues exactly one more (a flood of list_changed costs two
// lists, not three hundred), and whoever must see the result waits for the
// refresh that started after it asked. A failed or malformed refresh keeps
// the last valid catalog and marks it stale; a kind that never loaded
// keeps its error, which its readers get instead of an empty list.
//
// Freshness: a 2026-07-28 result is fresh for its ttlMs and listed again
// on the next use after that (0 or absent: every use); a session-era
// catalog stays valid for its session, as that generation's servers
// announce changes. A change notification always invalidates.

type kind int

const (
	kindTools kind = iota
	kindPrompts
	kindResources
	kindTemplates
	numKinds
)

var kindNames = [numKinds]string{"tools", "prompts", "resources", "resource templates"}

type mirror struct {
	loaded  bool
	stale   bool
	failed  *mcpgate.Error // the last refresh failed and nothing valid is held
	diags   []string
	fetched time.Time
	// expires is set for results that are fresh only until fetched+ttl.
	expires bool
	ttl     time.Duration
	// invalid is set by a change notification until the next commit.
	invalid bool
}

type catalogs struct {
	m          [numKinds]mirror
	generation uint64 // bumped on every commit and reset
	tools      []*mcp.Tool
	prompts    []*mcp.Prompt
	resources  []*mcp.Resource
	templates  []*mcp.ResourceTemplate
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
	st.Templates = len(c.templates)
	for i := range c.m {
		st.Stale = st.Stale || c.m[i].stale
		st.Diagnostics = append(st.Diagnostics, c.m[i].diags...)
	}
}

func (c *catalogs) reset() { *c = catalogs{generation: c.generation + 1} }

// current reports whether a kind's catalog can be used as it is.
func (mi *mirror) current(now time.Time) bool {
	if mi.failed != nil || mi.invalid || !mi.loaded {
		return false
	}
	return !mi.expires || now.Before(mi.fetched.Add(mi.ttl))
}

// supports reports whether the server advertised the capability for k.
func (sess *session) supports(k kind) bool {
	switch k {
	case kindPrompts:
		return sess.caps.Prompts != nil
	case kindResources, kindTemplates:
		return sess.caps.Resources != nil
	}
	return true // tools are listed even when a server forgets to advertise them
}

// refreshes serializes the refreshes of one session's catalogs.
type refreshes struct {
	mu    sync.Mutex
	kinds [numKinds]refreshState
}

type refreshState struct {
	wanted  uint64 // refreshes asked for
	done    uint64 // the wanted value the last finished refresh covered
	running bool
	ended   chan struct{} // closed (and replaced) when a refresh ends
}

// loadCatalogs fetches every catalog the server offers for a new session.
// A tools list that fails fails the connection: an error (401, 403, 5xx)
// is never shown as a server with no tools.
func (s *server) loadCatalogs(ctx context.Context, sess *session) error {
	s.mu.Lock()
	s.catalog.reset()
	s.installing = sess
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.installing = nil
		s.mu.Unlock()
	}()
	for k := range numKinds {
		if !sess.supports(k) {
			continue
		}
		if err := s.refresh(ctx, sess, k, true); err != nil && k == kindTools {
			return err
		}
	}
	return nil
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
	s.mu.Lock()
	if s.currentLocked(sess) {
		s.catalog.m[k].invalid = true
	}
	s.mu.Unlock()
	if k == kindResources {
		s.refreshInBackground(sess, kindTemplates)
	}
	s.refreshInBackground(sess, k)
}

// reopened refreshes every catalog after an event stream came back from a
// break, during which changes may have been announced and lost.
func (s *server) reopened(sess *session) {
	if !sess.live.Load() || sess.ctx.Err() != nil {
		return
	}
	for k := range numKinds {
		if sess.supports(k) {
			s.refreshInBackground(sess, k)
		}
	}
}

func (s *server) refreshInBackground(sess *session, k kind) {
	if !sess.refresh.ask(k) {
		return // the running refresh will run once more and cover this
	}
	sess.wg.Add(1)
	go func() {
		defer sess.wg.Done()
		ctx, cancel := context.WithTimeout(sess.ctx, s.m.opts.ConnectTimeout)
		defer cancel()
		s.runRefreshes(ctx, sess, k)
		s.notify()
	}()
}

// ask records a request for a refresh of k and reports whether the caller
// must run it (no refresh of k is running).
func (r *refreshes) ask(k kind) (run bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.kinds[k]
	st.wanted++
	if st.running {
		return false
	}
	st.running = true
	return true
}

// refresh lists k and commits the result. With wait, it returns only once
// a refresh that started after the call has ended, and returns the error a
// reader of k should see (nil once a valid catalog is held).
func (s *server) refresh(ctx context.Context, sess *session, k kind, wait bool) error {
	r := &sess.refresh
	if r.ask(k) {
		// Whoever waits on this refresh waits on this caller's context:
		// bound it as a connect is, so a list the server never answers
		// cannot hold a caller without a deadline, or those behind it.
		ctx, cancel := context.WithTimeout(ctx, s.m.opts.ConnectTimeout)
		defer cancel()
		s.runRefreshes(ctx, sess, k)
	} else if wait {
		r.mu.Lock()
		my := r.kinds[k].wanted
		for r.kinds[k].done < my && r.kinds[k].running {
			ch := r.kinds[k].endedChan()
			r.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return classify(ctx, "listing "+kindNames[k], ctx.Err(), nil)
			}
			r.mu.Lock()
		}
		r.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.catalog.m[k].failed; f != nil {
		return f
	}
	return nil
}

func (st *refreshState) endedChan() chan struct{} {
	if st.ended == nil {
		st.ended = make(chan struct{})
	}
	return st.ended
}

// runRefreshes is the one running refresher of k: it lists until no
// request is left uncovered.
func (s *server) runRefreshes(ctx context.Context, sess *session, k kind) {
	r := &sess.refresh
	for {
		r.mu.Lock()
		st := &r.kinds[k]
		if st.done >= st.wanted {
			st.running = false
			if st.ended != nil {
				close(st.ended)
				st.ended = nil
			}
			r.mu.Unlock()
			return
		}
		covers := st.wanted
		r.mu.Unlock()

		s.list(ctx, sess, k)

		r.mu.Lock()
		st.done = covers
		if st.ended != nil {
			close(st.ended)
			st.ended = nil
		}
		r.mu.Unlock()
	}
}

// list fetches one catalog and commits it.
func (s *server) list(ctx context.Context, sess *session, k kind) {
	s.mu.Lock()
	current := s.currentLocked(sess)
	lim := s.m.opts.Limits
	s.mu.Unlock()
	if !current {
		return
	}

	var tools []*mcp.Tool
	var prompts []*mcp.Prompt
	var resources []*mcp.Resource
	var templates []*mcp.ResourceTemplate
	var diags []string
	var err error
	ttl := time.Duration(-1) // the shortest ttlMs of the pages; -1 when none said
	noteTTL := func(c mcp.Cacheable) {
		d := time.Duration(max(c.TTLMs, 0)) * time.Millisecond
		if ttl < 0 || d < ttl {
			ttl = d
		}
	}
	started := s.m.now()
	ctx, obs := withObservation(ctx)
	err = reissued(ctx, func(ctx context.Context) error {
		var err error
		switch k {
		case kindTools:
			sess.takeExcluded()
			sess.takeTaskSupport()
			tools, diags, err = fetch(ctx, lim, "tools", func(ctx context.Context, cur string) ([]*mcp.Tool, string, error) {
				r, err := sess.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cur})
				if err != nil {
					return nil, "", err
				}
				noteTTL(r.Cacheable)
				return r.Tools, r.NextCursor, nil
			}, validTool, func(t *mcp.Tool) string { return t.Name })
			if ts := sess.takeTaskSupport(); len(ts) > 0 {
				for i, t := range tools {
					if v := ts[t.Name]; v != "" {
						c := *t
						c.Meta = maps.Clone(t.Meta)
						if c.Meta == nil {
							c.Meta = mcp.Meta{}
						}
						c.Meta[MetaTaskSupport] = v
						tools[i] = &c
					}
				}
			}
			for name, why := range sess.takeExcluded() {
				diags = append(diags, mcpgate.Sanitize(fmt.Sprintf("tools: dropped %q: invalid x-mcp-header declaration (%s)", name, why), 300))
			}
		case kindPrompts:
			prompts, diags, err = fetch(ctx, lim, "prompts", func(ctx context.Context, cur string) ([]*mcp.Prompt, string, error) {
				r, err := sess.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cur})
				if err != nil {
					return nil, "", err
				}
				noteTTL(r.Cacheable)
				return r.Prompts, r.NextCursor, nil
			}, validPrompt, func(p *mcp.Prompt) string { return p.Name })
		case kindResources:
			resources, diags, err = fetch(ctx, lim, "resources", func(ctx context.Context, cur string) ([]*mcp.Resource, string, error) {
				r, err := sess.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur})
				if err != nil {
					return nil, "", err
				}
				noteTTL(r.Cacheable)
				return r.Resources, r.NextCursor, nil
			}, validResource, func(r *mcp.Resource) string { return r.URI })
		case kindTemplates:
			templates, diags, err = fetch(ctx, lim, "resource templates", func(ctx context.Context, cur string) ([]*mcp.ResourceTemplate, string, error) {
				r, err := sess.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cur})
				if err != nil {
					return nil, "", err
				}
				noteTTL(r.Cacheable)
				return r.ResourceTemplates, r.NextCursor, nil
			}, validTemplate, func(t *mcp.ResourceTemplate) string { return t.URITemplate })
		}
		return err
	})
	if err != nil && methodNotFound(err) {
		// The server does not implement this list: it has none.
		err, diags = nil, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.currentLocked(sess) {
		return // the session was replaced meanwhile
	}
	mi := &s.catalog.m[k]
	if err != nil {
		e := classify(ctx, "listing "+kindNames[k], err, obs)
		mi.stale = mi.loaded
		if !mi.loaded {
			mi.failed = e
		}
		mi.diags = []string{e.Message + keptNote(mi.loaded)}
		s.m.logf(s.id, "%s", e.Message)
		return
	}
	s.catalog.generation++
	mi.loaded = true
	mi.stale = false
	mi.failed = nil
	mi.invalid = false
	mi.diags = diags
	mi.fetched = started
	mi.expires = sess.protocol >= version20260728
	mi.ttl = max(ttl, 0)
	switch k {
	case kindTools:
		s.catalog.tools = tools
	case kindPrompts:
		s.catalog.prompts = prompts
	case kindResources:
		s.catalog.resources = resources
	case kindTemplates:
		s.catalog.templates = templates
	}
	s.catalogCommittedLocked()
}

// fresh makes sure the catalog of k may be used: listed again when it
// expired, was invalidated or never loaded. It returns the error readers
// of k get when no valid catalog could be had.
func (s *server) fresh(ctx context.Context, sess *session, k kind) error {
	if !sess.supports(k) {
		return nil
	}
	s.mu.Lock()
	ok := s.catalog.m[k].current(s.m.now())
	s.mu.Unlock()
	if ok {
		return nil
	}
	return s.refresh(ctx, sess, k, true)
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

func validTemplate(t *mcp.ResourceTemplate) error {
	switch {
	case t.URITemplate == "":
		return fmt.Errorf("resource template without a URI template")
	case len(t.URITemplate) > 2048:
		return fmt.Errorf("resource URI template longer than 2048 bytes")
	case strings.IndexFunc(t.URITemplate, unicode.IsControl) >= 0:
		return fmt.Errorf("resource URI template contains control characters")
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
