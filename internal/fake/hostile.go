package fake

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Standalone GET stream behaviours for [HostileOptions.GetStream].
const (
	// GetStream405 answers 405 Method Not Allowed: no standalone stream, which
	// the spec allows. The default.
	GetStream405 = "405"
	// GetStreamClose answers 200 text/event-stream and ends the stream at once.
	// The go-sdk client reconnects with backoff and, after
	// StreamableClientTransport.MaxRetries attempts without progress, fails
	// the whole session.
	GetStreamClose = "close"
	// GetStreamHang never sends response headers until the client goes away.
	// The go-sdk client opens this stream inside Connect, so Connect hangs.
	GetStreamHang = "hang"
	// GetStreamOpen answers 200 text/event-stream and keeps it open;
	// [Hostile.Notify] pushes notifications on it.
	GetStreamOpen = "open"
	// GetStreamRetry1 answers 200 text/event-stream with `retry: 1`, one
	// event and the end of the stream, every time: a client that obeys the
	// retry field blindly reconnects a thousand times a second.
	GetStreamRetry1 = "retry1"
)

// Listen behaviours for [HostileOptions.Listen] (2026-07-28 servers).
const (
	// ListenOpen acknowledges the subscription and keeps the stream open;
	// [Hostile.Notify] pushes notifications on it. The default.
	ListenOpen = "open"
	// ListenBreak acknowledges, then ends the stream at once, every time.
	ListenBreak = "break"
)

// HostileOptions programs a [Hostile] server. Nil hooks and zero values mean
// the well-behaved defaults described on each field.
type HostileOptions struct {
	// ToolsList, when set, returns the raw JSON "result" of tools/list for the
	// request's cursor ("" on the first page). By default the list holds one
	// tool, "ping".
	ToolsList func(cursor string) json.RawMessage
	// PromptsList and ResourcesList are like ToolsList; by default the lists
	// are empty.
	PromptsList, ResourcesList func(cursor string) json.RawMessage
	// CallTool, when set, handles tools/call. It may write any HTTP response
	// itself (status, body, hijack); it gets the request, the JSON-RPC id and
	// params. [WriteResult] and [WriteError] answer the ordinary way. By
	// default every tool answers a text result "pong".
	CallTool func(w http.ResponseWriter, r *http.Request, id json.RawMessage, params json.RawMessage)
	// Intercept, when set, sees every request first, with its JSON-RPC
	// message (zero for a GET or DELETE; a POST's body can be read again
	// from the request), and answers it itself by
	// returning true: to break a stream, answer with a status, resume a
	// stream on GET. Returning false lets the server answer as usual.
	Intercept func(w http.ResponseWriter, r *http.Request, method string, id, params json.RawMessage) bool
	// GetStream decides the standalone GET stream: [GetStream405] (default),
	// [GetStreamClose], [GetStreamHang] or [GetStreamOpen].
	GetStream string
	// ProtocolVersion is answered in initialize; default "2025-11-25".
	ProtocolVersion string
	// Stateless makes a 2026-07-28 server: it answers server/discover
	// (supported versions: 2026-07-28) and subscriptions/listen, refuses
	// initialize with UnsupportedProtocolVersion, and ignores sessions.
	Stateless bool
	// Listen decides the subscriptions/listen stream of a Stateless
	// server: [ListenOpen] (default) or [ListenBreak].
	Listen string
	// Sessions makes initialize issue an Mcp-Session-Id; later requests then
	// need it (400 without, 404 with an unknown one).
	Sessions bool
	// InitializeStatus, if non-zero, answers initialize with that HTTP status
	// and no JSON-RPC body. 401 and 403 carry a Bearer WWW-Authenticate
	// challenge (invalid_token, insufficient_scope).
	InitializeStatus int
}

// Hostile is a hand-written, minimal Streamable HTTP MCP server whose answers
// are programmed by [HostileOptions], to produce what broken and malicious
// servers do. It answers POSTs with application/json, accepts any
// Mcp-Protocol-Version header and answers DELETE with 200.
//
// All methods are safe for concurrent use.
type Hostile struct {
	// URL is the MCP endpoint, http://127.0.0.1:<port>/mcp.
	URL string

	opts HostileOptions
	http *httptest.Server
	done chan struct{} // closed by Stop; releases hanging and open GETs
	once sync.Once

	mu       sync.Mutex
	requests map[string]int
	gets     int
	listens  int
	deletes  int
	sessions map[string]bool
	streams  map[*openStream]bool
}

// openStream is one open standalone GET stream.
type openStream struct {
	events chan []byte
	gone   chan struct{} // closed when the handler returns
}

