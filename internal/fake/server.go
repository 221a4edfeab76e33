package fake

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Endpoint is the path at which the fakes serve MCP.
const Endpoint = "/mcp"

// Options configures a [Server]. The zero value (or a nil *Options) is a
// stateful, unauthenticated server answering POSTs with SSE streams.
type Options struct {
	// BearerToken, when set, requires "Authorization: Bearer <token>" on every
	// request; otherwise the answer is 401 with
	// `WWW-Authenticate: Bearer error="invalid_token"` and a body that says
	// nothing more.
	BearerToken string
	// RequireHeader, when set (e.g. {"X-Api-Key": "k"}), requires each header
	// to have exactly that value (401 otherwise).
	RequireHeader map[string]string
	// Stateless makes the handler sessionless
	// (mcp.StreamableHTTPOptions.Stateless): no Mcp-Session-Id, GET and
	// DELETE answer 405, and server-to-client requests (elicitation) fail.
	Stateless bool
	// Versions, when set, are the only MCP versions the server speaks (the
	// go-sdk's ServerOptions.SupportedProtocolVersions); by default it
	// speaks every version the go-sdk does, 2026-07-28 first. A server
	// limited to the session era answers server/discover with
	// UnsupportedProtocolVersion; one limited to 2026-07-28 refuses
	// initialize.
	Versions []string
	// JSONResponse makes POST responses application/json instead of SSE.
	// Server-to-client messages sent while a call is running (elicitation)
	// then travel on the standalone GET stream instead.
	JSONResponse bool
	// Tally adds the tool tally {key}, which counts its executions per key
	// ([Server.Tally]) and answers the key: how a soak tells a lost call
	// from one run twice.
	Tally bool
	// Instructions, when set, are what initialize (and server/discover)
	// says of the server instead of the fake's own.
	Instructions string

	// OAuth protection (see protected.go). Auth, when set, requires on every
	// request a live access token that Auth issued for exactly this server's
	// URL, else 401 with a Bearer challenge carrying resource_metadata and
	// scope="read" ([ChallengeScope]); the protected resource metadata is
	// served at [ResourceMetadataPath], and the catalog gains the tool
	// admin_reset. Auth and BearerToken are exclusive.
	Auth *AuthServer
	// ToolScopes maps a tool to the scope a call of it needs, e.g.
	// {"admin_reset": "admin"}; a token without it gets 403 with
	// `Bearer error="insufficient_scope", scope="<held scopes> <needed>"`.
	ToolScopes map[string]string
	// OmitResourceMetadata leaves resource_metadata out of the challenges,
	// so clients must find the metadata at the well-known locations.
	OmitResourceMetadata bool
	// RootResourceMetadata serves the metadata at the root location
	// /.well-known/oauth-protected-resource instead of the path-aware one.
	RootResourceMetadata bool
	// OmitChallengeScope leaves scope out of 401 challenges, so clients fall
	// back to the metadata's scopes_supported.
	OmitChallengeScope bool
}

// SessionEra are the versions of the session era, for [Options.Versions]:
// a server that answers initialize with a session and never speaks
// 2026-07-28.
var SessionEra = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Server is an honest MCP server: the go-sdk's own server and Streamable HTTP
// handler, serving the small catalog described in the package documentation,
// behind a thin wrapper that checks credentials, counts what it sees and can
// forget sessions.
//
// All methods are safe for concurrent use.
type Server struct {
	// URL is the MCP endpoint, http://127.0.0.1:<port>/mcp. It stays the same
	// across [Server.Stop] and [Server.Restart].
	URL string

	opts Options
	mcp  *mcp.Server
	sdk  http.Handler // the go-sdk's Streamable HTTP handler for the session era
	// sdk26 serves requests of 2026-07-28 and later: the go-sdk serves that
	// generation only statelessly, so the fake answers each generation the
	// way a server that speaks both does.
	sdk26 http.Handler
	addr  string // host:port, kept for Restart

	mu      sync.Mutex
	http    *httptest.Server // nil while stopped
	closed  bool             // Close was called; no Restart
	life    context.Context  // ends when the server stops; bounds every tool handler
	stop    context.CancelFunc
	live    map[string]session // session IDs issued and not yet forgotten
	expired map[string]bool    // session IDs forgotten by ExpireSessions or Stop

	requests      map[string]int  // JSON-RPC method → messages seen
	listens       map[string]bool // IDs of subscriptions/listen requests not cancelled
	listensEnded  int
	deletes       int
	unauthorized  int
	inFlight      map[string]int // tool name → handlers running
	tallies       map[string]*Tally
	cancellations []string

	prot protection // OAuth protection, see protected.go
}

