package manager

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP versions mcpgate speaks to servers, newest first. 2026-07-28 is
// stateless: no initialize and no session, server/discover to learn what
// the server offers, the version and capabilities in every request's _meta.
// The others are the session era of Streamable HTTP.
const (
	version20260728 = "2026-07-28"
	version20251125 = "2025-11-25"
	version20250618 = "2025-06-18"
	version20250326 = "2025-03-26"
)

// maxInstructions bounds the instructions a server gives of itself, as
// kept for search: enough for a paragraph on what the server is for.
const maxInstructions = 2 << 10

// Versions are the protocol versions the manager negotiates with servers,
// newest first.
var Versions = []string{version20260728, version20251125, version20250618, version20250326}

// generation is what a protocol generation changes in how a connection is
// used. The rest of the manager holds a *session and asks its generation,
// never the version.
type generation interface {
	// check asks the server whether the connection still works, after
	// something suspicious (a lost stream, a dropped call).
	check(ctx context.Context, sess *session) error
	// forgotten reports whether err says the server no longer knows the
	// session, so that a new one must be made (and a request it refused
	// certainly never ran).
	forgotten(err error) bool
	// meta adds what this generation carries in a request's _meta.
	meta(m mcp.Meta, wantLogs bool)
	// started runs once a connection is made.
	started(ctx context.Context, sess *session, wantLogs bool)
}

// sessionEra is 2025-03-26, 2025-06-18 and 2025-11-25: initialize makes a
// session, the server may forget it (404), ping checks it.
type sessionEra struct{}

func (sessionEra) check(ctx context.Context, sess *session) error { return sess.cs.Ping(ctx, nil) }
func (sessionEra) forgotten(err error) bool                       { return errors.Is(err, mcp.ErrSessionMissing) }
func (sessionEra) meta(mcp.Meta, bool)                            {}

// started asks for log messages, which a session-era server sends only
// once the client set a level.
func (sessionEra) started(ctx context.Context, sess *session, wantLogs bool) {
	//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
	if wantLogs && sess.caps.Logging != nil {
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		sess.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})
	}
}

// statelessEra is 2026-07-28: nothing to forget; server/discover checks the
// server answers; log messages are asked for per request.
type statelessEra struct{}

func (statelessEra) check(ctx context.Context, sess *session) error { return sess.discover(ctx) }
func (statelessEra) forgotten(error) bool                           { return false }
func (statelessEra) meta(m mcp.Meta, wantLogs bool) {
	if wantLogs {
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		m[mcp.MetaKeyLogLevel] = "info"
	}
}

func (statelessEra) started(context.Context, *session, bool) {}

func generationOf(version string) generation {
	if version >= version20260728 {
		return statelessEra{}
	}
	return sessionEra{}
}

// session is one negotiated connection to a server: an MCP session in the
// session era, the negotiated state (version, capabilities, catalogs) of a
// stateless server. Its id is the connectionId: every operation that acts
// on "the current session" names the session it means, and does nothing if
// that is no longer the current one.
type session struct {
	id       uint64
	cs       *mcp.ClientSession
	gen      generation
	protocol string
	title    string // the server's product name, from initialize or discover
	// instructions is what the server said of itself in initialize,
	// sanitized and cut to maxInstructions: remote text, for search only.
	instructions string
	caps         *mcp.ServerCapabilities

	// What the session's own requests need: the endpoint, the HTTP client
	// (our transport), the authorization, the client's identity.
	url     string
	http    *http.Client
	streams *streamGroup // the transport's supervised streams
	// exchanges are the transport's requests not yet in the request log.
	exchanges *streamGroup
	auth      auth.OAuthHandler
	client    *mcp.Implementation
	// raw, when set, sends the session's tool calls itself (rawcall.go).
	raw *rawCalls

	ctx    context.Context // cancelled when the session closes
	cancel context.CancelFunc
	// live is set once cs is assigned; background callbacks that fire
	// during Connect (the event stream starts inside it) check it first.
	live atomic.Bool
	// ended is closed when the SDK reports the session over.
	ended chan struct{}
	// answers holds what the session's last POST answer was, which tells
	// why the SDK may end it (a web page instead of MCP).
	answers *observation
	wg      sync.WaitGroup // background work of this session (refreshes, probes)
	once    sync.Once

	probing sync.Mutex // one check at a time
	refresh refreshes  // one refresh per catalog kind at a time

	// excluded collects the tools the SDK dropped from the last tools/list
	// (invalid x-mcp-header declarations), with its reason.
	excludedMu sync.Mutex
	excluded   map[string]string
	// taskSupport collects what the last tools/list said of tasks.
	taskSupport map[string]string
}