// StartHostile starts a [Hostile] server for a test and stops it when the
// test ends. It fails the test if GetStream is not one of the known modes.
func StartHostile(t testing.TB, opts HostileOptions) *Hostile {
	t.Helper()
	h, err := newHostile(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

// NewHostile starts a [Hostile] server outside tests; the caller must call
// [Hostile.Stop]. It panics on an unknown GetStream mode.
func NewHostile(opts HostileOptions) *Hostile {
	h, err := newHostile(opts)
	if err != nil {
		panic(err)
	}
	return h
}

func newHostile(opts HostileOptions) (*Hostile, error) {
	switch opts.GetStream {
	case "":
		opts.GetStream = GetStream405
	case GetStream405, GetStreamClose, GetStreamHang, GetStreamOpen, GetStreamRetry1:
	default:
		return nil, fmt.Errorf("fake: unknown GetStream mode %q", opts.GetStream)
	}
	switch opts.Listen {
	case "":
		opts.Listen = ListenOpen
	case ListenOpen, ListenBreak:
	default:
		return nil, fmt.Errorf("fake: unknown Listen mode %q", opts.Listen)
	}
	if opts.ProtocolVersion == "" {
		opts.ProtocolVersion = "2025-11-25"
	}
	h := &Hostile{
		opts:     opts,
		done:     make(chan struct{}),
		requests: make(map[string]int),
		sessions: make(map[string]bool),
		streams:  make(map[*openStream]bool),
	}
	hs, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(h.serveHTTP))
	if err != nil {
		return nil, err
	}
	h.http = hs
	h.URL = base + Endpoint
	hs.Start()
	return h, nil
}

// Requests returns how many JSON-RPC messages with this method (requests and
// notifications) the server has received.
func (h *Hostile) Requests(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[method]
}

// Initializes returns how many "initialize" requests the server has received.
func (h *Hostile) Initializes() int { return h.Requests("initialize") }

// GetStreams returns how many GET requests (standalone stream attempts) the
// server has received.
func (h *Hostile) GetStreams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gets
}

// Deletes returns how many DELETE requests the server has received.
func (h *Hostile) Deletes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deletes
}

// OpenStreams returns how many event streams (standalone GET streams in
// [GetStreamOpen] mode, subscriptions/listen streams in [ListenOpen] mode)
// are open right now, so a test can wait for one before [Hostile.Notify].
func (h *Hostile) OpenStreams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}

// Notify pushes the JSON-RPC notification method (without params), e.g.
// "notifications/tools/list_changed", on every open event stream,
// and returns once each stream has written it (or closed).
func (h *Hostile) Notify(method string) {
	msg, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
	}{"2.0", method})
	h.mu.Lock()
	streams := make([]*openStream, 0, len(h.streams))
	for s := range h.streams {
		streams = append(streams, s)
	}
	h.mu.Unlock()
	for _, s := range streams {
		select {
		case s.events <- msg:
		case <-s.gone:
		}
	}
}

// Stop makes the server go away: it cuts every connection (so a hanging GET
// never gets its headers), closes the listener and waits for its handlers.
// It is safe to call more than once; [StartHostile] calls it when the test
// ends.
func (h *Hostile) Stop() {
	h.once.Do(func() {
		h.http.Listener.Close() // no new connections while the old ones are cut
		h.http.CloseClientConnections()
		close(h.done)
		h.http.Close()
	})
}

func (h *Hostile) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Endpoint {
		http.NotFound(w, r)
		return
	}
	if h.opts.Intercept != nil && r.Method != http.MethodPost && h.opts.Intercept(w, r, "", nil, nil) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r)
	case http.MethodGet:
		h.mu.Lock()
		h.gets++
		h.mu.Unlock()
		if h.checkSession(w, r) {
			h.serveGET(w, r)
		}
	case http.MethodDelete:
		h.mu.Lock()
		h.deletes++
		delete(h.sessions, r.Header.Get("Mcp-Session-Id"))
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// checkSession enforces Mcp-Session-Id when Sessions is on, the way the spec
// says: 400 without one, 404 for one the server does not know. It reports
// whether the request may go on.
func (h *Hostile) checkSession(w http.ResponseWriter, r *http.Request) bool {
	if !h.opts.Sessions {
		return true
	}
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		http.Error(w, "missing Mcp-Session-Id", http.StatusBadRequest)
		return false
	}
	h.mu.Lock()
	known := h.sessions[id]
	h.mu.Unlock()
	if !known {
		http.Error(w, "session not found", http.StatusNotFound)
		return false
	}
	return true
}

