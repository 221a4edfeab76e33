package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

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
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	w := &lineWriter{w: t.out}
	r := &lineFilter{src: bufio.NewReaderSize(t.in, 64<<10), reply: w, limit: MaxLineBytes}
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
		if len(line) > 0 {
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
// consumed and reported as errLineTooLong.
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
