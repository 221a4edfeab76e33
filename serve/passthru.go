package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio fast path. Over stdio, a host's tools/call of the front's own
// tools (the gateway tool, or with Direct the bridged mcp__server__tool
// tools) is served below the go-sdk server: the line the host wrote is
// read once, in place (method, name, the arguments kept as bytes of the
// line), the call goes to the gateway or the bridge exactly as the go-sdk
// handler would send it (serveCall: progress, log messages, elicitation,
// the request log, the task refusal, disabled and unknown tools, bounds
// and the untrusted-content boundary are all below that point), and the
// response is encoded once and written through the transport's lineWriter.
// Everything else, and every request the fast path is not sure of, goes
// to the go-sdk as before.
//
// What the go-sdk server did for such a call, and where it is now:
//   - the initialization gate: only requests of an initialized session
//     are taken (for 2026-07-28, once the go-sdk has taken the session's
//     first request, from which it keeps the version and capabilities);
//     before that the go-sdk answers them as it did;
//   - per-request protocol detection: a request is taken only at its
//     session's generation. At 2026-07-28, perRequest reads _meta as the
//     go-sdk validates it and leaves to the go-sdk what the fast path
//     cannot answer alike (a log level, which the go-sdk keeps in the
//     request's context for ServerSession.Log; capabilities other than
//     the session's; anything it would refuse); reply adds the result's
//     resultType ("complete", or "input_required" with the
//     InputRequiredResult's questions, their content left null as the
//     go-sdk leaves it) and the server's identity in _meta. The retries of
//     an InputRequiredResult (requestState, inputResponses) go to the
//     go-sdk, and reach the same parked call;
//   - the lookup of the tool: the gateway tool by name; with Direct the
//     mirror (synced first, as enableDirect's middleware does), and a name
//     it lacks is answered with the go-sdk's own unknown-tool error;
//   - input and output schemas: the go-sdk validates neither for tools
//     added with Server.AddTool (its documentation leaves both to the
//     handler), which is how the front registers its tools. The gateway
//     checks its own input (HandleCall); a bridged tool's arguments are
//     checked to be an object by the manager and validated by the remote
//     server, which owns the schema, as before;
//   - cancellation: the host's notifications/cancelled for a request the
//     fast path serves cancels its context here (the go-sdk never sees
//     either), and the response is still written, as the go-sdk does;
//   - an empty Content is sent as [] (the go-sdk's callTool does so, but
//     for an InputRequiredResult);
//   - the response goes out as one line through the same writer as the
//     go-sdk's messages, so lines never interleave.
//
// Front.Run uses it for StdioTransport only, and not with a
// ServerMiddleware (which must see every request).

// fastPath serves the tools/call requests it takes for one stdio session.
type fastPath struct {
	f   *Front
	ctx context.Context // the session's; handlers' contexts derive from it
	ss  atomic.Pointer[mcp.ServerSession]
	out io.Writer // the transport's lineWriter, set by Connect

	setLevel atomic.Bool // the host sent logging/setLevel (see perRequest)

	mu       sync.Mutex
	inflight map[jsonrpc.ID]context.CancelFunc
	wg       sync.WaitGroup // the calls in flight
	served   atomic.Int64   // requests answered, for tests

	// A call runs deep (the gateway, the manager, net/http), and a new
	// goroutine for each grew its stack two or three times a call (a
	// tenth of the serve process's own CPU on a call). A goroutine that
	// has answered one waits up to workerIdle for the next instead; idle
	// ones take the next call from work, and quit ends them.
	work    chan func()
	quit    chan struct{}
	workers sync.WaitGroup
}

// workerIdle is how long a fast-path goroutine waits for another call.
const workerIdle = 10 * time.Second

func newFastPath(ctx context.Context, f *Front) *fastPath {
	return &fastPath{f: f, ctx: ctx, inflight: make(map[jsonrpc.ID]context.CancelFunc),
		work: make(chan func()), quit: make(chan struct{})}
}

// spawn runs call on an idle worker, or on a new one when none is idle.
func (p *fastPath) spawn(call func()) {
	p.wg.Add(1)
	select {
	case p.work <- call:
		return
	default:
	}
	p.workers.Add(1)
	go p.worker(call)
}