// session is the server-side lifetime of one issued session ID: cancelling it
// ends the tool handlers running for that session.
type session struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Start starts a [Server] for a test and stops it when the test ends.
// A nil opts means defaults.
func Start(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := newServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a [Server] outside tests (for `mcpgate demo`). The caller
// must call [Server.Close]. A nil opts means defaults. It panics if no
// loopback port can be opened, which only happens on a broken machine.
func NewServer(opts *Options) *Server {
	s, err := newServer(opts)
	if err != nil {
		panic(err)
	}
	return s
}

// schemas keeps the input and output schemas the go-sdk makes from the
// catalog's Go types (reflection, then resolution): made once per process
// instead of once per fake server, a tenth of what a test pays for one.
var schemas = mcp.NewSchemaCache()

func newServer(opts *Options) (*Server, error) {
	s := &Server{
		live:     make(map[string]session),
		expired:  make(map[string]bool),
		requests: make(map[string]int),
		listens:  make(map[string]bool),
		inFlight: make(map[string]int),
		tallies:  make(map[string]*Tally),
	}
	if opts != nil {
		s.opts = *opts
		// Copy the map too, so the caller cannot change the rules later.
		s.opts.RequireHeader = make(map[string]string, len(opts.RequireHeader))
		for k, v := range opts.RequireHeader {
			s.opts.RequireHeader[k] = v
		}
		s.opts.Versions = slices.Clone(opts.Versions)
	}
	if err := checkAuthOptions(&s.opts); err != nil {
		return nil, err
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "fake", Title: "Fake MCP server", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: cmp.Or(s.opts.Instructions, "A fake MCP server for mcpgate's tests and demo. "+
			"Try echo, add, slow, fail, ask and big; the prompts greet and summarize; the resources fake://readme and fake://data.json."),
		GetSessionID:              s.issueSessionID,
		SupportedProtocolVersions: s.opts.Versions,
		SchemaCache:               schemas,
	})
	addCatalog(s)
	if s.opts.Auth != nil {
		addProtectedCatalog(s)
	}
	s.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:    s.opts.Stateless,
		JSONResponse: s.opts.JSONResponse,
	})
	s.sdk26 = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: s.opts.JSONResponse,
		// A call ends when its POST does: the client's cancellation is the
		// end of the request.
		PropagateRequestCancellation: true,
	})
	s.life, s.stop = context.WithCancel(context.Background())
	hs, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(s.serveHTTP))
	if err != nil {
		return nil, err
	}
	s.http = hs
	s.addr = hs.Listener.Addr().String()
	s.URL = base + Endpoint
	hs.Start()
	return s, nil
}

// issueSessionID is the go-sdk's GetSessionID hook: remembering every ID
// issued is what lets ExpireSessions forget exactly those.
func (s *Server) issueSessionID() string {
	id := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithCancel(s.life)
	s.live[id] = session{ctx, cancel}
	return id
}

// serveHTTP checks credentials, counts the request, answers 404 for forgotten
// sessions and hands everything else to the go-sdk.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth != nil && s.serveResourceMetadata(w, r) {
		return
	}
	if r.URL.Path != Endpoint {
		http.NotFound(w, r)
		return
	}
	var msgs []envelope
	if r.Method == http.MethodPost {
		msgs, _ = decodeMessages(peekBody(r))
	}
	if s.opts.Auth != nil {
		if !s.checkAccessToken(w, r, msgs) {
			return
		}
	} else if !s.authorized(r) {
		s.mu.Lock()
		s.unauthorized++
		s.mu.Unlock()
		if s.opts.BearerToken != "" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}

	var methods []string
	for _, m := range msgs {
		if m.Method != "" {
			methods = append(methods, m.Method)
		}
	}
	sessionID := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	for _, m := range methods {
		s.requests[m]++
	}
	for _, m := range msgs {
		s.trackListen(m)
	}
	if r.Method == http.MethodDelete {
		s.deletes++
	}
	gone := sessionID != "" && s.expired[sessionID]
	s.mu.Unlock()

	if gone {
		// The spec: "The server MAY terminate the session at any time, after
		// which it MUST respond to requests containing that session ID with
		// HTTP 404 Not Found."
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
		s.sdk26.ServeHTTP(w, r)
		return
	}
	s.sdk.ServeHTTP(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	if want := s.opts.BearerToken; want != "" {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		// The scheme is case-insensitive (RFC 9110 §11.1), the token is not.
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
			return false
		}
	}
	for name, want := range s.opts.RequireHeader {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(name)), []byte(want)) != 1 {
			return false
		}
	}
	return true
}

