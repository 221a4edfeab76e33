package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one message a host sends over stdio.
const MaxLineBytes = mcp.DefaultMaxLineLength

// StdioTransport serves one host over in and out, one JSON-RPC message per
// line. Unlike [mcp.IOTransport] alone, a line that is not JSON is
// answered with a parse error (-32700, id null) and a line that is JSON but
// no JSON-RPC message with an invalid-request error (-32600), and the
// session goes on: one bad line from a host must not end every call it
// has in flight. out is never closed; it belongs to the process.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	return &stdioTransport{in: in, out: out}
}

type stdioTransport struct {
	in  io.Reader
	out io.Writer
	// fast, when set, serves the tools/call requests it takes below the
	// go-sdk (passthru.go); [Front.Run] sets it.
	fast *fastPath
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	w := &lineWriter{w: t.out}
	r := &lineFilter{src: bufio.NewReaderSize(t.in, 64<<10), reply: w, limit: MaxLineBytes}
	if t.fast != nil {
		t.fast.out = w
		r.take = t.fast.take
	}
	return (&mcp.IOTransport{Reader: io.NopCloser(r), Writer: w}).Connect(ctx)
}

// lineWriter serializes whole-message writes of the SDK and of lineFilter,
// so an error reply never lands inside another message.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (w *lineWriter) Close() error { return nil }

// lineFilter hands the SDK only lines that decode as JSON-RPC messages and
// answers the others itself.
type lineFilter struct {
	src   *bufio.Reader
	reply io.Writer
	limit int
	buf   []byte // the rest of the current good line, newline included
	// take, when set, is offered every single request or notification; a
	// message it takes is its own to answer, and the go-sdk never sees it.
	take func(*jsonrpc.Request) bool
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		line, err := f.next()
		if len(line) > 0 {
			f.buf = append(line, '\n')
		}
		if err != nil && len(f.buf) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

var errLineTooLong = errors.New("line too long")

// next returns the next line that is a JSON-RPC message (or batch of them),
// answering every other non-empty line.
func (f *lineFilter) next() ([]byte, error) {
	for {
		line, err := f.readLine()
		if errors.Is(err, errLineTooLong) {
			f.answer(nil, jsonrpc.CodeParseError, "Parse error: message too long")
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && !f.taken(line) {
			if id, code, msg := check(line); code != 0 {
				f.answer(id, code, msg)
			} else {
				return line, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine reads up to a newline, at most limit bytes; a longer line is
// consumed and reported as errLineTooLong. Each line is a fresh slice,
// never reused: a request the fast path takes keeps slices of it (its
// params, the call's arguments) while the call runs.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := f.src.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > f.limit {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err == nil {
				err = errLineTooLong
			} else {
				f.answer(nil, jsonrpc.CodeParseError, "Parse error: message too long")
			}
		}
		return line, err
	}
}

// taken offers line to take when it is a plain JSON-RPC request or
// notification, and reports whether take took it. The go-sdk's decoder
// (jsonrpc.DecodeMessage) allocates some 100 KB per message; this reads
// the envelope with encoding/json instead, as strictly (exact member
// names, version "2.0", a string method, an ID that is a string, a number
// or absent, nesting bounded as the go-sdk bounds it). A line it does not
// take goes through check and to the go-sdk as before.
func (f *lineFilter) taken(line []byte) bool {
	if f.take == nil {
		return false
	}
	req := envelope(line)
	return req != nil && f.take(req)
}

// envelope decodes line as one JSON-RPC request or notification, or
// returns nil; what it decodes, jsonrpc.DecodeMessage decodes the same
// (FuzzEnvelope). It reads the members in place (jsonscan.go), as a
// map[string]json.RawMessage would hold them; params are a slice of line.
func envelope(line []byte) *jsonrpc.Request {
	if len(line) == 0 || line[0] != '{' || tooDeep(line, maxDepth) || !json.Valid(line) {
		return nil
	}
	var version, method, rawID, params []byte
	for key, value := range jsonscan.Members(line) {
		switch string(key) {
		case "jsonrpc":
			version = value
		case "method":
			method = value
		case "id":
			rawID = value
		case "params":
			params = value
		}
	}
	if v, ok := stringValue(version); !ok || v != "2.0" {
		return nil
	}
	name, ok := stringValue(method)
	if !ok {
		return nil
	}
	var id jsonrpc.ID
	if rawID != nil {
		if id, ok = idValue(rawID); !ok {
			return nil
		}
	}
	return &jsonrpc.Request{ID: id, Method: name, Params: params}
}

// idValue reads a request ID as jsonrpc.MakeID takes it from an any that
// encoding/json decoded: a string, a number (float64, as encoding/json
// parses it) or null.
func idValue(raw []byte) (jsonrpc.ID, bool) {
	var v any
	switch c := raw[0]; {
	case c == '"':
		s, ok := jsonscan.Unquote(raw)
		if !ok {
			return jsonrpc.ID{}, false
		}
		v = s
	case c == '-' || '0' <= c && c <= '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		v = f
	case c == 'n':
	default:
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// maxDepth is the nesting the go-sdk's decoder accepts.
const maxDepth = 1000

// tooDeep reports whether line nests arrays and objects deeper than max.
func tooDeep(line []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range line {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString:
			inString = b != '"'
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > max {
				return true
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return false
}

// check says why line is not a JSON-RPC message or batch; code 0 means it is.
func check(line []byte) (id any, code int64, msg string) {
	if !json.Valid(line) {
		return nil, jsonrpc.CodeParseError, "Parse error"
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return nil, jsonrpc.CodeInvalidRequest, "Invalid Request"
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return nil, jsonrpc.CodeInvalidRequest, "Invalid Request"
			}
		}
		return nil, 0, ""
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		var withID struct {
			ID any `json:"id"`
		}
		json.Unmarshal(line, &withID)
		switch withID.ID.(type) {
		case string, float64:
			id = withID.ID
		}
		return id, jsonrpc.CodeInvalidRequest, "Invalid Request"
	}
	return nil, 0, ""
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// answer writes an error response; id nil is written as null.
func (f *lineFilter) answer(id any, code int64, msg string) {
	b, err := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      any       `json:"id"`
		Error   wireError `json:"error"`
	}{"2.0", id, wireError{code, msg}})
	if err == nil {
		f.reply.Write(append(b, '\n'))
	}
}
