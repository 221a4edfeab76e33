package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// The request log: one entry per HTTP request a session sends to a remote
// server (every JSON-RPC POST, and the DELETE that ends a session; not the
// long-lived standalone GET stream). An entry is metadata only: the
// JSON-RPC method and, for tools/call, the tool's name are read from the
// request body, never its arguments; nothing of headers, tokens, URLs or
// response content is kept, except whether the response carried a
// JSON-RPC error.

// RequestLogEntry is one request to a remote server.
type RequestLogEntry struct {
	Time   time.Time `json:"time"` // when it was sent
	Server string    `json:"server"`
	// Method is the JSON-RPC method ("tools/call"), "response" for an
	// answer to the server's own request (an elicitation), or the HTTP
	// method when there is no JSON-RPC message (DELETE).
	Method string `json:"method"`
	// Tool is the tool's name for tools/call.
	Tool string `json:"tool,omitempty"`
	// Duration runs from sending until the response body was read or
	// closed (for a streamed response, until the stream ended).
	Duration time.Duration `json:"duration"`
	// Outcome is "ok", or a category saying what went wrong: "http" (an
	// HTTP error status), "auth" (401 or 403), "remote" (a JSON-RPC
	// error), "network", "timeout", "cancelled", "protocol" (the response
	// exceeded its bound).
	Outcome    string `json:"outcome"`
	HTTPStatus int    `json:"httpStatus,omitempty"` // 0 when no response arrived
	BytesIn    int64  `json:"bytesIn"`              // response body bytes read
	BytesOut   int64  `json:"bytesOut"`             // request body bytes
}

// OutcomeOK is the Outcome of a request that succeeded.
const OutcomeOK = "ok"

// DefaultRequestLogSize is the number of entries [Manager.RecentRequests]
// keeps when Options.RequestLogSize is zero.
const DefaultRequestLogSize = 500

// maxSummaryBytes bounds how much of a request body is read to find its
// method and tool name; both come before the arguments in what the go-sdk
// sends.
const maxSummaryBytes = 64 << 10

// requestLog is the manager's bounded ring of recent requests. The ring
// grows as requests come, up to its size: a process that sends none (a
// search answered from stored catalogs) keeps no 64 KB ring for nothing.
type requestLog struct {
	mu   sync.Mutex
	ring []RequestLogEntry // at most size
	size int
	next int // once the ring is full, the oldest entry, where the next goes

	sink func(RequestLogEntry)
}

func newRequestLog(size int, sink func(RequestLogEntry)) *requestLog {
	if size <= 0 {
		size = DefaultRequestLogSize
	}
	return &requestLog{size: size, sink: sink}
}

// add keeps e in the ring, then hands it to the sink outside the lock.
func (l *requestLog) add(e RequestLogEntry) {
	l.mu.Lock()
	if n := len(l.ring); n < l.size {
		if n == cap(l.ring) {
			l.ring = append(make([]RequestLogEntry, 0, min(l.size, max(16, 2*n))), l.ring...)
		}
		l.ring = append(l.ring, e)
	} else {
		l.ring[l.next] = e
		l.next = (l.next + 1) % n
	}
	l.mu.Unlock()
	if l.sink != nil {
		l.sink(e)
	}
}

// recent returns the last n entries (all kept ones when n <= 0), oldest
// first.
func (l *requestLog) recent(n int) []RequestLogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := len(l.ring)
	if n <= 0 || n > kept {
		n = kept
	}
	out := make([]RequestLogEntry, n)
	for i := range n {
		out[i] = l.ring[(l.next+kept-n+i)%kept]
	}
	return out
}

// RecentRequests returns the last n requests sent to remote servers (all
// the manager keeps when n <= 0), oldest first: in the order they ended,
// so a long call comes after the short requests it outlasted.
func (m *Manager) RecentRequests(n int) []RequestLogEntry { return m.requests.recent(n) }

// exchange meters one request for the log. finish is called once, when
// the response body ends or is closed, or when no response arrived.
type exchange struct {
	ctx    context.Context
	record func(RequestLogEntry)
	start  time.Time
	now    func() time.Time
	entry  RequestLogEntry // Time, Server, Method, Tool, BytesOut; HTTPStatus once known
	in     atomic.Int64
	once   sync.Once
	// recorded, when set, is told the entry is recorded (the transport's
	// exchanges group).
	recorded func()

	mu   sync.Mutex // guards errs: a body may be closed while another goroutine reads it
	errs rpcErrorScanner
}

