package manager

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// A tool call below the go-sdk client, at every generation. A call needs
// little of what the go-sdk's ClientSession keeps: at 2026-07-28 no
// session at all (the version and the client go in the request's own
// _meta), in the session era only the session's ID. So a call is one POST
// of the manager's own, sent through the session's http.Client
// (sessionTransport, with everything it does: configured headers, DPoP,
// the body bound, observations, the request log, the network policy,
// progress and log notifications taken as they pass), its body written
// once with the arguments as the bytes they came as, at 2026-07-28 its
// Mcp-Param-* headers from a plan made once per catalog entry, and its
// answer read on the caller's goroutine. The go-sdk would decode and
// encode the arguments, walk the tool's input schema on every call, and
// hand the answer from goroutine to goroutine.
//
// It does what the go-sdk v1.8.0 client does with the same call, so that
// errors are attributed alike (rawcall_test.go compares the two at both
// generations):
//   - 401 and 403 go to the authorization handler once, then the request
//     is sent once more;
//   - 429, 500, 502, 503 and 504, and another status whose body is a
//     JSON-RPC error, fail the call and leave the connection alone;
//   - a 404 to a request that carried a session ID is a session the
//     server forgot (mcp.ErrSessionMissing): the call never ran, and goes
//     to a new session;
//   - what the go-sdk takes for the end of the connection (another status,
//     a message that does not decode, a malformed event) ends the session
//     here too;
//   - a stream that ends before the answer is a broken stream. In the
//     session era one whose events had IDs is resumed (rawsession.go);
//     otherwise the call fails as broken. The notifications on it before
//     the answer go where the go-sdk's handlers send them, and a request
//     on it is answered as the go-sdk's client answers it, never left
//     waiting (a 2026-07-28 server should ask with an InputRequiredResult
//     instead, and mcpgate answers those too, mrtr.go);
//   - a call whose context ends before its answer is abandoned, and the
//     server is sent notifications/cancelled in the background.
// Servers with Options.ClientMiddleware (a span per request is the
// go-sdk's to make) keep the go-sdk's call.

// rawCalls is what a session needs for its own calls.
type rawCalls struct {
	// stateless is 2026-07-28: the version and client in _meta, the
	// standard headers, streams never resumed.
	stateless bool
	// sessionID is the session era's Mcp-Session-Id ("" when the server
	// gave none).
	sessionID string
	// meta is the _meta every 2026-07-28 request carries (protocol
	// version, client info and capabilities, as the go-sdk sends them),
	// without its closing brace; nil in the session era, whose requests
	// carry only their own members.
	meta []byte
	ids  atomic.Uint64

	mu    sync.Mutex
	plans map[string]headerPlan // by tool name
}

// headerPlan is where a tool's x-mcp-header annotations find their
// values: made once for each catalog entry (its *mcp.Tool).
type headerPlan struct {
	tool    *mcp.Tool
	headers []paramHeader
}

// paramHeader names the header (Mcp-Param-<name>) that carries the
// argument at path.
type paramHeader struct {
	path   []string
	header string
}

// notifyCancelTimeout bounds the notifications/cancelled sent for an
// abandoned call, as the go-sdk bounds its own.
const notifyCancelTimeout = 5 * time.Second

// errNoAnswer is a response stream that ended before the answer, in the
// go-sdk's words (streamBroke and the classification know them).
var errNoAnswer = errors.New("request terminated without response")

// errConnectionFailed marks what the go-sdk takes for the end of the
// connection.
var errConnectionFailed = errors.New("the connection failed")

// newRawCalls prepares the calls of a session speaking protocol, in the
// session era the session sessionID. The client capabilities are those the
// go-sdk derives from the client's options in dial (form elicitation, from
// its handler); the tests compare them on the wire.
func newRawCalls(protocol string, client *mcp.Implementation, sessionID string) *rawCalls {
	if protocol < version20260728 {
		return &rawCalls{sessionID: sessionID, plans: make(map[string]headerPlan)}
	}
	meta, _ := json.Marshal(map[string]any{ // strings and a plain struct: cannot fail
		mcp.MetaKeyProtocolVersion:    protocol,
		mcp.MetaKeyClientInfo:         client,
		mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
	})
	return &rawCalls{stateless: true, meta: meta[:len(meta)-1], plans: make(map[string]headerPlan)}
}

