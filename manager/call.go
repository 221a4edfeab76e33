package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	return mirrored(ctx, m, id, kindTools, func(c *catalogs, cfg *mcpgate.ServerConfig) []*mcp.Tool {
		out := make([]*mcp.Tool, 0, len(c.tools))
		for _, t := range c.tools {
			if cfg.ToolEnabled(t.Name) {
				out = append(out, t)
			}
		}
		return out
	})
}

// AllTools returns every tool the server offers, disabled ones included,
// for people choosing which to disable; connecting if needed.
func (m *Manager) AllTools(ctx context.Context, id string) ([]*mcp.Tool, error) {
	return mirrored(ctx, m, id, kindTools, func(c *catalogs, _ *mcpgate.ServerConfig) []*mcp.Tool {
		return slices.Clone(c.tools)
	})
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

// CachedTool returns the tool as the server's catalog last listed it,
// without connecting or listing again: for a caller about to call it
// anyway (CallTool checks the name itself), to whom a re-list of a
// catalog that is never fresh (ttlMs 0) would cost a round trip per call.
func (m *Manager) CachedTool(id, name string) (*mcp.Tool, bool) {
	s, err := m.server(id)
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catalog.tool(name)
	return t, t != nil
}

// unknownTool explains why name cannot be used.
func (s *server) unknownTool(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.ToolEnabled(name) {
		return mcpgate.Errorf(mcpgate.CategoryDisabled, "tool %q of server %q is disabled; enable it with: mcpgate tools enable %s %s", name, s.id, s.id, name)
	}
	c := &s.catalog
	if s.sess == nil && s.decodedLocked() {
		c = &s.held.catalogs
	}
	var known []string
	for _, t := range c.tools {
		if s.cfg.ToolEnabled(t.Name) {
			known = append(known, t.Name)
		}
	}
	ut := &UnknownToolError{Server: s.id, Tool: name, Suggestions: names.Closest(name, known, 3)}
	msg := "server " + quote(s.id) + " has no tool " + quote(name)
	if len(ut.Suggestions) > 0 {
		msg += "; did you mean " + strings.Join(ut.Suggestions, ", ") + "?"
	}
	return &mcpgate.Error{Category: mcpgate.CategoryNotFound, Message: msg, Err: ut}
}

// UnknownToolError is the cause of the not-found error for a tool a
// server does not offer. The error's message, for people, names the
// Suggestions; a front that shows the error to a model must not use that
// message, since Suggestions are the closest names the server offers:
// remote text, which belongs inside an untrusted-content boundary.
type UnknownToolError struct {
	Server, Tool string
	Suggestions  []string
}

func (e *UnknownToolError) Error() string {
	return "server " + quote(e.Server) + " has no tool " + quote(e.Tool)
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// CallTool calls an enabled tool with args (a JSON object, or empty for
// none), passed to the server unchanged. The call times out after the
// server's configured timeout (60 s by default) unless opts says otherwise.
// A call is sent once: only an answer that proves the server never ran it
// (a 404 for an expired session) leads to one new session and one re-send.
// When the server asks for input before it can answer (a form
// elicitation, in 2025-x during the call, in 2026-07-28 as an
// InputRequiredResult), the question goes to Options.Elicit and the call
// continues with the answer.
func (m *Manager) CallTool(ctx context.Context, id, name string, args json.RawMessage, opts *CallOptions) (res *mcp.CallToolResult, err error) {
	if m.opts.OnCallEnd != nil {
		start := m.now()
		defer func() { m.opts.OnCallEnd(ctx, id, name, m.now().Sub(start), res, err) }()
	}
	return m.callTool(ctx, id, name, args, opts)
}

func (m *Manager) callTool(ctx context.Context, id, name string, args json.RawMessage, opts *CallOptions) (*mcp.CallToolResult, error) {
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
	what := "calling " + name
	err = s.withSession(ctx, what, false, func(ctx context.Context, sess *session) error {
		if err := s.checkTool(ctx, sess, name); err != nil {
			return err
		}
		params := &mcp.CallToolParams{Name: name, Arguments: args, Meta: sess.requestMeta(m.opts.OnLog != nil)}
		if o.Progress != nil {
			token, done := m.progress.register(o.Progress)
			defer done()
			params.SetProgressToken(token)
		}
		return s.roundTrips(ctx, what, func(ctx context.Context, in mcp.InputResponseMap, state string) (*inputRequest, error) {
			var err error
			if sess.raw != nil {
				res, err = s.callToolRaw(ctx, sess, name, args, params.Meta, in, state)
			} else {
				p := *params
				p.InputResponses, p.RequestState = in, state
				res, err = sess.cs.CallTool(ctx, &p)
			}
			if err != nil || res == nil || !res.NeedsInput() {
				return nil, err
			}
			return &inputRequest{requests: res.InputRequests, state: res.RequestState}, nil
		})
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: what + ": the server sent an empty result"}
	}
	if slices.Contains(res.Content, nil) {
		res.Content = slices.DeleteFunc(res.Content, func(c mcp.Content) bool { return c == nil })
	}
	dropServerInfo(res)
	return res, nil
}

// dropServerInfo removes the server's identity from a result's _meta. At
// 2026-07-28 each result names the server that sent it; that is the
// session's to know (Status), and a result reads alike from either
// generation. A front serving the result to a host names itself there,
// not the server behind it.
func dropServerInfo(res *mcp.CallToolResult) {
	if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
		return
	}
	delete(res.Meta, mcp.MetaKeyServerInfo)
	if len(res.Meta) == 0 {
		res.Meta = nil
	}
}

// checkTool refuses a tool the catalog does not list, so a typo gets
// names to choose from instead of a remote error. A tool missing from a
// catalog that is no longer current is looked for in a fresh one first.
func (s *server) checkTool(ctx context.Context, sess *session, name string) error {
	for try := 0; ; try++ {
		s.mu.Lock()
		mi := s.catalog.m[kindTools]
		known := s.catalog.tool(name) != nil
		current := s.currentLocked(sess)
		usable := mi.current(s.m.now())
		s.mu.Unlock()
		switch {
		case known && s.taskOnly(name):
			return &mcpgate.Error{Category: mcpgate.CategoryUnsupported,
				Message: fmt.Sprintf("tool %q of server %q runs only as an MCP task (the tasks extension), which mcpgate does not support", name, s.id)}
		case known || !current:
			return nil
		case !usable && try == 0:
			if err := s.refresh(ctx, sess, kindTools, true); err != nil {
				return nil // let the server decide
			}
			continue
		case !mi.loaded || mi.stale:
			return nil
		}
		return s.unknownTool(name)
	}
}

// taskOnly reports whether the catalog says a tool must run as a task.
func (s *server) taskOnly(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.catalog.tool(name)
	if t == nil {
		return false
	}
	v, _ := t.Meta[MetaTaskSupport].(string)
	return v == "required"
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
// neverExecuted), a new session is made and op runs once more. A network
// failure triggers a check so the state says whether the connection
// survived; op itself is never repeated for it. An op that is not
// idempotent (a tool call) and failed after it was sent is reported as in
// doubt.
func (s *server) withSession(ctx context.Context, what string, idempotent bool, op func(context.Context, *session) error) error {
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
		if try == 0 && neverExecuted(sess, err, obs) {
			s.drop(sess, mcpgate.StateDisconnected, nil)
			continue
		}
		switch {
		case e.Category == mcpgate.CategoryAuth:
			s.drop(sess, mcpgate.StateNeedsAuth, e)
		case e.Category == mcpgate.CategoryNetwork:
			if !idempotent && !obs.unsent() {
				e.Message += "; it may have run on the server, so it was not sent again"
			}
			s.probeWithin(ctx, sess)
		case obs.viaRaw():
			// The raw path has ended the session already if the go-sdk
			// would have: nothing to wait for.
		case e.Category == mcpgate.CategoryProtocol || errors.Is(err, mcp.ErrConnectionClosed):
			// If the SDK gave up on the session, say so now rather than
			// when the watcher gets to it.
			select {
			case <-sess.ended:
				s.drop(sess, mcpgate.StateError, e)
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
		return e
	}
}

// neverExecuted reports whether an operation's failure proves the server
// never ran it: its own request was answered 404 for an expired session,
// or the session was already over so no request was sent at all. A call
// whose request went out and then failed in any other way is in doubt,
// and is never re-sent.
func neverExecuted(sess *session, err error, obs *observation) bool {
	status, _ := obs.snapshot()
	if status == http.StatusNotFound && sess.gen.forgotten(err) {
		return true
	}
	return obs.unsent() && (sess.gen.forgotten(err) || errors.Is(err, mcp.ErrConnectionClosed))
}

// reissued runs a request that may safely be sent again (a list, a read, a
// prompt render) and sends it once more, as a new request, when its
// response stream broke before the answer came: 2026-07-28 requires it,
// and a read asks the same the second time. Tool calls never come here.
func reissued(ctx context.Context, op func(context.Context) error) error {
	err := op(ctx)
	if err != nil && ctx.Err() == nil && streamBroke(err) {
		err = op(ctx)
	}
	return err
}

// streamBroke reports whether err says a response stream ended before it
// carried the answer.
func streamBroke(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "request terminated without response")
}

// Prompts returns the server's prompts.
func (m *Manager) Prompts(ctx context.Context, id string) ([]*mcp.Prompt, error) {
	return mirrored(ctx, m, id, kindPrompts, func(c *catalogs, _ *mcpgate.ServerConfig) []*mcp.Prompt { return slices.Clone(c.prompts) })
}

// Resources returns the server's resources.
func (m *Manager) Resources(ctx context.Context, id string) ([]*mcp.Resource, error) {
	return mirrored(ctx, m, id, kindResources, func(c *catalogs, _ *mcpgate.ServerConfig) []*mcp.Resource { return slices.Clone(c.resources) })
}

// ResourceTemplates returns the server's resource templates.
func (m *Manager) ResourceTemplates(ctx context.Context, id string) ([]*mcp.ResourceTemplate, error) {
	return mirrored(ctx, m, id, kindTemplates, func(c *catalogs, _ *mcpgate.ServerConfig) []*mcp.ResourceTemplate {
		return slices.Clone(c.templates)
	})
}

// mirrored returns a copy of one of a server's catalogs, connecting it if
// needed and listing it again if it is no longer current. A kind that
// never loaded returns the error that kept it from loading. While there is
// no live session, a held catalog (stored.go) answers without connecting.
func mirrored[T any](ctx context.Context, m *Manager, id string, k kind, pick func(*catalogs, *mcpgate.ServerConfig) []T) ([]T, error) {
	s, err := m.server(id)
	if err != nil {
		return nil, err
	}
	if out, ok := fromHeld(s, k, pick); ok {
		return out, nil
	}
	sess, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.fresh(ctx, sess, k); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return pick(&s.catalog, &s.cfg), nil
}

// GetPrompt renders a prompt with its arguments.
func (m *Manager) GetPrompt(ctx context.Context, id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	what := "getting prompt " + name
	res, err := request(ctx, m, id, what, func(ctx context.Context, s *server, sess *session) (*mcp.GetPromptResult, error) {
		var res *mcp.GetPromptResult
		err := s.roundTrips(ctx, what, func(ctx context.Context, in mcp.InputResponseMap, state string) (*inputRequest, error) {
			p := &mcp.GetPromptParams{Name: name, Arguments: args, Meta: sess.requestMeta(false), InputResponses: in, RequestState: state}
			var err error
			res, err = sess.cs.GetPrompt(ctx, p)
			if err != nil || res == nil || !res.NeedsInput() {
				return nil, err
			}
			return &inputRequest{requests: res.InputRequests, state: res.RequestState}, nil
		})
		return res, err
	})
	if err != nil {
		return nil, err
	}
	res.Messages = slices.DeleteFunc(res.Messages, func(p *mcp.PromptMessage) bool { return p == nil || p.Content == nil })
	return res, nil
}

// request runs one request (not a tool call) on the server's session under
// the server's timeout, sends it again if its stream broke, and refuses an
// empty result.
func request[R any](ctx context.Context, m *Manager, id, what string, do func(context.Context, *server, *session) (*R, error)) (*R, error) {
	s, err := m.server(id)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithTimeoutCause(ctx, s.config().CallTimeout(), errCallTimeout)
	defer stop()
	var res *R
	err = s.withSession(ctx, what, true, func(ctx context.Context, sess *session) error {
		return reissued(ctx, func(ctx context.Context) error {
			var err error
			res, err = do(ctx, s, sess)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol, Message: what + ": the server sent an empty result"}
	}
	return res, nil
}

// ReadResource reads one resource by URI.
func (m *Manager) ReadResource(ctx context.Context, id, uri string) (*mcp.ReadResourceResult, error) {
	if uri == "" {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "resource URI is empty")
	}
	what := "reading " + uri
	res, err := request(ctx, m, id, what, func(ctx context.Context, s *server, sess *session) (*mcp.ReadResourceResult, error) {
		var res *mcp.ReadResourceResult
		err := s.roundTrips(ctx, what, func(ctx context.Context, in mcp.InputResponseMap, state string) (*inputRequest, error) {
			p := &mcp.ReadResourceParams{URI: uri, Meta: sess.requestMeta(false), InputResponses: in, RequestState: state}
			var err error
			res, err = sess.cs.ReadResource(ctx, p)
			if err != nil || res == nil || !res.NeedsInput() {
				return nil, err
			}
			return &inputRequest{requests: res.InputRequests, state: res.RequestState}, nil
		})
		return res, err
	})
	if err != nil {
		return nil, err
	}
	res.Contents = slices.DeleteFunc(res.Contents, func(c *mcp.ResourceContents) bool { return c == nil })
	return res, nil
}