// startExchange reads the request's method and tool, and returns nil when
// there is no log to record into.
func (t *sessionTransport) startExchange(req *http.Request, summary *bodySummaryOnce) *exchange {
	if t.record == nil {
		return nil
	}
	now := t.now
	if now == nil {
		now = time.Now
	}
	x := &exchange{ctx: req.Context(), record: t.record, now: now, start: now()}
	if t.exchanges.add() {
		x.recorded = t.exchanges.done
	}
	x.entry = RequestLogEntry{Time: x.start, Server: t.server, Method: req.Method}
	if m, tool, ok := fromHeaders(req.Header); ok && req.Method == http.MethodPost {
		x.entry.Method, x.entry.Tool = m, tool
	} else if req.Method == http.MethodPost {
		if m, tool, ok := summary.get(); ok {
			x.entry.Method, x.entry.Tool = m, tool
		}
	}
	if req.ContentLength > 0 {
		x.entry.BytesOut = req.ContentLength
	}
	return x
}

// responded notes the response's status and how to read its body.
func (x *exchange) responded(resp *http.Response) {
	x.entry.HTTPStatus = resp.StatusCode
	switch ct := strings.ToLower(resp.Header.Get("Content-Type")); {
	case strings.HasPrefix(ct, "text/event-stream"):
		x.errs.sse = true
	case strings.HasPrefix(ct, "application/json"):
	default:
		x.errs.off = true
	}
}

// read counts and inspects bytes of the response body.
func (x *exchange) read(p []byte) {
	x.in.Add(int64(len(p)))
	x.mu.Lock()
	x.errs.feed(p)
	x.mu.Unlock()
}

// answered reports whether the response's JSON-RPC answer (a result or
// an error) has been read.
func (x *exchange) answered() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.errs.responded || x.errs.found
}

// finish records the entry. err is why the exchange ended: nil or io.EOF
// for a complete response, errResponseTooLarge, a transport or read error,
// or errBodyClosed when the reader stopped early.
func (x *exchange) finish(err error) {
	if x == nil {
		return
	}
	x.once.Do(func() {
		e := x.entry
		e.Duration = x.now().Sub(x.start)
		e.BytesIn = x.in.Load()
		e.Outcome = x.outcome(err)
		x.record(e)
		if x.recorded != nil {
			x.recorded()
		}
	})
}

// errBodyClosed ends an exchange whose body was closed before its end.
var errBodyClosed = errors.New("response body closed")

func (x *exchange) outcome(err error) string {
	x.mu.Lock()
	responded, rpcErr := x.errs.responded, x.errs.found
	x.mu.Unlock()
	status := x.entry.HTTPStatus
	ended := err != nil && !errors.Is(err, io.EOF) // stopped before the body's end
	switch {
	case errors.Is(err, errResponseTooLarge):
		return string(mcpgate.CategoryProtocol)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return string(mcpgate.CategoryAuth)
	case rpcErr:
		// A JSON-RPC error, whatever the HTTP status it came with (2026-07-28
		// sends invalid params with 400).
		return string(mcpgate.CategoryRemote)
	case status >= 300:
		return string(mcpgate.CategoryHTTP)
	case responded:
		// The answer arrived; the caller may stop reading (and cancel)
		// before the stream's end.
		return OutcomeOK
	case ended && x.ctx.Err() != nil:
		return contextOutcome(x.ctx)
	case ended && !errors.Is(err, errBodyClosed):
		return string(mcpgate.CategoryNetwork)
	}
	return OutcomeOK
}