// trackListen keeps the IDs of the subscriptions/listen requests still
// open and counts those a notifications/cancelled ends. s.mu is held.
func (s *Server) trackListen(m envelope) {
	switch m.Method {
	case "subscriptions/listen":
		if m.isCall() {
			s.listens[string(m.ID)] = true
		}
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil && s.listens[string(p.RequestID)] {
			delete(s.listens, string(p.RequestID))
			s.listensEnded++
		}
	}
}

// ListensEnded returns how many subscriptions/listen streams the client
// ended with notifications/cancelled (2026-07-28 has no session to
// delete; a client that is done with a stream cancels its request). The
// IDs are matched as written, so it counts right when clients take turns,
// as the commands of one test do.
func (s *Server) ListensEnded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listensEnded
}

// Initializes returns how many "initialize" requests the server has seen.
func (s *Server) Initializes() int { return s.Requests("initialize") }

// Connects returns how many connections clients opened: initialize
// requests, and, when the server speaks 2026-07-28, server/discover
// requests (which is how a 2026-07-28 client connects).
func (s *Server) Connects() int {
	n := s.Requests("initialize")
	if len(s.opts.Versions) == 0 || slices.Contains(s.opts.Versions, "2026-07-28") {
		n += s.Requests("server/discover")
	}
	return n
}

// Requests returns how many JSON-RPC messages with this method (requests and
// notifications alike, e.g. "tools/call" or "notifications/cancelled") the
// server has seen. Requests refused with 401 (or 403 insufficient_scope)
// are not counted; requests answered 404 for a forgotten session are.
func (s *Server) Requests(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method]
}

// Deletes returns how many DELETE requests (session terminations) the server
// has seen.
func (s *Server) Deletes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deletes
}

// Unauthorized returns how many requests were refused with 401.
func (s *Server) Unauthorized() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unauthorized
}

// InFlight returns how many calls of the named tool are running right now.
// Tests use it to cancel a call only once the server is working on it.
func (s *Server) InFlight(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight[tool]
}

// Cancellations returns the names of the tools whose calls were cancelled by
// the client (notifications/cancelled) while running, oldest first.
func (s *Server) Cancellations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cancellations)
}

// Tally counts the executions of the tally tool under one key.
type Tally struct {
	// Started counts handler runs that began; Finished those that returned
	// their result to the go-sdk (which may still fail to deliver it).
	Started, Finished int
}

// Tally returns the executions of the tally tool with this key so far.
func (s *Server) Tally(key string) Tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tallies[key]; t != nil {
		return *t
	}
	return Tally{}
}

// Tallies returns every key the tally tool was called with, and its counts.
func (s *Server) Tallies() map[string]Tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Tally, len(s.tallies))
	for k, t := range s.tallies {
		out[k] = *t
	}
	return out
}

func (s *Server) tallyStarted(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tallies[key]
	if t == nil {
		t = new(Tally)
		s.tallies[key] = t
	}
	t.Started++
}

func (s *Server) tallyFinished(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tallies[key].Finished++
}

// ExpireSessions forgets every session issued so far, as a real server does
// when it restarts or times sessions out: later requests carrying one of
// their Mcp-Session-Id values get 404, which tells the client to initialize
// again. Calls still running in those sessions are abandoned and their
// standalone GET streams end. Sessions started afterwards are unaffected.
// In stateless mode there are no sessions and ExpireSessions does nothing.
func (s *Server) ExpireSessions() {
	s.mu.Lock()
	gone := s.forgetSessionsLocked()
	s.mu.Unlock()
	s.closeSDKSessions(gone)
}