// close ends the session and waits for its background work. It is
// idempotent and safe to call without any lock held.
func (sess *session) close() {
	sess.once.Do(func() {
		sess.cancel()
		if sess.cs != nil {
			sess.cs.Close()
		}
		if sess.streams != nil {
			sess.streams.closeAndWait(5 * time.Second)
		}
		if sess.exchanges != nil {
			// A kept POST stream is drained for at most drainWait.
			sess.exchanges.closeAndWait(drainWait + time.Second)
		}
	})
	sess.wg.Wait()
}

// noteTaskSupport keeps, from a tools/list result, what each tool said of
// running as a task (execution.taskSupport, 2025-11-25), which the go-sdk's
// Tool does not keep.
func (sess *session) noteTaskSupport(result json.RawMessage) {
	var r struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	sess.excludedMu.Lock()
	defer sess.excludedMu.Unlock()
	for _, t := range r.Tools {
		if t.Execution == nil || t.Execution.TaskSupport == "" {
			continue
		}
		if sess.taskSupport == nil {
			sess.taskSupport = make(map[string]string)
		}
		if len(sess.taskSupport) < 10000 {
			sess.taskSupport[t.Name] = mcpgate.Sanitize(t.Execution.TaskSupport, 20)
		}
	}
}

func (sess *session) takeTaskSupport() map[string]string {
	sess.excludedMu.Lock()
	defer sess.excludedMu.Unlock()
	ts := sess.taskSupport
	sess.taskSupport = nil
	return ts
}

func (sess *session) noteExcluded(tool, reason string) {
	sess.excludedMu.Lock()
	defer sess.excludedMu.Unlock()
	if sess.excluded == nil {
		sess.excluded = make(map[string]string)
	}
	if len(sess.excluded) < 100 {
		sess.excluded[tool] = reason
	}
}

func (sess *session) takeExcluded() map[string]string {
	sess.excludedMu.Lock()
	defer sess.excludedMu.Unlock()
	e := sess.excluded
	sess.excluded = nil
	return e
}

// requestMeta is the _meta of a request this session sends.
func (sess *session) requestMeta(wantLogs bool) mcp.Meta {
	m := mcp.Meta{}
	sess.gen.meta(m, wantLogs)
	return m
}

// discover sends server/discover, to learn whether a stateless server
// still answers. Only the HTTP status matters: any answer from the MCP
// endpoint means it is there; a 401 or 403 goes to the authorization
// handler as it would for any request.
func (sess *session) discover(ctx context.Context) error {
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      "mcpgate-check",
		"method":  "server/discover",
		"params": map[string]any{"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    sess.protocol,
			mcp.MetaKeyClientInfo:         sess.client,
			mcp.MetaKeyClientCapabilities: map[string]any{},
		}},
	})
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sess.url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", sess.protocol)
		req.Header.Set("Mcp-Method", "server/discover")
		if err := setAuthorization(ctx, req, sess.auth); err != nil {
			return err
		}
		resp, err := sess.http.Do(req)
		if err != nil {
			return err
		}
		if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && sess.auth != nil && try == 0 {
			if err := sess.auth.Authorize(ctx, req, resp); err != nil {
				return err
			}
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			if o := observationFrom(ctx); o != nil {
				o.record(resp.StatusCode)
			}
			return fmt.Errorf("server/discover: HTTP %d", resp.StatusCode)
		}
		return nil
	}
}

// firstAuthError remembers the first authorization error its handler
// returned.
type firstAuthError struct {
	auth.OAuthHandler
	mu  sync.Mutex
	err *mcpgate.Error
}

func (h *firstAuthError) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := h.OAuthHandler.Authorize(ctx, req, resp)
	var me *mcpgate.Error
	if errors.As(err, &me) && me.Category == mcpgate.CategoryAuth {
		h.mu.Lock()
		if h.err == nil {
			h.err = me
		}
		h.mu.Unlock()
	}
	return err
}