func contextOutcome(ctx context.Context) string {
	cause := context.Cause(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(cause, errCallTimeout) || errors.Is(cause, errConnectTimeout) {
		return string(mcpgate.CategoryTimeout)
	}
	return string(mcpgate.CategoryCancelled)
}

// summarize finds the JSON-RPC method of a request body and, for
// tools/call, the tool's name, reading at most maxSummaryBytes and keeping
// nothing else. A message without a method is a response.
// fromHeaders reads the method and tool a 2026-07-28 request names in its
// Mcp-Method and Mcp-Name headers, which the SDK sets from the body it
// sends, so the body need not be read again. A value that is not plain
// printable ASCII (the header's encoded form) is left to summarize.
func fromHeaders(h http.Header) (method, tool string, ok bool) {
	method = h.Get("Mcp-Method")
	if method == "" || !plainHeader(method) {
		return "", "", false
	}
	if method == "tools/call" {
		tool = h.Get("Mcp-Name")
		if tool == "" || !plainHeader(tool) {
			return "", "", false
		}
	}
	return bounded(method, "unknown"), bounded(tool, ""), true
}

// plainHeader reports whether v is printable ASCII without a "=?" (the
// start of an encoded word), at most 512 bytes.
func plainHeader(v string) bool {
	if len(v) > 512 || strings.Contains(v, "=?") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// bodySummaryOnce reads one request's body for its method and tool at
// most once: a session-era request has no Mcp-Method header, and both the
// request log and the transport (looking for a tools/list) want them.
type bodySummaryOnce struct {
	req          *http.Request
	read, ok     bool
	method, tool string
}

// knownSummary is the method and tool of a request whose sender built
// its body and so knows them (the raw call's tools/call POST): on the
// request's context, it spares reading the body back.
type knownSummary struct{ method, tool string }

type knownSummaryKey struct{}

func withKnownSummary(ctx context.Context, method, tool string) context.Context {
	return context.WithValue(ctx, knownSummaryKey{}, &knownSummary{method, tool})
}

// newBodySummary is req's summary, known already when its context says.
func newBodySummary(req *http.Request) *bodySummaryOnce {
	if k, ok := req.Context().Value(knownSummaryKey{}).(*knownSummary); ok {
		return &bodySummaryOnce{req: req, read: true, ok: true, method: k.method, tool: k.tool}
	}
	return &bodySummaryOnce{req: req}
}

func (b *bodySummaryOnce) get() (method, tool string, ok bool) {
	if !b.read {
		b.method, b.tool, b.ok = bodySummary(b.req)
		b.read = true
	}
	return b.method, b.tool, b.ok
}

// bodySummary is summarize of a request's body, which the go-sdk's
// requests and the raw call's hold in memory (GetBody): read in place
// (internal/jsonscan) when it is a JSON object within maxSummaryBytes, as
// they are, and by summarize's tokens otherwise (about 16 µs of a
// session-era call's CPU as tokens, 9 in place). FuzzSummary holds the two
// readings together.
func bodySummary(req *http.Request) (method, tool string, ok bool) {
	if req.GetBody == nil {
		return "", "", false
	}
	body, err := req.GetBody()
	if err != nil {
		return "", "", false
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxSummaryBytes+1))
	if err == nil && len(b) <= maxSummaryBytes && len(b) > 0 && b[0] == '{' && json.Valid(b) {
		if method, tool, ok = summarizeObject(b); ok {
			return method, tool, true
		}
	}
	method, tool = summarize(io.MultiReader(bytes.NewReader(b), body))
	return method, tool, true
}

// summarizeObject is summarize of obj, a valid JSON object, read in place;
// ok is false where summarize's tokens would lose their place (a params
// name that is neither a string nor null), which only summarize can say.
func summarizeObject(obj []byte) (method, tool string, ok bool) {
	var name string
	for key, value := range jsonscan.Members(obj) {
		switch string(key) {
		case "method":
			s, isString := stringOrNull(value)
			if !isString {
				return bounded(method, "unknown"), "", true
			}
			method = s
		case "params":
			if name, ok = paramsNameOf(value); !ok {
				return "", "", false
			}
		default:
			continue
		}
		if method != "" && (method != "tools/call" || name != "") {
			break
		}
	}
	if method == "" {
		return "response", "", true
	}
	if method == "tools/call" {
		tool = bounded(name, "")
	}
	return bounded(method, "unknown"), tool, true
}

// paramsNameOf is paramsName of a params value read in place, or not ok.
func paramsNameOf(value []byte) (string, bool) {
	if value[0] != '{' {
		return "", true
	}
	name := ""
	for key, v := range jsonscan.Members(value) {
		if string(key) == "name" {
			s, ok := stringOrNull(v)
			if !ok {
				return "", false
			}
			name = s
		}
	}
	return name, true
}

// stringOrNull reads a JSON value as decoding it into a string does: a
// string, or null (which leaves the string empty); anything else fails.
func stringOrNull(v []byte) (string, bool) {
	if string(v) == "null" {
		return "", true
	}
	if v[0] != '"' {
		return "", false
	}
	return jsonscan.Unquote(v)
}

func summarize(body io.Reader) (method, tool string) {
	dec := json.NewDecoder(io.LimitReader(body, maxSummaryBytes))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "unknown", ""
	}
	var name string
scan:
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		switch key {
		case "method":
			var s string
			if dec.Decode(&s) != nil {
				return bounded(method, "unknown"), ""
			}
			method = s
		case "params":
			name = paramsName(dec)
		default:
			if skipValue(dec) != nil {
				break scan
			}
			continue
		}
		if method != "" && (method != "tools/call" || name != "") {
			break
		}
	}
	if method == "" {
		return "response", ""
	}
	if method == "tools/call" {
		tool = bounded(name, "")
	}
	return bounded(method, "unknown"), tool
}