// forgetSessionsLocked marks every live session expired, ends its handlers and
// returns the IDs. s.mu must be held.
func (s *Server) forgetSessionsLocked() map[string]bool {
	gone := make(map[string]bool, len(s.live))
	for id, sess := range s.live {
		sess.cancel()
		s.expired[id] = true
		gone[id] = true
	}
	clear(s.live)
	return gone
}

// closeSDKSessions closes the go-sdk's sessions with the given IDs. Their
// handlers were cancelled first, because ServerSession.Close waits for
// running handlers to return.
func (s *Server) closeSDKSessions(ids map[string]bool) {
	for ss := range s.mcp.Sessions() {
		if id := ss.ID(); id != "" && ids[id] {
			ss.Close()
		}
	}
}

// AddTool adds (or replaces) an echo-like tool at run time: it takes
// {"text": string} and answers with that text. Every connected session is
// sent notifications/tools/list_changed: the go-sdk debounces these by 10ms
// and sends them only on the standalone GET stream, so a client without one
// never hears of the change.
func (s *Server) AddTool(name, description string) {
	addTool(s, &mcp.Tool{Name: name, Description: description, Annotations: readOnly()}, echo)
}

// RemoveTool removes a tool; removing an unknown tool does nothing and sends
// no notification.
func (s *Server) RemoveTool(name string) {
	s.mcp.RemoveTools(name)
}

// Stop makes the server go away abruptly: the listener closes, every
// connection is cut, running calls are abandoned and all sessions are
// forgotten. Clients then get connection errors at the same URL.
// [Server.Restart] brings it back.
func (s *Server) Stop() {
	s.mu.Lock()
	hs := s.http
	s.http = nil
	s.mu.Unlock()
	if hs == nil {
		return
	}
	// Go away first: refuse new connections and cut the old ones, so no
	// client can meet a server that has forgotten its sessions and be told
	// 404 instead of finding it gone.
	hs.Listener.Close()
	hs.CloseClientConnections()
	s.mu.Lock()
	s.stop()
	s.forgetSessionsLocked()
	s.mu.Unlock()
	// Close every go-sdk session, including stateless ones without an ID, so
	// none of their goroutines outlive the server. Their handlers have been
	// cancelled above, so Close does not wait on them.
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
	hs.Close()
}

// Restart listens again at the same URL after [Server.Stop], with the same
// catalog (including tools added at run time) and counters, and no sessions:
// a client's old session ID gets 404. It fails if the port was taken in the
// meantime, or after [Server.Close].
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("fake: restarting a closed server")
	}
	if s.http != nil {
		return errors.New("fake: restarting a running server")
	}
	hs, _, err := newLoopbackServer(s.addr, http.HandlerFunc(s.serveHTTP))
	if err != nil {
		return err
	}
	s.http = hs
	s.life, s.stop = context.WithCancel(context.Background())
	hs.Start()
	return nil
}

// Close stops the server for good and waits until everything it started has
// finished. It is safe to call more than once; [Start] calls it when the
// test ends.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.Stop()
}

// begin prepares a tool handler run: the returned context also ends when the
// call's session is forgotten or the server stops (so ServerSession.Close,
// which waits for handlers, cannot hang), and done records the call's end.
func (s *Server) begin(ctx context.Context, tool string, ss *mcp.ServerSession) (context.Context, func()) {
	s.mu.Lock()
	life := s.life
	if ss != nil {
		if id := ss.ID(); id != "" {
			if sess, ok := s.live[id]; ok {
				life = sess.ctx
			} else if s.expired[id] {
				life = cancelled
			}
		}
	}
	s.inFlight[tool]++
	s.mu.Unlock()

	bounded, cancel := context.WithCancel(ctx)
	stopAfter := context.AfterFunc(life, cancel)
	return bounded, func() {
		stopAfter()
		cancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inFlight[tool]--
		// Only the request's own context tells us the client cancelled;
		// the bounded one also ends when we give up on the session.
		if ctx.Err() != nil {
			s.cancellations = append(s.cancellations, tool)
		}
	}
}

// cancelled is an already-cancelled context, the lifetime of forgotten sessions.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
