package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio fast path. Over stdio, a session-era host's tools/call of the
// front's own tools (the gateway tool, or with Direct the bridged
// mcp__server__tool tools) is served below the go-sdk server: the line
// the host wrote is decoded once (method, name, the arguments kept as
// bytes), the call goes to the gateway or the bridge exactly as the go-sdk
// handler would send it (serveCall: progress, log messages, elicitation,
// the request log, the task refusal, disabled and unknown tools, bounds
// and the untrusted-content boundary are all below that point), and the
// response is encoded once and written through the transport's lineWriter.
// Everything else, and every request the fast path is not sure of, goes
// to the go-sdk as before.
//
// What the go-sdk server did for such a call, and where it is now:
//   - the initialization gate: only requests of an initialized session
//     are taken; before that the go-sdk answers them as it did;
//   - per-request protocol detection: a request whose _meta names a
//     protocol version (2026-07-28) goes to the go-sdk, which keeps that
//     generation's log level, result type and server info, and the
//     InputRequiredResult round trips (requestState, inputResponses);
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
//   - an empty Content is sent as [] (the go-sdk's callTool does so);
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

	mu       sync.Mutex
	inflight map[jsonrpc.ID]context.CancelFunc
	wg       sync.WaitGroup
	served   atomic.Int64 // requests answered, for tests
}

func newFastPath(ctx context.Context, f *Front) *fastPath {
	return &fastPath{f: f, ctx: ctx, inflight: make(map[jsonrpc.ID]context.CancelFunc)}
}

// callParams is what the fast path reads of a tools/call request.
type callParams struct {
	Name      string
	Arguments json.RawMessage
	// versioned is set when _meta names a protocol version (2026-07-28).
	versioned bool
	// progressToken is _meta's, as the host wrote it.
	progressToken json.RawMessage
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
	case req.Method != "tools/call" || !req.IsCall():
		return false
	}
	ss := p.ss.Load()
	if ss == nil {
		return false
	}
	init := ss.InitializeParams()
	if init == nil || init.ProtocolVersion >= mrtrVersion {
		return false
	}
	params, ok := readParams(req.Params)
	if !ok {
		return false // the go-sdk says what is wrong with it, or serves it
	}
	if params.versioned {
		return false
	}
	if !p.f.opts.Direct && params.Name != gateway.ToolName {
		return false // not a tool of the front's: the go-sdk's error
	}
	hr := hostRequest{ss: ss, method: "tools/call", name: params.Name, args: params.Arguments}
	if t := params.progressToken; len(t) > 0 && string(t) != "null" {
		hr.token = t // sent back as the host wrote it
	}
	hr.capabilities(init.ProtocolVersion, init.Capabilities)

	ctx, cancel := context.WithCancel(p.ctx)
	p.mu.Lock()
	if _, dup := p.inflight[req.ID]; dup {
		p.mu.Unlock()
		cancel()
		return false // a host reusing a live ID: let the go-sdk judge
	}
	p.inflight[req.ID] = cancel
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		res, err := p.serve(ctx, hr, params.Arguments)
		p.mu.Lock()
		delete(p.inflight, req.ID)
		p.mu.Unlock()
		cancel()
		p.reply(req.ID, res, err)
	}()
	return true
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
func (p *fastPath) reply(id jsonrpc.ID, res *mcp.CallToolResult, err error) {
	var data []byte
	if err == nil {
		if res.Content == nil {
			r := *res
			r.Content = []mcp.Content{} // as the go-sdk: never "content": null
			res = &r
		}
		var buf bytes.Buffer
		buf.WriteString(`{"jsonrpc":"2.0","id":`)
		if err = appendJSON(&buf, id.Raw()); err == nil {
			buf.WriteString(`,"result":`)
			err = appendJSON(&buf, res)
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

// wait waits for the requests in flight to be answered.
func (p *fastPath) wait() { p.wg.Wait() }