// callToolRaw sends one tools/call; meta holds the call's own _meta
// members (progress token, log level).
func (s *server) callToolRaw(ctx context.Context, sess *session, name string, args json.RawMessage, meta mcp.Meta, in mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
	if sess.ctx.Err() != nil {
		// Closed before it was sent: the go-sdk's closed session says so,
		// and the call goes to a new session.
		return nil, mcp.ErrConnectionClosed
	}
	rc := sess.raw
	id := "mcpgate-call-" + strconv.FormatUint(rc.ids.Add(1), 10)
	body, err := rc.body(id, name, args, meta, in, state)
	if err != nil {
		return nil, fmt.Errorf("encoding tools/call: %w", err)
	}
	hdr := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {sess.protocol},
	}
	switch {
	case rc.stateless:
		hdr["Mcp-Method"] = []string{"tools/call"}
		hdr["Mcp-Name"] = []string{name}
		s.mu.Lock()
		tool := s.catalog.tool(name)
		s.mu.Unlock()
		rc.paramHeaders(tool, args, hdr)
	case rc.sessionID != "":
		hdr["Mcp-Session-Id"] = []string{rc.sessionID}
	}

	observationFrom(ctx).sentRaw()
	res, err := s.exchangeCall(ctx, sess, id, name, body, hdr)
	failed := errors.Is(err, errConnectionFailed)
	if failed {
		s.sessionEnded(sess, err)
	}
	if err != nil && ctx.Err() != nil {
		if !failed {
			s.notifyCancelled(ctx, sess, id)
		}
		return nil, ctx.Err()
	}
	return res, err
}