func (h *firstAuthError) first() *mcpgate.Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// setAuthorization sets the Authorization header from h's token source, as
// the SDK does for its own requests.
func setAuthorization(ctx context.Context, req *http.Request, h auth.OAuthHandler) error {
	if h == nil {
		return nil
	}
	ts, err := h.TokenSource(ctx)
	if err != nil || ts == nil {
		return err
	}
	tok, err := ts.Token()
	if err != nil {
		return err
	}
	if tok != nil && tok.AccessToken != "" {
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return nil
}

// dial opens a new connection: it negotiates the newest version both
// sides speak (server/discover first, then initialize), unless this server
// is known to speak the session era, which then goes straight to
// initialize (and back to discovery if that stops working).
func (s *server) dial(ctx context.Context, cfg mcpgate.ServerConfig) (*session, error) {
	known := s.knownProtocol()
	sess, err := s.dialAs(ctx, cfg, known)
	if err != nil && known != "" && mcpgate.CategoryOf(err) == mcpgate.CategoryProtocol {
		s.m.logf(s.id, "the server no longer speaks MCP %s; negotiating again", known)
		s.rememberProtocol("")
		sess, err = s.dialAs(ctx, cfg, "")
	}
	if err == nil {
		s.rememberProtocol(sess.protocol)
	}
	return sess, err
}

func (s *server) dialAs(ctx context.Context, cfg mcpgate.ServerConfig, known string) (*session, error) {
	m := s.m
	ctx, cancel := context.WithTimeoutCause(ctx, m.opts.ConnectTimeout, errConnectTimeout)
	defer cancel()
	ctx, obs := withObservation(ctx)

	token := ""
	if cfg.Auth == mcpgate.AuthBearer && cfg.BearerTokenEnv != "" {
		token = m.opts.Getenv(cfg.BearerTokenEnv)
	}
	sctx, scancel := context.WithCancel(m.ctx)
	impl := &mcp.Implementation{Name: m.opts.ClientName, Version: m.opts.ClientVersion}
	sess := &session{id: m.nextConnID.Add(1), ctx: sctx, cancel: scancel, ended: make(chan struct{}), answers: new(observation),
		url: cfg.URL, client: impl}

	headers := func() (http.Header, error) {
		h := make(http.Header, len(cfg.Headers))
		for k, v := range cfg.Headers {
			ev, err := mcpgate.ExpandRefs(v, m.opts.Getenv)
			if err != nil {
				return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "header %s: %v", k, err)
			}
			h.Set(k, ev)
		}
		h.Set("User-Agent", m.opts.ClientName+"/"+m.opts.ClientVersion)
		return h, nil
	}
	if _, err := headers(); err != nil {
		scancel()
		return nil, err
	}
	inner := s.authHandler(cfg, token)
	// An authorization failure during negotiation (a 401 on
	// server/discover) is what the person must fix, even when the fallback
	// to initialize then fails for another reason.
	handler := &firstAuthError{OAuthHandler: inner}
	sess.auth = inner
	st := &sessionTransport{
		// Every request of the session, whatever context made it (a
		// stream reopened in the background), is this server's for the
		// network policy.
		base:     netpolicy.Scoped(m.base.Transport, netpolicy.ScopeOf(cfg)),
		headers:  headers,
		maxBody:  m.opts.Limits.MaxResponseBytes,
		lost:     func(err error) { s.streamLost(sess, err) },
		reopened: func() { s.reopened(sess) },
		streamed: func(open bool) {
			if m.opts.OnEventStream != nil {
				m.opts.OnEventStream(s.id, open)
			}
		},
		authorize: func(r *http.Request) error { return setAuthorization(sctx, r, handler) },
		logf:      func(f string, args ...any) { m.logf(s.id, f, args...) },
		server:    s.id,
		answers:   sess.answers,
		record:    m.requests.add,
		policy:    m.opts.streamPolicy,
	}
	if p, ok := inner.(RequestPreparer); ok {
		st.prepare = p.PrepareRequest
	}
	st.progress = func(raw json.RawMessage) {
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(raw, &p) == nil {
			m.progress.deliver(&p)
		}
	}
	if m.opts.OnLog != nil {
		st.log = func(raw json.RawMessage) {
			//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
			var p mcp.LoggingMessageParams
			if json.Unmarshal(raw, &p) == nil {
				m.opts.OnLog(s.id, &p)
			}
		}
	}
	st.tools = sess.noteTaskSupport
	sess.http = &http.Client{Transport: st, CheckRedirect: sameOriginRedirects}
	sess.streams = &st.streams
	sess.exchanges = &st.exchanges
	transport := &mcp.StreamableClientTransport{
		Endpoint:     cfg.URL,
		HTTPClient:   sess.http,
		MaxRetries:   3, // resumptions of a broken POST stream (session era); paced by the transport
		OAuthHandler: handler,
	}
	client := mcp.NewClient(impl, &mcp.ClientOptions{
		// No roots, no sampling: mcpgate offers neither (both are
		// deprecated in 2026-07-28). Elicitation (form) is inferred from
		// the handler.
		Capabilities: &mcp.ClientCapabilities{},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return s.elicit(ctx, req.Params)
		},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { s.listChanged(sess, kindTools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.listChanged(sess, kindPrompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { s.listChanged(sess, kindResources) },
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if m.opts.OnLog != nil && req.Params != nil {
				m.opts.OnLog(s.id, req.Params)
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params != nil {
				m.progress.deliver(req.Params)
			}
		},
		Logger: slog.New(&sdkLog{next: m.opts.Logger, excluded: sess.noteExcluded}),
		// Multi round-trip requests are handled by the manager (mrtr.go):
		// questions go where the person is, and what mcpgate does not offer
		// is declined with a clear reason.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	if m.opts.ClientMiddleware != nil {
		if mw := m.opts.ClientMiddleware(s.id); mw != nil {
			client.AddSendingMiddleware(mw)
		}
	}
	var opts *mcp.ClientSessionOptions
	if known != "" && known < version20260728 {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version20251125}
	}
	cs, err := client.Connect(ctx, transport, opts)
	if err != nil {
		scancel()
		if ae := handler.first(); ae != nil {
			return nil, ae
		}
		return nil, classify(ctx, "connecting", err, obs)
	}
	sess.cs = cs
	sess.live.Store(true)
	res := cs.InitializeResult()
	v := ""
	if res != nil {
		v = res.ProtocolVersion
	}
	if !slices.Contains(Versions, v) {
		sess.close()
		return nil, &mcpgate.Error{Category: mcpgate.CategoryProtocol,
			Message: "connecting: the server speaks MCP " + mcpgate.Sanitize(v, 40) + "; mcpgate speaks Streamable HTTP in MCP 2026-07-28, 2025-11-25, 2025-06-18 and 2025-03-26"}
	}
	sess.protocol = v
	sess.gen = generationOf(v)
	if m.opts.ClientMiddleware == nil && !m.opts.sdkCalls {
		sess.raw = newRawCalls(v, impl, cs.ID())
	}
	if si := res.ServerInfo; si != nil {
		sess.title = mcpgate.Sanitize(cmp.Or(si.Title, si.Name), 80)
	}
	sess.instructions = mcpgate.Sanitize(res.Instructions, maxInstructions)
	sess.caps = res.Capabilities
	if sess.caps == nil {
		sess.caps = &mcp.ServerCapabilities{}
	}
	sess.gen.started(ctx, sess, m.opts.OnLog != nil)
	// Notice a session the SDK itself gave up on (a 404 on any request, a
	// malformed message) as soon as it happens, not at the next call.
	sess.wg.Add(1)
	go func() {
		defer sess.wg.Done()
		err := cs.Wait()
		close(sess.ended)
		if sess.ctx.Err() != nil {
			return // we closed it
		}
		s.sessionEnded(sess, err)
	}()
	return sess, nil
}

// sdkLog passes the SDK's log records on, and notes the tools the SDK
// drops from a tools/list because their x-mcp-header declarations are
// invalid, so the catalog can say why they are missing.
type sdkLog struct {
	next     *slog.Logger
	excluded func(tool, reason string)
	attrs    []slog.Attr
}

func (h *sdkLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || (h.next != nil && h.next.Enabled(ctx, l))
}

func (h *sdkLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "excluding tool from tools/list" {
		var tool, reason string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "tool":
				tool = a.Value.String()
			case "error":
				reason = a.Value.String()
			}
			return true
		})
		if tool != "" {
			h.excluded(tool, reason)
		}
	}
	if h.next == nil || !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handler().Handle(ctx, r)
}

func (h *sdkLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), attrs...)
	return &c
}

func (h *sdkLog) WithGroup(string) slog.Handler { return h }

// connectionCheckTimeout bounds one check of a connection.
const connectionCheckTimeout = 10 * time.Second