// worker runs call, then the calls it is handed until it has waited
// workerIdle for one or the fast path is done.
func (p *fastPath) worker(call func()) {
	defer p.workers.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		call()
		p.wg.Done()
		idle.Reset(workerIdle)
		select {
		case call = <-p.work:
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}

// callParams is what the fast path reads of a tools/call request.
type callParams struct {
	Name      string
	Arguments json.RawMessage
	// versioned is set when _meta names a protocol version (2026-07-28).
	versioned bool
	// progressToken is _meta's, as the host wrote it.
	progressToken json.RawMessage
	// meta is _meta when it is an object.
	meta json.RawMessage
}

// readParams reads a tools/call request's params as the go-sdk does
// (member names matched exactly, not as encoding/json matches struct
// fields), or says the fast path should leave the request to the go-sdk:
// params that are not an object with a string name, or that carry a
// requestState, inputResponses or task. raw is valid JSON (envelope
// checked the line); what it reads are slices of it.
func readParams(raw json.RawMessage) (*callParams, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	p := &callParams{}
	var name, meta []byte
	for key, value := range jsonscan.Members(raw) {
		switch string(key) {
		case "requestState", "inputResponses", "task":
			return nil, false
		case "arguments":
			p.Arguments = value
		case "name":
			name = value
		case "_meta":
			meta = value
		}
	}
	var ok bool
	if p.Name, ok = stringValue(name); !ok || p.Name == "" {
		return nil, false
	}
	switch {
	case meta == nil || string(meta) == "null":
	case meta[0] != '{':
		return nil, false // not what the go-sdk reads as _meta
	default:
		p.meta = meta
		for key, value := range jsonscan.Members(meta) {
			switch string(key) {
			case mcp.MetaKeyProtocolVersion:
				p.versioned = true
			case "progressToken":
				p.progressToken = value
			}
		}
	}
	return p, true
}

// take serves req if it is a tools/call the fast path can serve, or the
// cancellation of one it serves; it reports whether it did. It runs on the
// goroutine reading the host's lines, so it never waits.
func (p *fastPath) take(req *jsonrpc.Request) bool {
	switch {
	case req.Method == "notifications/cancelled" && !req.IsCall():
		return p.cancel(req.Params)
	case req.Method == "logging/setLevel":
		p.setLevel.Store(true) // see perRequest
		return false
	case req.Method != "tools/call" || !req.IsCall():
		return false
	}
	ss := p.ss.Load()
	if ss == nil {
		return false
	}
	init := ss.InitializeParams()
	if init == nil {
		return false // the go-sdk's gate, or a 2026-07-28 session's first request
	}
	params, ok := readParams(req.Params)
	if !ok {
		return false // the go-sdk says what is wrong with it, or serves it
	}
	mrtr := init.ProtocolVersion >= mrtrVersion
	if params.versioned != mrtr {
		return false // a request of another generation than its session's
	}
	caps := init.Capabilities
	if mrtr {
		if caps, ok = p.perRequest(init, params.meta); !ok {
			return false
		}
	}
	if !p.f.opts.Direct && params.Name != gateway.ToolName {
		return false // not a tool of the front's: the go-sdk's error
	}
	hr := hostRequest{ss: ss, method: "tools/call", name: params.Name, args: params.Arguments}
	if t := params.progressToken; len(t) > 0 && string(t) != "null" {
		hr.token = t // sent back as the host wrote it
	}
	hr.capabilities(init.ProtocolVersion, caps)

	ctx, cancel := context.WithCancel(p.ctx)
	p.mu.Lock()
	if _, dup := p.inflight[req.ID]; dup {
		p.mu.Unlock()
		cancel()
		return false // a host reusing a live ID: let the go-sdk judge
	}
	p.inflight[req.ID] = cancel
	p.mu.Unlock()
	p.spawn(func() {
		res, err := p.serve(ctx, hr, params.Arguments)
		p.mu.Lock()
		delete(p.inflight, req.ID)
		p.mu.Unlock()
		cancel()
		p.reply(req.ID, res, err, mrtr)
	})
	return true
}

// perRequest reads a 2026-07-28 request's _meta as the go-sdk's server
// does (validateRequestMeta), returning the client capabilities it
// declares, or says the request is the go-sdk's to serve or refuse:
//   - the protocol version must be the session's (the one the go-sdk
//     accepted from the session's first request);
//   - clientInfo, when present, must be an Implementation;
//   - the capabilities must be those of the session's first request, as
//     the go-sdk read them (another set, or one it would refuse, is its
//     own to judge);
//   - a log level is the go-sdk's: it keeps it in the request's context,
//     where ServerSession.Log reads it, and the fast path cannot put it
//     there. Without one the go-sdk sends a 2026-07-28 request no log
//     messages, and the fast path's calls fall back to the session's
//     level, which is just as empty unless the host sent
//     logging/setLevel, after which every call is the go-sdk's.
func (p *fastPath) perRequest(init *mcp.InitializeParams, meta []byte) (*mcp.ClientCapabilities, bool) {
	if p.setLevel.Load() {
		return nil, false
	}
	var version, caps, info []byte
	for key, value := range jsonscan.Members(meta) {
		switch string(key) {
		case mcp.MetaKeyProtocolVersion:
			version = value
		case mcp.MetaKeyClientCapabilities:
			caps = value
		case mcp.MetaKeyClientInfo:
			info = value
		//lint:ignore SA1019 a log level in _meta is the 2026-07-28 request's own (deprecated by SEP-2577 in its window); such a request stays with the go-sdk
		case mcp.MetaKeyLogLevel:
			if string(value) != "null" {
				return nil, false
			}
		}
	}
	if v, ok := stringValue(version); !ok || v != init.ProtocolVersion {
		return nil, false
	}
	if info != nil {
		var impl mcp.Implementation
		if info[0] != '{' || json.Unmarshal(info, &impl) != nil {
			return nil, false
		}
	}
	if len(caps) == 0 || caps[0] != '{' {
		return nil, false
	}
	// The go-sdk's 2026-07-28 form of the capabilities: roots as a
	// pointer, kept in RootsV2 and copied to Roots.
	var v2 struct {
		mcp.ClientCapabilities
		//lint:ignore SA1019 roots are deprecated from 2026-07-28 (SEP-2577); a host may still declare them, and the go-sdk decodes them so
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	if json.Unmarshal(caps, &v2) != nil {
		return nil, false
	}
	declared := v2.ClientCapabilities
	//lint:ignore SA1019 the go-sdk keeps the deprecated roots in RootsV2; compared as it filled it
	declared.RootsV2 = v2.Roots
	//lint:ignore SA1019 as above
	if declared.RootsV2 != nil {
		//lint:ignore SA1019 the go-sdk still fills the deprecated Roots; compared as it filled it
		declared.Roots = *declared.RootsV2
	}
	if !reflect.DeepEqual(&declared, init.Capabilities) {
		return nil, false
	}
	return init.Capabilities, true
}

// serve runs one call as the go-sdk's handler of the tool would.
func (p *fastPath) serve(ctx context.Context, hr hostRequest, args json.RawMessage) (res *mcp.CallToolResult, err error) {
	f := p.f
	defer func() { // serveCall recovers the call; this, the mirror's sync
		if r := recover(); r != nil {
			f.opts.Logger.Error("serve: a request panicked", "panic", r)
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error in mcpgate"}
		}
	}()
	if !f.opts.Direct {
		return f.gatewayCall(ctx, hr, args)
	}
	f.mirrorFor(ctx, func() bool { _, ok := f.directTool(hr.name); return ok })
	d, ok := f.directTool(hr.name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", hr.name)}
	}
	return f.directCall(ctx, hr, d, args)
}

// cancel cancels the fast-path request a notifications/cancelled names,
// reporting whether it named one.
func (p *fastPath) cancel(raw json.RawMessage) bool {
	var params struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(raw, &params) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(params.RequestID)
	if err != nil || !id.IsValid() {
		return false
	}
	p.mu.Lock()
	cancel := p.inflight[id]
	p.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel()
	return true
}

// reply writes the response to request id as one line. A result is
// encoded once, into the envelope, without escaping HTML characters, as the
// go-sdk writes its responses; an error goes through jsonrpc.EncodeMessage.
// A 2026-07-28 request's result (mrtr) carries what the go-sdk adds to it:
// its resultType and the server's identity in _meta.
func (p *fastPath) reply(id jsonrpc.ID, res *mcp.CallToolResult, err error, mrtr bool) {
	var data []byte
	if err == nil && mrtr && res.InputRequests != nil && (len(res.Content) > 0 || res.StructuredContent != nil) {
		err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
	}
	if err == nil {
		r := *res
		if r.Content == nil && (!mrtr || r.InputRequests == nil) {
			r.Content = []mcp.Content{} // as the go-sdk: never "content": null but while asking
		}
		var inputRequests []byte
		if mrtr {
			r.Meta = maps.Clone(r.Meta)
			if r.Meta == nil {
				r.Meta = mcp.Meta{}
			}
			if _, ok := r.Meta[mcp.MetaKeyServerInfo]; !ok {
				r.Meta[mcp.MetaKeyServerInfo] = p.f.impl
			}
			if r.InputRequests != nil {
				inputRequests, err = json.Marshal(r.InputRequests)
				r.InputRequests = nil
			}
		}
		var buf bytes.Buffer
		buf.WriteString(`{"jsonrpc":"2.0","id":`)
		if err == nil {
			err = appendJSON(&buf, id.Raw())
		}
		if err == nil {
			buf.WriteString(`,"result":`)
			if !p.appendTextResult(&buf, &r, mrtr && len(res.Meta) == 0) {
				err = appendJSON(&buf, &r)
			}
		}
		if err == nil && mrtr {
			// The result's resultType, and its inputRequests after it, are
			// the last members the go-sdk writes (CallToolResult.MarshalJSON);
			// the type is unexported, so they go in here.
			buf.Truncate(buf.Len() - 1)
			if inputRequests == nil {
				buf.WriteString(`,"resultType":"complete"}`)
			} else {
				buf.WriteString(`,"resultType":"input_required","inputRequests":`)
				buf.Write(inputRequests)
				buf.WriteByte('}')
			}
		}
		if err != nil {
			p.f.opts.Logger.Error("serve: a tool result could not be encoded", "error", err)
			err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error in mcpgate: the result could not be encoded"}
		} else {
			buf.WriteString("}\n")
			data = buf.Bytes()
		}
	}
	if err != nil {
		b, encErr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: err})
		if encErr != nil {
			p.f.opts.Logger.Error("serve: a response could not be encoded", "error", encErr)
			return
		}
		data = append(b, '\n')
	}
	p.served.Add(1)
	p.out.Write(data)
}

