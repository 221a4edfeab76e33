package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools returns the enabled tools of a server, connecting if needed.
func (m *Manager) Tools(ctx context.Context, id string) ([]*mcp.Tool, error) {
	s, err := m.server(id)
	if err != nil {
		return nil, err
	}
	if _, err := s.ensure(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*mcp.Tool, 0, len(s.catalog.tools))
	for _, t := range s.catalog.tools {
		if s.cfg.ToolEnabled(t.Name) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Tool returns one enabled tool.
func (m *Manager) Tool(ctx context.Context, id, name string) (*mcp.Tool, error) {
	tools, err := m.Tools(ctx, id)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == name }); i >= 0 {
		return tools[i], nil
	}
	s, _ := m.server(id)
	return nil, s.unknownTool(name)
}

// unknownTool explains why name cannot be used.
func (s *server) unknownTool(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.ToolEnabled(name) {
		return mcpgate.Errorf(mcpgate.CategoryDisabled, "tool %q of server %q is disabled; enable it with: mcpgate tools enable %s %s", name, s.id, s.id, name)
	}
	var known []string
	for _, t := range s.catalog.tools {
		if s.cfg.ToolEnabled(t.Name) {
			known = append(known, t.Name)
		}
	}
	msg := "server " + quote(s.id) + " has no tool " + quote(name)
	if c := names.Closest(name, known, 3); len(c) > 0 {
		msg += "; did you mean " + strings.Join(c, ", ") + "?"
	}
	return &mcpgate.Error{Category: mcpgate.CategoryNotFound, Message: msg}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// CallTool calls an enabled tool with args (a JSON object, or empty for
// none), passed to the server unchanged. The call times out after the
// server's configured timeout (60 s by default) unless opts says otherwise.
// A call is sent once: only a 404 for an expired session, which means the
// server never saw it, leads to one new session and one re-send.
func (m *Manager) CallTool(ctx context.Context, id, name string, args json.RawMessage, opts *CallOptions) (*mcp.CallToolResult, error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	s, err := m.server(id)
	if err != nil {
		return nil, err
	}
	args, err = objectArgs(args)
	if err != nil {
		return nil, err
	}
	cfg := s.config()
	if !cfg.ToolEnabled(name) {
		return nil, s.unknownTool(name)
	}
	timeout := cfg.CallTimeout()
	if o.Timeout > 0 {
		timeout = o.Timeout
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release, err := m.ops.admit(o.OperationID, cancel)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, stop := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer stop()

	var res *mcp.CallToolResult
	err = s.withSession(ctx, "calling "+name, func(ctx context.Context, sess *session) error {
		if err := s.checkTool(ctx, sess, name); err != nil {
			return err
		}
		var err error
		res, err = sess.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		return err
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: "calling " + name + ": the server sent an empty result"}
	}
	if slices.Contains(res.Content, nil) {
		res.Content = slices.DeleteFunc(res.Content, func(c mcp.Content) bool { return c == nil })
	}
	return res, nil
}

// checkTool refuses a tool the fresh catalog does not list, so a typo gets
// names to choose from instead of a remote error.
func (s *server) checkTool(ctx context.Context, sess *session, name string) error {
	s.mu.Lock()
	mi := s.catalog.m[kindTools]
	known := s.catalog.tool(name) != nil
	current := s.currentLocked(sess)
	s.mu.Unlock()
	if known || !mi.loaded || mi.stale || !current {
		return nil
	}
	return s.unknownTool(name)
}

// objectArgs checks that args is a JSON object; empty means {}.
func objectArgs(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "tool arguments must be a JSON object")
	}
	return args, nil
}

