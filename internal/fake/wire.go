package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
)

// maxPeek bounds how much of a POST body is read to learn its JSON-RPC
// method. It matches the go-sdk's default request limit
// (mcp.DefaultMaxRequestBodyBytes), so anything the SDK would accept is seen.
const maxPeek = 4 << 20

// envelope is the part of a JSON-RPC message the fakes look at.
type envelope struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// isCall reports whether the message expects a response (it has a non-null id).
func (e *envelope) isCall() bool {
	return len(e.ID) > 0 && !bytes.Equal(e.ID, []byte("null"))
}

// decodeMessages decodes a JSON-RPC message or batch. Batches are long gone
// from the protocol, but decoding them costs nothing and keeps counts honest.
func decodeMessages(body []byte) ([]envelope, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var batch []envelope
		err := json.Unmarshal(body, &batch)
		return batch, err
	}
	var one envelope
	if err := json.Unmarshal(body, &one); err != nil {
		return nil, err
	}
	return []envelope{one}, nil
}

// peekBody reads up to maxPeek bytes of r's body and puts them back, so the
// next handler reads exactly what the client sent (including anything past
// the peek, which keeps the SDK's own size limit in force).
func peekBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(r.Body, maxPeek))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	return head
}

// WriteResult answers a JSON-RPC request with result, as application/json.
// It is meant for custom [HostileOptions.CallTool] hooks.
func WriteResult(w http.ResponseWriter, id json.RawMessage, result any) {
	raw, ok := result.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(result); err != nil {
			WriteError(w, id, -32603, "fake: marshalling result: "+err.Error())
			return
		}
	}
	if raw == nil {
		raw = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{"2.0", id, raw})
}

// WriteError answers a JSON-RPC request with an error object, as
// application/json with status 200 (a JSON-RPC error is not an HTTP error).
func WriteError(w http.ResponseWriter, id json.RawMessage, code int, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	writeJSON(w, http.StatusOK, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "fake: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// writePattern writes n bytes of the fakes' bulk text: lines of 100 'x'
// followed by '\n' (so every 101st byte is a line break). When escaped is
// true the line breaks are written as the JSON escape `\n`, so the text can
// be streamed into a JSON string and still decode to exactly n bytes.
func writePattern(w io.Writer, n int, escaped bool) error {
	const line = 101
	var chunk bytes.Buffer
	for i := 0; i < n; i++ {
		if (i+1)%line == 0 {
			if escaped {
				chunk.WriteString(`\n`)
			} else {
				chunk.WriteByte('\n')
			}
		} else {
			chunk.WriteByte('x')
		}
		if chunk.Len() >= 32<<10 {
			if _, err := w.Write(chunk.Bytes()); err != nil {
				return err
			}
			chunk.Reset()
		}
	}
	_, err := w.Write(chunk.Bytes())
	return err
}

// pattern returns the n-byte text writePattern writes.
func pattern(n int) string {
	var b bytes.Buffer
	b.Grow(n)
	writePattern(&b, n, false)
	return b.String()
}

// newLoopbackServer starts h on addr, which must be a loopback address
// ("127.0.0.1:0" picks a free port). The fakes never listen anywhere else.
//
// The server is returned listening but not yet serving, with its base URL,
// so the caller can set every field its handler reads before calling Start:
// a request from another process may arrive at once.
func newLoopbackServer(addr string, h http.Handler) (*httptest.Server, string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("fake: listening on %s: %w", addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	// Fakes hang up on clients on purpose (Stop, DropConnection); the
	// server's complaints about that are noise in test output.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	return srv, "http://" + l.Addr().String(), nil
}