// paramsName reads the params value and returns its "name" member, if it
// is an object with a string name before anything unreadable.
func paramsName(dec *json.Decoder) string {
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	if tok != json.Delim('{') {
		if d, ok := tok.(json.Delim); ok && (d == '[') {
			skipRest(dec, 1)
		}
		return ""
	}
	name := ""
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return name
		}
		if key == "name" {
			var s string
			if dec.Decode(&s) != nil {
				return ""
			}
			name = s
			continue
		}
		if skipValue(dec) != nil {
			return name
		}
	}
	dec.Token() // the closing brace
	return name
}

// skipValue reads one JSON value of any size without keeping it.
func skipValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		return skipRest(dec, 1)
	}
	return nil
}

func skipRest(dec *json.Decoder, depth int) error {
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// bounded keeps a method or tool name printable and short.
func bounded(s, empty string) string {
	s = mcpgate.Sanitize(s, 128)
	if s == "" {
		return empty
	}
	return s
}

// rpcErrorScanner watches a response body go by for a JSON-RPC error: a
// top-level "error" member that is not null, in the JSON body or in any
// data line of an event stream. It keeps a few bytes of state, never the
// content.
type rpcErrorScanner struct {
	sse       bool // text/event-stream: look inside data lines only
	off       bool // neither JSON nor an event stream
	found     bool // a JSON-RPC error was seen
	responded bool // a JSON-RPC response (result or error) was seen

	// event stream state
	lineStart bool // at the start of a line (true once the first byte is seen)
	started   bool
	field     []byte // the field name of the current line, up to a few bytes
	inData    bool   // inside a data line's value
	skipSpace bool   // the optional space after "data:"

	// JSON state
	depth     int
	inString  bool
	escape    bool
	expectKey bool
	inKey     bool    // reading a top-level key
	key       [8]byte // its first bytes
	keyLen    int     // its length (may exceed len(key))
	afterKey  bool    // an "error" key was read; its value comes next
}

func (s *rpcErrorScanner) feed(p []byte) {
	if s.off || s.found {
		return
	}
	for _, c := range p {
		if !s.sse {
			s.json(c)
			continue
		}
		if !s.started {
			s.started, s.lineStart = true, true
		}
		if c == '\n' || c == '\r' {
			if s.lineStart {
				s.resetJSON() // a blank line ends the event
			}
			s.lineStart, s.inData, s.field = true, false, s.field[:0]
			continue
		}
		if s.lineStart {
			s.lineStart = false
		}
		switch {
		case s.inData:
			if s.skipSpace {
				s.skipSpace = false
				if c == ' ' {
					continue
				}
			}
			s.json(c)
		case c == ':':
			s.inData = string(s.field) == "data"
			s.skipSpace = true
		case len(s.field) < 8:
			s.field = append(s.field, c)
		}
		if s.found {
			return
		}
	}
}

func (s *rpcErrorScanner) resetJSON() {
	s.depth, s.inString, s.escape, s.expectKey, s.inKey, s.afterKey = 0, false, false, false, false, false
}

func (s *rpcErrorScanner) json(c byte) {
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
		case c == '"':
			s.inString = false
			if s.inKey {
				s.inKey = false
				key := ""
				if s.keyLen <= len(s.key) {
					key = string(s.key[:s.keyLen])
				}
				s.afterKey = key == "error"
				s.responded = s.responded || key == "result"
			}
			return
		}
		if s.inKey {
			if s.keyLen < len(s.key) {
				s.key[s.keyLen] = c
			}
			s.keyLen++
		}
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n', ':':
		return
	case '"':
		s.inString = true
		if s.depth == 1 && s.expectKey {
			s.expectKey, s.inKey, s.keyLen = false, true, 0
			return
		}
	case '{', '[':
		s.depth++
		s.expectKey = c == '{' && s.depth == 1
	case '}', ']':
		s.depth--
	case ',':
		s.expectKey = s.depth == 1
	}
	if s.afterKey && s.depth >= 1 {
		// The first byte of the error member's value: anything but null.
		s.afterKey = false
		s.found = c != 'n'
		s.responded = s.responded || s.found
	}
}