func (h *Hostile) servePOST(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeek))
	if err != nil {
		http.Error(w, "reading body", http.StatusBadRequest)
		return
	}
	var msg envelope
	if err := json.Unmarshal(body, &msg); err != nil {
		WriteError(w, nil, -32700, "parse error")
		return
	}
	if msg.Method != "" {
		h.mu.Lock()
		h.requests[msg.Method]++
		h.mu.Unlock()
	}
	if msg.Method != "initialize" && !h.opts.Stateless && !h.checkSession(w, r) {
		return
	}
	if h.opts.Intercept != nil {
		r.Body = io.NopCloser(bytes.NewReader(body)) // the interceptor may read it whole
		if h.opts.Intercept(w, r, msg.Method, msg.ID, msg.Params) {
			return
		}
	}
	if msg.Method == "" || !msg.isCall() {
		// A notification, or the client's response to a request of ours.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var params struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(msg.Params, &params)

	switch msg.Method {
	case "initialize":
		if h.opts.Stateless {
			WriteError(w, msg.ID, -32022, "unsupported protocol version: this server speaks 2026-07-28")
			return
		}
		h.initialize(w, msg.ID)
	case "server/discover":
		if !h.opts.Stateless {
			WriteError(w, msg.ID, -32601, "method not found: server/discover")
			return
		}
		WriteResult(w, msg.ID, map[string]any{
			"resultType":        "complete",
			"supportedVersions": []string{"2026-07-28"},
			"capabilities": map[string]any{
				"tools":     map[string]any{"listChanged": true},
				"prompts":   map[string]any{},
				"resources": map[string]any{},
			},
			"ttlMs":      0,
			"cacheScope": "public",
			"_meta":      map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "hostile", "version": "0.0.1"}},
		})
	case "subscriptions/listen":
		if !h.opts.Stateless {
			WriteError(w, msg.ID, -32601, "method not found: subscriptions/listen")
			return
		}
		h.serveListen(w, r)
	case "ping":
		WriteResult(w, msg.ID, json.RawMessage(`{}`))
	case "tools/list":
		h.list(w, msg.ID, h.opts.ToolsList, params.Cursor,
			`{"tools":[{"name":"ping","description":"Answers pong.","inputSchema":{"type":"object"}}]}`)
	case "prompts/list":
		h.list(w, msg.ID, h.opts.PromptsList, params.Cursor, `{"prompts":[]}`)
	case "resources/list":
		h.list(w, msg.ID, h.opts.ResourcesList, params.Cursor, `{"resources":[]}`)
	case "tools/call":
		if h.opts.CallTool != nil {
			h.opts.CallTool(w, r, msg.ID, msg.Params)
			return
		}
		WriteResult(w, msg.ID, json.RawMessage(`{"content":[{"type":"text","text":"pong"}]}`))
	default:
		WriteError(w, msg.ID, -32601, "method not found: "+msg.Method)
	}
}

func (h *Hostile) initialize(w http.ResponseWriter, id json.RawMessage) {
	switch status := h.opts.InitializeStatus; status {
	case 0:
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "unauthorized", status)
		return
	case http.StatusForbidden:
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
		http.Error(w, "forbidden", status)
		return
	default:
		http.Error(w, http.StatusText(status), status)
		return
	}
	if h.opts.Sessions {
		sid := rand.Text()
		h.mu.Lock()
		h.sessions[sid] = true
		h.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
	}
	WriteResult(w, id, map[string]any{
		"protocolVersion": h.opts.ProtocolVersion,
		"capabilities": map[string]any{
			"tools":     map[string]any{"listChanged": true},
			"prompts":   map[string]any{},
			"resources": map[string]any{},
		},
		"serverInfo": map[string]any{"name": "hostile", "version": "0.0.1"},
	})
}

func (h *Hostile) list(w http.ResponseWriter, id json.RawMessage, hook func(string) json.RawMessage, cursor, fallback string) {
	if hook == nil {
		WriteResult(w, id, json.RawMessage(fallback))
		return
	}
	WriteResult(w, id, hook(cursor))
}

func (h *Hostile) serveGET(w http.ResponseWriter, r *http.Request) {
	switch h.opts.GetStream {
	case GetStream405:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
	case GetStreamClose:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	case GetStreamHang:
		// Returning would make net/http send headers, so only return once the
		// client is gone or Stop has already cut the connection.
		select {
		case <-r.Context().Done():
		case <-h.done:
		}
	case GetStreamOpen:
		h.serveOpenStream(w, r, "")
	case GetStreamRetry1:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		h.mu.Lock()
		n := h.gets
		h.mu.Unlock()
		fmt.Fprintf(w, "retry: 1\nid: %d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hello\"}}\n\n", n)
	}
}

// serveListen answers subscriptions/listen: the acknowledgement, then the
// stream open (ListenOpen) or ended at once (ListenBreak).
func (h *Hostile) serveListen(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.listens++
	h.mu.Unlock()
	ack := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}`
	if h.opts.Listen == ListenBreak {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", ack)
		return
	}
	h.serveOpenStream(w, r, ack)
}

// Listens returns how many subscriptions/listen requests the server has
// answered.
func (h *Hostile) Listens() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.listens
}

func (h *Hostile) serveOpenStream(w http.ResponseWriter, r *http.Request, first string) {
	s := &openStream{events: make(chan []byte), gone: make(chan struct{})}
	defer close(s.gone)
	// Register before the headers go out: once a client sees them, Notify
	// reaches this stream.
	h.mu.Lock()
	h.streams[s] = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, s)
		h.mu.Unlock()
	}()

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if first != "" {
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", first)
	}
	if rc.Flush() != nil {
		return
	}
	for {
		select {
		case msg := <-s.events:
			if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
}