// appendTextResult appends the JSON of r, when it is only text blocks and
// perhaps isError (and, with serverInfo, the _meta naming the server
// alone), as encoding/json writes it; it reports false, writing nothing,
// for any other result. The go-sdk's encoding goes through reflection
// twice per block (CallToolResult.MarshalJSON, TextContent.MarshalJSON);
// TestTextResultEncoding holds the two to the same bytes.
func (p *fastPath) appendTextResult(buf *bytes.Buffer, r *mcp.CallToolResult, serverInfo bool) bool {
	if r.Content == nil || (len(r.Meta) > 0 && !serverInfo) || (serverInfo && p.f.implJSON == nil) || r.StructuredContent != nil || r.InputRequests != nil || r.RequestState != "" {
		return false
	}
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); !ok || tc.Meta != nil || tc.Annotations != nil {
			return false
		}
	}
	start := buf.Len()
	buf.WriteByte('{')
	if serverInfo {
		buf.WriteString(`"_meta":{"` + mcp.MetaKeyServerInfo + `":`)
		buf.Write(p.f.implJSON)
		buf.WriteString(`},`)
	}
	buf.WriteString(`"content":[`)
	for i, c := range r.Content {
		if i > 0 {
			buf.WriteByte(',')
		}
		text, err := json.Marshal(c.(*mcp.TextContent).Text)
		if err != nil {
			buf.Truncate(start)
			return false
		}
		buf.WriteString(`{"type":"text","text":`)
		buf.Write(text)
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	if r.IsError {
		buf.WriteString(`,"isError":true`)
	}
	buf.WriteByte('}')
	return true
}

// appendJSON appends v's JSON to buf, HTML characters unescaped.
func appendJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// cancelAll cancels every request in flight.
func (p *fastPath) cancelAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.inflight {
		cancel()
	}
}

// wait waits for the requests in flight to be answered, then ends the
// idle workers.
func (p *fastPath) wait() {
	p.wg.Wait()
	close(p.quit)
	p.workers.Wait()
}