// body is the call's JSON-RPC request.
func (rc *rawCalls) body(id, name string, args json.RawMessage, meta mcp.Meta, in mcp.InputResponseMap, state string) ([]byte, error) {
	b := make([]byte, 0, 160+len(rc.meta)+len(name)+len(args))
	b = append(b, `{"jsonrpc":"2.0","id":"`...)
	b = append(b, id...)
	b = append(b, `","method":"tools/call","params":{`...)
	if rc.meta != nil || len(meta) > 0 {
		// The go-sdk leaves out an empty _meta.
		b = append(b, `"_meta":`...)
		b = append(b, rc.meta...)
		if rc.meta == nil {
			b = append(b, '{')
		}
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			v, err := json.Marshal(meta[k])
			if err != nil {
				return nil, err
			}
			if i > 0 || rc.meta != nil {
				b = append(b, ',')
			}
			b = append(b, quote(k)...)
			b = append(b, ':')
			b = append(b, v...)
		}
		b = append(b, "},"...)
	}
	b = append(b, `"name":`...)
	b = append(b, quote(name)...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if len(in) > 0 {
		v, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"inputResponses":`...)
		b = append(b, v...)
	}
	if state != "" {
		b = append(b, `,"requestState":`...)
		b = append(b, quote(state)...)
	}
	return append(b, "}}"...), nil
}

// exchangeCall posts the call and reads its answer.
func (s *server) exchangeCall(ctx context.Context, sess *session, id, name string, body []byte, hdr http.Header) (*mcp.CallToolResult, error) {
	// The request log and the transport read a POST's method from its
	// body unless its sender says; this one built the body.
	postCtx := withKnownSummary(ctx, "tools/call", name)
	send := func() (*http.Request, *http.Response, error) {
		req, err := http.NewRequestWithContext(postCtx, http.MethodPost, sess.url, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header = hdr.Clone()
		if err := callAuthorization(sess, req); err != nil {
			return nil, nil, err
		}
		resp, err := sess.http.Do(req)
		return req, resp, err
	}
	req, resp, err := send()
	if err != nil {
		return nil, fmt.Errorf("sending \"tools/call\": %w", err)
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && sess.auth != nil {
		err := sess.auth.Authorize(ctx, req, resp)
		resp.Body.Close()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("sending \"tools/call\": authorization cancelled: %w: %w", errConnectionFailed, err)
			}
			return nil, fmt.Errorf("sending \"tools/call\": %w", err)
		}
		if _, resp, err = send(); err != nil {
			return nil, fmt.Errorf("sending \"tools/call\": %w", err)
		}
	}
	defer resp.Body.Close()
	switch {
	case overloaded(resp.StatusCode):
		return nil, fmt.Errorf("sending \"tools/call\": %s", http.StatusText(resp.StatusCode))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, fmt.Errorf("sending \"tools/call\": %w", sess.raw.refused(resp))
	}
	if got := resp.Header.Get("Mcp-Session-Id"); got != "" && sess.raw.sessionID != "" && got != sess.raw.sessionID {
		return nil, fmt.Errorf("sending \"tools/call\": %w: the server answered for another session", errConnectionFailed)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("tools/call: %w: reading the answer: %v", errConnectionFailed, err) // as the go-sdk says it
		}
		msg, err := decodeMessage(b)
		if err != nil {
			return nil, fmt.Errorf("tools/call: %w: decoding the answer: %w", errConnectionFailed, err)
		}
		if !msg.answers(id) {
			return nil, errors.New("tools/call: the server answered with something other than the call's response")
		}
		return msg.callResult()
	case "text/event-stream":
		return s.readCallStreams(ctx, sess, resp.Body, id)
	}
	if !sess.raw.stateless {
		// The go-sdk's session-era connection does not outlive a
		// request it could not take the answer of.
		return nil, fmt.Errorf("sending \"tools/call\": %w: unsupported content type %q", errConnectionFailed, ct)
	}
	return nil, fmt.Errorf("sending \"tools/call\": unsupported content type %q", ct)
}

// streamReaders keeps the readers of call streams, 4 KiB each, for the
// next call: nothing read through one outlives readCallStream (lines are
// copied into the event's data, and decoding copies out of that).
var streamReaders = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// readCallStream reads a call's response stream up to its answer, acting
// on the notifications before it as the go-sdk's handlers would, and
// noting in at the stream's last event ID and retry delay. The transport
// passes only whole events (a stream cut inside one reads as
// io.ErrUnexpectedEOF), so any end of the stream before the answer is a
// broken stream (errNoAnswer). Like the go-sdk's (whose MaxEventSize the
// session leaves zero, which in v1.8.0 sets no bound), the reading bounds
// no single event: the transport bounds the whole body
// (Limits.MaxResponseBytes).
func (s *server) readCallStream(ctx context.Context, sess *session, body io.Reader, id string, at *streamCursor) (*mcp.CallToolResult, error) {
	r := streamReaders.Get().(*bufio.Reader)
	r.Reset(body)
	defer func() { r.Reset(nil); streamReaders.Put(r) }()
	var name, evID, retry string
	var data []byte
	seen := false // a data line in this event
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := slices.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			return nil, fmt.Errorf("tools/call: %w", errNoAnswer)
		}
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			field, value, ok := bytes.Cut(line, []byte(":"))
			switch {
			case !ok:
				return nil, fmt.Errorf("tools/call: %w: malformed line in SSE stream", errConnectionFailed)
			case string(field) == "event":
				name = string(bytes.TrimSpace(value))
			case string(field) == "id":
				evID = string(bytes.TrimSpace(value))
			case string(field) == "retry":
				retry = string(bytes.TrimSpace(value))
			case string(field) == "data":
				if seen {
					data = append(data, '\n')
				}
				data, seen = append(data, bytes.TrimSpace(value)...), true
			}
			continue
		}
		// A blank line ends the event.
		at.saw(evID, retry)
		if len(data) > 0 && (name == "" || name == "message") {
			msg, err := decodeMessage(data)
			if err != nil {
				return nil, fmt.Errorf("tools/call: %w: decoding an event: %w", errConnectionFailed, err)
			}
			if msg.answers(id) {
				return msg.callResult()
			}
			switch {
			case msg.Method != "" && len(msg.ID) == 0:
				s.streamNotification(sess, msg)
			case msg.Method != "":
				s.answerServerRequest(ctx, sess, msg)
			}
		}
		name, evID, retry, data, seen = "", "", "", data[:0], false
	}
}

// streamNotification handles a notification on a call's response stream as
// the go-sdk's handlers (conn.go) do. The transport has taken progress and
// log messages already, unless they were too large for its tap.
func (s *server) streamNotification(sess *session, msg *rpcMessage) {
	m := s.m
	switch msg.Method {
	case "notifications/tools/list_changed":
		s.listChanged(sess, kindTools)
	case "notifications/prompts/list_changed":
		s.listChanged(sess, kindPrompts)
	case "notifications/resources/list_changed":
		s.listChanged(sess, kindResources)
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(msg.Params, &p) == nil {
			m.progress.deliver(&p)
		}
	case "notifications/message":
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		var p mcp.LoggingMessageParams
		if m.opts.OnLog != nil && json.Unmarshal(msg.Params, &p) == nil {
			m.opts.OnLog(s.id, &p)
		}
	}
}

// answerRequest sends the answer to the server's request id: its result,
// or the error.
func answerRequest(sess *session, id json.RawMessage, result any, e *jsonrpc.Error) {
	answer := map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
	if e != nil {
		answer = map[string]any{"jsonrpc": "2.0", "id": id, "error": e}
	}
	body, err := json.Marshal(answer)
	if err == nil {
		postInBackground(sess.ctx, sess, "", body)
	}
}

// notifyCancelled tells the server an abandoned call is over, in the
// background and bounded, as the go-sdk does.
func (s *server) notifyCancelled(ctx context.Context, sess *session, id string) {
	body, _ := json.Marshal(map[string]any{ // strings only: cannot fail
		"jsonrpc": "2.0",
		"method":  "notifications/cancelled",
		"params":  map[string]any{"reason": ctx.Err().Error(), "requestId": id},
	})
	postInBackground(ctx, sess, "notifications/cancelled", body)
}

// postInBackground sends a notification (method) or a response (method
// "") with the headers the go-sdk gives them, bounded in time, on ctx's
// values but not its end; the session's close waits for it.
func postInBackground(ctx context.Context, sess *session, method string, body []byte) {
	if !sess.exchanges.add() {
		return
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), notifyCancelTimeout)
	go func() {
		defer sess.exchanges.done()
		defer stop()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sess.url, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", sess.protocol)
		switch {
		case sess.raw.stateless && method != "":
			req.Header.Set("Mcp-Method", method)
		case sess.raw.sessionID != "":
			req.Header.Set("Mcp-Session-Id", sess.raw.sessionID)
		}
		if callAuthorization(sess, req) != nil {
			return
		}
		if resp, err := sess.http.Do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
	}()
}

// refused is the error of a status that is neither success nor the server
// being busy: the server's JSON-RPC error when the body is one; for a
// request that carried a session ID, a 404 is the session forgotten;
// anything else ends the connection, as the go-sdk takes it.
func (rc *rawCalls) refused(resp *http.Response) error {
	b, _ := io.ReadAll(resp.Body)
	if msg, err := decodeMessage(b); err == nil && msg.Error != nil {
		return fmt.Errorf("%w: %s", msg.Error, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusNotFound && rc.sessionID != "" {
		return fmt.Errorf("%w: %w", errConnectionFailed, mcp.ErrSessionMissing)
	}
	return fmt.Errorf("%w: %s", errConnectionFailed, http.StatusText(resp.StatusCode))
}

// callAuthorization sets the Authorization header as the go-sdk does for
// its requests: from the handler's token source, under the session's
// context; a refresh token the authorization server refused
// (invalid_grant) sends the request without one, so the server's 401
// reaches the handler.
func callAuthorization(sess *session, req *http.Request) error {
	if sess.auth == nil {
		return nil
	}
	ts, err := sess.auth.TokenSource(sess.ctx)
	if err != nil || ts == nil {
		return err
	}
	tok, err := ts.Token()
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re) && re.ErrorCode == "invalid_grant":
	case err != nil:
		return err
	case tok != nil:
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return nil
}

// rpcMessage is a JSON-RPC message from the server.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

func decodeMessage(b []byte) (*rpcMessage, error) {
	msg, ok := scanMessage(b)
	if !ok {
		msg = new(rpcMessage)
		if err := json.Unmarshal(b, msg); err != nil {
			return nil, err
		}
	}
	if msg.JSONRPC != "2.0" {
		return nil, errors.New("not a JSON-RPC 2.0 message")
	}
	return msg, nil
}

// rpcMembers are rpcMessage's members, as its fields' tags name them.
var rpcMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// scanMessage reads b as json.Unmarshal would into an rpcMessage, without
// reflection and with one copy of b, when b is an object whose members
// are each given once, in the case the tags give, with a string jsonrpc
// and method; it reports false for anything else (an invalid message
// too), which json.Unmarshal decodes instead. FuzzDecodeMessage holds the
// two to the same value.
func scanMessage(b []byte) (*rpcMessage, bool) {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' || !json.Valid(b) {
		return nil, false
	}
	b = bytes.Clone(b[i:]) // b may be a reader's buffer; the raw members outlive it
	var msg rpcMessage
	var seen [6]bool
	for key, value := range jsonscan.Members(b) {
		k := slices.Index(rpcMembers, string(key))
		if k < 0 {
			if slices.ContainsFunc(rpcMembers, func(m string) bool { return strings.EqualFold(m, string(key)) }) {
				return nil, false // encoding/json matches a member in another case too
			}
			continue
		}
		if seen[k] {
			return nil, false
		}
		seen[k] = true
		ok := true
		switch rpcMembers[k] {
		case "jsonrpc":
			msg.JSONRPC, ok = jsonscan.Unquote(value)
		case "method":
			msg.Method, ok = jsonscan.Unquote(value)
		case "id":
			msg.ID = value
		case "params":
			msg.Params = value
		case "result":
			msg.Result = value
		case "error":
			if string(value) != "null" {
				msg.Error = new(jsonrpc.Error)
				ok = json.Unmarshal(value, msg.Error) == nil
			}
		}
		if !ok {
			return nil, false
		}
	}
	return &msg, true
}

// answers reports whether msg is the response to the request id.
func (msg *rpcMessage) answers(id string) bool {
	if msg.Method != "" || (msg.Result == nil && msg.Error == nil) {
		return false
	}
	var got string
	return json.Unmarshal(msg.ID, &got) == nil && got == id
}

func (msg *rpcMessage) callResult() (*mcp.CallToolResult, error) {
	if msg.Error != nil {
		return nil, fmt.Errorf("calling \"tools/call\": %w", msg.Error)
	}
	if res, ok := textResult(msg.Result); ok {
		return res, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		return nil, fmt.Errorf("calling \"tools/call\": decoding the result: %w", err)
	}
	return &res, nil
}

// textResult reads the result most calls return, text content blocks and
// perhaps isError (and at 2026-07-28 resultType "complete" and a _meta
// holding only the server's identity, which callTool drops), in place:
// the go-sdk's decoding of a result allocates a 32 KiB reader buffer per
// call. It reports false for anything else
// (another member, another content type, a key given twice, a key in
// another case), which the go-sdk decodes; FuzzTextResult holds the two
// to the same answer. raw is valid JSON (a member of a decoded message).
func textResult(raw []byte) (*mcp.CallToolResult, bool) {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	raw = raw[i:]
	var res mcp.CallToolResult
	var content, isError, meta, complete bool
	for key, value := range jsonscan.Members(raw) {
		switch string(key) {
		case "_meta":
			// Only the server's identity, which callTool drops.
			if meta || len(value) == 0 || value[0] != '{' {
				return nil, false
			}
			meta = true
			n := 0
			for k := range jsonscan.Members(value) {
				if string(k) != mcp.MetaKeyServerInfo {
					return nil, false
				}
				n++
			}
			if n == 0 {
				return nil, false // an empty _meta stays, as the go-sdk keeps it
			}
		case "resultType":
			if complete || string(value) != `"complete"` {
				return nil, false
			}
			complete = true
		case "content":
			if content || len(value) == 0 || value[0] != '[' {
				return nil, false
			}
			content = true
			res.Content = []mcp.Content{}
			i := jsonscan.SkipSpace(value, 1)
			for i < len(value) && value[i] == '{' {
				end := jsonscan.ValueEnd(value, i)
				text, ok := textBlock(value[i:end])
				if !ok {
					return nil, false
				}
				res.Content = append(res.Content, &mcp.TextContent{Text: text})
				if i = jsonscan.SkipSpace(value, end); i < len(value) && value[i] == ',' {
					i = jsonscan.SkipSpace(value, i+1)
				}
			}
			if i >= len(value) || value[i] != ']' {
				return nil, false // an element that is not an object
			}
		case "isError":
			if isError {
				return nil, false
			}
			isError = true
			switch string(value) {
			case "true":
				res.IsError = true
			case "false":
			default:
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if !content {
		return nil, false
	}
	if complete {
		// The result's type is unexported: a copy of one the go-sdk
		// decoded carries it.
		r := completeResult()
		r.Content, r.IsError = res.Content, res.IsError
		return &r, true
	}
	return &res, true
}

// completeResult is an empty result of type "complete", as the go-sdk
// decodes one. It is made at the first call that needs it, not at start:
// the go-sdk's decoder spends some 60 KB preparing for the type, which a
// process that makes no call would touch for nothing.
var completeResult = sync.OnceValue(func() mcp.CallToolResult {
	var r mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &r); err != nil {
		panic(err)
	}
	return r
})

// textBlock reads a content block of exactly the members type "text" and
// text, and reports false for any other.
func textBlock(obj []byte) (string, bool) {
	var text string
	var typed, texted bool
	for key, value := range jsonscan.Members(obj) {
		switch string(key) {
		case "type":
			if typed || string(value) != `"text"` {
				return "", false
			}
			typed = true
		case "text":
			s, ok := jsonscan.Unquote(value)
			if texted || !ok {
				return "", false
			}
			text, texted = s, true
		default:
			return "", false
		}
	}
	return text, typed && texted
}

// paramHeaders sets the Mcp-Param-* headers of a call of tool (nil when
// the catalog does not list it: none are sent, as the go-sdk sends none
// for a tool it has not listed).
func (rc *rawCalls) paramHeaders(tool *mcp.Tool, args json.RawMessage, hdr http.Header) {
	if tool == nil {
		return
	}
	rc.mu.Lock()
	plan, ok := rc.plans[tool.Name]
	if !ok || plan.tool != tool {
		plan = headerPlan{tool: tool, headers: planHeaders(tool)}
		rc.plans[tool.Name] = plan
	}
	rc.mu.Unlock()
	if len(plan.headers) == 0 {
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return
	}
	for _, p := range plan.headers {
		if v, ok := headerValue(obj, p.path); ok {
			hdr.Set(p.header, v)
		}
	}
}

// schemaProperty is what a header plan reads of an input schema.
type schemaProperty struct {
	Header     json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// planHeaders finds every x-mcp-header annotation of a tool's input
// schema, at any depth (the go-sdk dropped tools whose annotations are
// invalid when it listed them).
func planHeaders(tool *mcp.Tool) []paramHeader {
	b, err := json.Marshal(tool.InputSchema)
	if err != nil {
		return nil
	}
	var root schemaProperty
	if json.Unmarshal(b, &root) != nil {
		return nil
	}
	var out []paramHeader
	var walk func(props map[string]schemaProperty, prefix []string)
	walk = func(props map[string]schemaProperty, prefix []string) {
		for name, p := range props {
			path := append(slices.Clip(prefix), name)
			var h string
			if json.Unmarshal(p.Header, &h) == nil && h != "" {
				out = append(out, paramHeader{path: path, header: "Mcp-Param-" + h})
			}
			walk(p.Properties, path)
		}
	}
	walk(root.Properties, nil)
	return out
}

// headerValue is the header form (SEP-2243) of the argument at path: a
// string as it is, or base64 in =?base64?…?= when it is not plain
// printable ASCII; a boolean as true or false; an integer (within the
// range a double holds exactly) in decimal. Anything else, null or
// missing sends no header.
func headerValue(obj map[string]json.RawMessage, path []string) (string, bool) {
	raw, ok := obj[path[0]]
	for _, k := range path[1:] {
		var inner map[string]json.RawMessage
		if !ok || json.Unmarshal(raw, &inner) != nil {
			return "", false
		}
		raw, ok = inner[k]
	}
	if !ok {
		return "", false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		const maxSafe = 1<<53 - 1
		if v != math.Trunc(v) || math.Abs(v) > maxSafe {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	case string:
		if needsBase64(v) {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?=", true
		}
		return v, true
	}
	return "", false
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if strings.ContainsAny(s[:1], " \t") || strings.ContainsAny(s[len(s)-1:], " \t") {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}
