package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw proxy is the benchmark's ceiling for any stdio proxy with one
// HTTP hop: this test binary, started with envRawProxy set to a Streamable
// HTTP endpoint, serves MCP on stdio and forwards each request line to
// that endpoint with its own JSON-RPC POST, with no SDK, logging or bounds
// in between. envRawProxyVersion is the MCP version it speaks upstream:
// 2026-07-28 (stateless, per-request _meta and the standard headers, as
// mcpgate's manager speaks to a server that offers it) or a session-era
// version (initialize, then Mcp-Session-Id on every request).
const (
	envRawProxy        = "MCPGATE_BENCH_RAW_PROXY"
	envRawProxyVersion = "MCPGATE_BENCH_RAW_PROXY_VERSION"
)

// serveRawProxy runs the raw proxy when the test binary was started as
// one; TestMain calls it first.
func serveRawProxy() {
	url := os.Getenv(envRawProxy)
	if url == "" {
		return
	}
	p, err := newRawProxy(context.Background(), url, os.Getenv(envRawProxyVersion), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "raw proxy:", err)
		os.Exit(1)
	}
	if err := p.run(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "raw proxy:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// rawProxy forwards a stdio host's requests to one Streamable HTTP server.
// It answers initialize and ping itself and forwards every other request
// (tools/call, tools/list, ...) as it came, with only its id replaced and,
// at 2026-07-28, the request's _meta added. What it leaves out, as the
// ceiling may: cancellation (a notifications/cancelled from the host is
// dropped), server-to-client requests during a call (answered upstream
// with an error, not relayed), x-mcp-header parameters (Mcp-Param-*, which
// need the tool's schema; the benchmark's echo has none), authorization
// and reconnection.
type rawProxy struct {
	url     string
	version string
	meta    []byte // 2026-07-28: the _meta member every request carries
	session string // session era: the Mcp-Session-Id
	hc      *http.Client
	ids     atomic.Int64 // upstream request ids

	mu  sync.Mutex // one line at a time on out
	out io.Writer
}

// rawMessage is the part of a JSON-RPC message the proxy reads.
type rawMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func newRawProxy(ctx context.Context, url, version string, out io.Writer) (*rawProxy, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // keep a connection per concurrent call
	p := &rawProxy{url: url, version: version, hc: &http.Client{Transport: tr}, out: out}
	if version >= "2026-07-28" {
		meta, err := json.Marshal(map[string]any{
			mcp.MetaKeyProtocolVersion:    version,
			mcp.MetaKeyClientInfo:         map[string]string{"name": "raw-proxy", "version": "1"},
			mcp.MetaKeyClientCapabilities: map[string]any{},
		})
		if err != nil {
			return nil, err
		}
		p.meta = meta
		res, err := p.exchange(ctx, "server/discover", p.withMeta(nil), nil)
		if err != nil {
			return nil, fmt.Errorf("server/discover: %w", err)
		}
		var d struct {
			Result struct {
				SupportedVersions []string `json:"supportedVersions"`
			} `json:"result"`
		}
		if err := json.Unmarshal(res, &d); err != nil || !strings.Contains(strings.Join(d.Result.SupportedVersions, " "), version) {
			return nil, fmt.Errorf("server/discover: %s does not speak %s", res, version)
		}
		return p, nil
	}
	params, err := json.Marshal(map[string]any{
		"protocolVersion": version,
		"clientInfo":      map[string]string{"name": "raw-proxy", "version": "1"},
		"capabilities":    map[string]any{},
	})
	if err != nil {
		return nil, err
	}
	res, err := p.exchange(ctx, "initialize", params, nil)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(res, &init); err != nil || init.Result.ProtocolVersion != version {
		return nil, fmt.Errorf("initialize: %s did not agree to %s", res, version)
	}
	if p.session == "" {
		return nil, errors.New("initialize: no Mcp-Session-Id")
	}
	if err := p.notify(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return p, nil
}

// run reads the host's lines until stdin ends, each request forwarded on
// its own goroutine so that concurrent calls overlap as they would
// through any proxy.
func (p *rawProxy) run(in io.Reader) error {
	r := bufio.NewReaderSize(in, 64<<10)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m rawMessage
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				p.write(nil, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`))
			} else {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p.handle(context.Background(), &m)
				}()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// handle answers one message from the host.
func (p *rawProxy) handle(ctx context.Context, m *rawMessage) {
	switch {
	case m.ID == nil: // a notification: initialized, cancelled, ...
	case m.Method == "initialize":
		var params struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(m.Params, &params)
		v := params.ProtocolVersion
		if v != "2025-11-25" && v != "2025-06-18" && v != "2025-03-26" {
			v = "2025-11-25"
		}
		p.reply(m.ID, `{"protocolVersion":"`+v+`","capabilities":{"tools":{}},"serverInfo":{"name":"raw-proxy","version":"1"}}`)
	case m.Method == "ping":
		p.reply(m.ID, `{}`)
	case m.Method != "":
		params := m.Params
		if p.meta != nil {
			var err error
			if params, err = p.addMeta(params); err != nil {
				p.fail(m.ID, err)
				return
			}
		}
		res, err := p.exchange(ctx, m.Method, params, m.Params)
		if err != nil {
			p.fail(m.ID, err)
			return
		}
		var r rawMessage
		if err := json.Unmarshal(res, &r); err != nil {
			p.fail(m.ID, err)
			return
		}
		if r.Error != nil {
			p.write(m.ID, append(append([]byte(`,"error":`), r.Error...), '}'))
		} else {
			p.write(m.ID, append(append([]byte(`,"result":`), r.Result...), '}'))
		}
	}
}

func (p *rawProxy) reply(id json.RawMessage, result string) {
	p.write(id, []byte(`,"result":`+result+`}`))
}

func (p *rawProxy) fail(id json.RawMessage, err error) {
	msg, _ := json.Marshal(err.Error())
	p.write(id, []byte(`,"error":{"code":-32603,"message":`+string(msg)+`}}`))
}

// write sends the host one line: the JSON-RPC header with id (none for a
// message relayed whole), then rest.
func (p *rawProxy) write(id json.RawMessage, rest []byte) {
	line := make([]byte, 0, 32+len(id)+len(rest))
	if id != nil {
		line = append(append(append(line, `{"jsonrpc":"2.0","id":`...), id...), rest...)
	} else {
		line = append(line, rest...)
	}
	line = append(line, '\n')
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Write(line)
}

// withMeta is params with the proxy's _meta member first; params is a JSON
// object without one, or nil.
func (p *rawProxy) withMeta(params []byte) []byte {
	params = bytes.TrimSpace(params)
	b := make([]byte, 0, len(params)+len(p.meta)+12)
	b = append(append(b, `{"_meta":`...), p.meta...)
	if len(params) < 2 || bytes.Equal(params, []byte("null")) {
		return append(b, '}')
	}
	if rest := bytes.TrimSpace(params[1:]); len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, params[1:]...)
}

// addMeta adds the 2026-07-28 _meta to a request's params: spliced in
// when the host sent none, merged (the host's keys win) when it did.
func (p *rawProxy) addMeta(params json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(params, []byte(`"_meta"`)) {
		return p.withMeta(params), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil {
		return nil, err
	}
	var ours, theirs map[string]json.RawMessage
	json.Unmarshal(p.meta, &ours)
	if err := json.Unmarshal(obj["_meta"], &theirs); err != nil {
		return nil, err
	}
	for k, v := range ours {
		if _, ok := theirs[k]; !ok {
			theirs[k] = v
		}
	}
	var err error
	if obj["_meta"], err = json.Marshal(theirs); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// header sets what every request to the server carries, as the go-sdk's
// client sets it: no version on initialize, which negotiates it.
func (p *rawProxy) header(h http.Header, method string) {
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	if method != "initialize" {
		h["Mcp-Protocol-Version"] = []string{p.version}
	}
	if p.session != "" {
		h["Mcp-Session-Id"] = []string{p.session}
	}
}

// exchange POSTs one request and returns the server's response to it,
// relaying to the host the notifications that come before it. hostParams
// are the params as the host sent them, read at 2026-07-28 for the name
// that Mcp-Name carries.
func (p *rawProxy) exchange(ctx context.Context, method string, params, hostParams []byte) ([]byte, error) {
	id := strconv.AppendInt(nil, p.ids.Add(1), 10)
	body := make([]byte, 0, 64+len(method)+len(params))
	body = append(append(append(body, `{"jsonrpc":"2.0","id":`...), id...), `,"method":`...)
	body = strconv.AppendQuote(body, method)
	if params != nil {
		body = append(append(body, `,"params":`...), params...)
	}
	body = append(body, '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	p.header(req.Header, method)
	if p.meta != nil {
		req.Header["Mcp-Method"] = []string{method}
		if method == "tools/call" || method == "prompts/get" || method == "resources/read" {
			var named struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			}
			json.Unmarshal(hostParams, &named)
			name := named.Name
			if method == "resources/read" {
				name = named.URI
			}
			req.Header["Mcp-Name"] = []string{headerValue(name)}
		}
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	// Read to the end, always: a body closed early loses the connection.
	defer func() {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", method, resp.StatusCode)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && method == "initialize" {
		p.session = s
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		return io.ReadAll(resp.Body)
	case "text/event-stream":
		return p.readStream(ctx, resp.Body, id)
	}
	return nil, fmt.Errorf("%s: content type %q", method, ct)
}

var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// readStream reads an SSE response until the message answering id: a
// notification before it goes to the host as it came; a request from the
// server is refused upstream.
func (p *rawProxy) readStream(ctx context.Context, body io.Reader, id []byte) ([]byte, error) {
	r := sseReaders.Get().(*bufio.Reader)
	r.Reset(body)
	defer func() {
		r.Reset(nil)
		sseReaders.Put(r)
	}()
	var data []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && len(line) == 0 {
			if err == io.EOF {
				return nil, errors.New("the stream ended before the answer")
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			continue
		}
		if len(line) > 0 || len(data) == 0 {
			continue // event:, id:, retry:, a comment, or an empty event
		}
		var m rawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		switch {
		case m.Method == "" && bytes.Equal(m.ID, id):
			return data, nil
		case m.Method != "" && m.ID == nil:
			p.write(nil, data)
		case m.Method != "":
			refusal := []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"the raw proxy relays no server requests"}}`)
			if err := p.notify(ctx, refusal); err != nil {
				return nil, err
			}
		}
		data = data[:0]
	}
}

// notify POSTs a message that has no answer (a notification or a
// response): the server accepts it with 202.
func (p *rawProxy) notify(ctx context.Context, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	p.header(req.Header, "")
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// headerValue is s as an Mcp-Name header carries it: base64 in the
// =?base64?...?= wrapper when it is not plain visible ASCII (SEP-2243).
func headerValue(s string) string {
	plain := s == "" || (s[0] != ' ' && s[0] != '\t' && s[len(s)-1] != ' ' && s[len(s)-1] != '\t')
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain && !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")) {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// startRawProxy starts the raw proxy to url as a child process and
// connects a go-sdk host client to it over stdio.
func startRawProxy(t testing.TB, ctx context.Context, url, version string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), envRawProxy+"="+url, envRawProxyVersion+"="+version)
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw-proxy-host", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd
}

// The ceiling is worth measuring only if the raw proxy is a correct
// proxy: each concurrent call gets its own answer, a tool's failure and a
// protocol error come back as such, over both generations and both
// response types, on one upstream connection (no reconnect per call).
func TestRawProxyForwardsCalls(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, jsonResponse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", version, jsonResponse), func(t *testing.T) {
				t.Parallel()
				srv := fake.Start(t, &fake.Options{JSONResponse: jsonResponse})
				ctx := t.Context()
				cs, _ := startRawProxy(t, ctx, srv.URL, version)

				tools, err := cs.ListTools(ctx, nil)
				if err != nil || !slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "echo" }) {
					t.Fatalf("tools/list: %v %+v", err, tools)
				}
				const n = 16
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						want := fmt.Sprint("ping ", i)
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
						if err != nil || res.IsError || len(res.Content) != 1 {
							t.Errorf("echo %d: %v %+v", i, err, res)
							return
						}
						if got := res.Content[0].(*mcp.TextContent).Text; got != want {
							t.Errorf("echo %d answered %q", i, got)
						}
					})
				}
				wg.Wait()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"})
				if err != nil || !res.IsError {
					t.Errorf("fail: %v %+v, want a result with isError", err, res)
				}
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
					t.Error("an unknown tool's call succeeded")
				}
				if got := srv.Requests("tools/call"); got != n+2 {
					t.Errorf("the server saw %d calls, want %d", got, n+2)
				}
				if got := srv.Connects(); got != 1 {
					t.Errorf("the proxy connected %d times, want once", got)
				}
			})
		}
	}
}