// withSession runs op on the live session (connecting if needed) and
// attributes its error. If op certainly never ran on the server (see
// neverExecuted), a new session is made and op runs once more. A network failure triggers a ping so the state says whether the
// session survived; op itself is never repeated for it.
func (s *server) withSession(ctx context.Context, what string, op func(context.Context, *session) error) error {
	for try := 0; ; try++ {
		sess, err := s.ensure(ctx)
		if err != nil {
			return err
		}
		octx, obs := withObservation(ctx)
		err = op(octx, sess)
		if err == nil {
			return nil
		}
		var me *mcpgate.Error
		if errors.As(err, &me) && me.Category != mcpgate.CategoryAuth {
			return err // our own refusal, not the server's
		}
		e := classify(octx, what, err, obs)
		if try == 0 && neverExecuted(err, obs) {
			s.drop(sess, mcpgate.StateDisconnected, nil)
			continue
		}
		switch {
		case e.Category == mcpgate.CategoryAuth:
			s.drop(sess, mcpgate.StateNeedsAuth, e)
		case e.Category == mcpgate.CategoryNetwork:
			s.probe(sess)
		case e.Category == mcpgate.CategoryProtocol || errors.Is(err, mcp.ErrConnectionClosed):
			// If the SDK gave up on the session, say so now rather than
			// when the watcher gets to it.
			select {
			case <-sess.ended:
				s.drop(sess, mcpgate.StateError, e)
			case <-time.After(time.Second):
			}
		}
		return e
	}
}

// neverExecuted reports whether an operation's failure proves the server
// never ran it: its own request was answered 404 for an expired session, or
// the session was already over so no request was sent at all. A call whose
// request went out and then failed in any other way is in doubt, and is
// never re-sent.
func neverExecuted(err error, obs *observation) bool {
	status, _ := obs.snapshot()
	if status == http.StatusNotFound && errors.Is(err, mcp.ErrSessionMissing) {
		return true
	}
	return obs.unsent() && (errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed))
}

// Prompts returns the server's prompts.
func (m *Manager) Prompts(ctx context.Context, id string) ([]*mcp.Prompt, error) {
	return mirrored(ctx, m, id, func(c *catalogs) []*mcp.Prompt { return c.prompts })
}

// mirrored returns a copy of one of a server's catalogs, connecting it if
// needed.
func mirrored[T any](ctx context.Context, m *Manager, id string, pick func(*catalogs) []T) ([]T, error) {
	s, err := m.server(id)
	if err != nil {
		return nil, err
	}
	if _, err := s.ensure(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(pick(&s.catalog)), nil
}

// GetPrompt renders a prompt with its arguments.
func (m *Manager) GetPrompt(ctx context.Context, id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	res, err := request(ctx, m, id, "getting prompt "+name, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	})
	if err != nil {
		return nil, err
	}
	res.Messages = slices.DeleteFunc(res.Messages, func(p *mcp.PromptMessage) bool { return p == nil || p.Content == nil })
	return res, nil
}

// request runs one request (not a tool call) on the server's session under
// the server's timeout, and refuses an empty result.
func request[R any](ctx context.Context, m *Manager, id, what string, do func(context.Context, *mcp.ClientSession) (*R, error)) (*R, error) {
	s, err := m.server(id)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithTimeoutCause(ctx, s.config().CallTimeout(), errCallTimeout)
	defer stop()
	var res *R
	err = s.withSession(ctx, what, func(ctx context.Context, sess *session) error {
		var err error
		res, err = do(ctx, sess.cs)
		return err
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: what + ": the server sent an empty result"}
	}
	return res, nil
}

// Resources returns the server's resources.
func (m *Manager) Resources(ctx context.Context, id string) ([]*mcp.Resource, error) {
	return mirrored(ctx, m, id, func(c *catalogs) []*mcp.Resource { return c.resources })
}

// ReadResource reads one resource by URI.
func (m *Manager) ReadResource(ctx context.Context, id, uri string) (*mcp.ReadResourceResult, error) {
	if uri == "" {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "resource URI is empty")
	}
	res, err := request(ctx, m, id, "reading "+uri, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	})
	if err != nil {
		return nil, err
	}
	res.Contents = slices.DeleteFunc(res.Contents, func(c *mcp.ResourceContents) bool { return c == nil })
	return res, nil
}
