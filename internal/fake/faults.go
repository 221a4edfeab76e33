package fake

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what a [FaultProxy] does to one request.
type Fault string

// The faults a [FaultProxy] injects. "Forwarded" says whether the backend
// sees the request.
const (
	// FaultNone forwards the request and its answer untouched.
	FaultNone Fault = "none"
	// FaultLatency waits up to [FaultOptions.Latency] first, then forwards.
	FaultLatency Fault = "latency"
	// FaultStall holds the request without forwarding or answering it
	// until the client gives up (or the proxy closes): a black hole.
	FaultStall Fault = "stall"
	// FaultResetBefore resets the connection (TCP RST) before forwarding.
	FaultResetBefore Fault = "reset-before"
	// FaultResetAfter forwards, reads the backend's answer (up to the first
	// JSON-RPC response of an event stream), then resets the connection
	// without answering: the backend did the work, the client hears nothing.
	FaultResetAfter Fault = "reset-after"
	// Fault503 answers 503 Service Unavailable without forwarding.
	Fault503 Fault = "503"
	// Fault429 answers 429 Too Many Requests (Retry-After: 1) without
	// forwarding.
	Fault429 Fault = "429"
	// FaultTruncate forwards and passes the answer on until the middle of
	// its first event (of a JSON body, the middle of the body), then closes
	// the connection.
	FaultTruncate Fault = "truncate"
	// FaultDuplicate forwards and sends every event of an event stream
	// twice. A JSON answer is passed on untouched (and counted as none).
	FaultDuplicate Fault = "duplicate"
	// FaultSlowloris forwards and trickles the answer a few bytes at a time
	// ([FaultOptions.TrickleBytes] every [FaultOptions.TrickleEvery]).
	FaultSlowloris Fault = "slowloris"
	// FaultOversized forwards and puts [FaultOptions.OversizedBytes] of
	// padding before the answer (SSE comment lines, or JSON whitespace): a
	// valid answer too big for a client that bounds what it reads.
	FaultOversized Fault = "oversized"
)

// Faults lists every fault but [FaultNone], the default of
// [FaultOptions.Kinds].
var Faults = []Fault{FaultLatency, FaultStall, FaultResetBefore, FaultResetAfter, Fault503, Fault429,
	FaultTruncate, FaultDuplicate, FaultSlowloris, FaultOversized}

// FaultRequest is what a [FaultProxy] knows about a request when it
// chooses its fault.
type FaultRequest struct {
	// Seq numbers the proxy's requests from 1, in arrival order.
	Seq int
	// HTTPMethod is GET, POST or DELETE.
	HTTPMethod string
	// Method is the JSON-RPC method of a POST's first message ("tools/call"),
	// empty for other requests and for responses the client sends.
	Method string
	// Tool and Arguments are a tools/call's name and arguments.
	Tool      string
	Arguments json.RawMessage
}

// FaultOptions configure a [FaultProxy]. A nil *FaultOptions means
// defaults.
type FaultOptions struct {
	// Plan chooses each request's fault; it is called from the proxy's
	// handlers, concurrently, and must be safe for that. Nil means at
	// random: a fraction Rate of requests get one of Kinds, drawn from a
	// generator seeded with Seed (the sequence of draws is the seed's; which
	// request gets which draw depends on arrival order).
	Plan func(*FaultRequest) Fault
	// Seed seeds the random plan.
	Seed uint64
	// Rate is the fraction of requests the random plan faults; zero means
	// 0.3.
	Rate float64
	// Kinds are the faults the random plan draws from, equally often; nil
	// means [Faults].
	Kinds []Fault
	// Latency bounds the delay of FaultLatency: drawn uniformly up to it by
	// the random plan, exactly it under a Plan. Zero means 20 ms.
	Latency time.Duration
	// TrickleBytes and TrickleEvery pace FaultSlowloris; zero means 64
	// bytes every millisecond.
	TrickleBytes int
	TrickleEvery time.Duration
	// OversizedBytes is the padding of FaultOversized; zero means 40 MiB,
	// above the manager's default bound on a response.
	OversizedBytes int
}

// FaultRecord is what a [FaultProxy] did to one request.
type FaultRecord struct {
	FaultRequest
	// Fault is the fault injected: the one planned, or FaultNone when it
	// could not apply (a duplicate of a JSON answer).
	Fault Fault
	// Sent says the proxy began sending the request to the backend, which
	// may have seen it even when it never answered; a request not Sent was
	// certainly never seen. Forwarded says the backend answered, with
	// Status.
	Sent, Forwarded bool
	Status          int
	// Ended says the proxy is done with the request.
	Ended bool
}

// FaultProxy is a reverse proxy on 127.0.0.1 that injects faults into the
// requests it passes to a backend MCP server (any generation: it reads
// only HTTP and SSE framing), and records what it did to each so a test
// can judge the client's reports against it.
//
// All methods are safe for concurrent use.
type FaultProxy struct {
	// URL is the proxied endpoint: the backend's URL with the proxy's host.
	URL string

	opts    FaultOptions
	backend *url.URL
	tr      *http.Transport
	http    *httptest.Server

	closing   chan struct{} // closed by Close, ending stalls
	closeOnce sync.Once
	mu        sync.Mutex
	rng       *rand.Rand
	records   []FaultRecord // by Seq-1
	calm      bool
}

// StartFaultProxy starts a [FaultProxy] in front of backend (an MCP
// endpoint URL on loopback) and closes it when the test ends.
func StartFaultProxy(t testing.TB, backend string, opts *FaultOptions) *FaultProxy {
	t.Helper()
	p, err := NewFaultProxy(backend, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// NewFaultProxy starts a [FaultProxy] outside tests; the caller must call
// [FaultProxy.Close].
func NewFaultProxy(backend string, opts *FaultOptions) (*FaultProxy, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{backend: u, closing: make(chan struct{}),
		// No keep-alive reuse problems to hide: each forwarded request may
		// be cut, and a pool of its own is closed with the proxy.
		tr: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	if opts != nil {
		p.opts = *opts
		p.opts.Kinds = append([]Fault(nil), opts.Kinds...)
	}
	if p.opts.Rate == 0 {
		p.opts.Rate = 0.3
	}
	if len(p.opts.Kinds) == 0 {
		p.opts.Kinds = Faults
	}
	if p.opts.Latency <= 0 {
		p.opts.Latency = 20 * time.Millisecond
	}
	if p.opts.TrickleBytes <= 0 {
		p.opts.TrickleBytes = 64
	}
	if p.opts.TrickleEvery <= 0 {
		p.opts.TrickleEvery = time.Millisecond
	}
	if p.opts.OversizedBytes <= 0 {
		p.opts.OversizedBytes = 40 << 20
	}
	p.rng = rand.New(rand.NewPCG(p.opts.Seed, 0x6d637067617465))
	hs, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(p.serveHTTP))
	if err != nil {
		return nil, err
	}
	p.http = hs
	p.URL = base + u.RequestURI()
	hs.Start()
	return p, nil
}

// Close stops the proxy, cutting every connection through it, and waits
// for its handlers to return.
func (p *FaultProxy) Close() {
	p.closeOnce.Do(func() { close(p.closing) })
	p.http.CloseClientConnections()
	p.http.Close()
	p.tr.CloseIdleConnections()
}

// Calm stops injecting faults: requests from now on pass untouched.
// Requests already held (FaultStall) stay held.
func (p *FaultProxy) Calm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calm = true
}

// Records returns what the proxy did to each request so far, in the order
// they arrived. A request is recorded as it arrives, and Forwarded and
// Status are set once the backend answered it.
func (p *FaultProxy) Records() []FaultRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]FaultRecord(nil), p.records...)
}

// Injected counts the faults injected so far, by kind (FaultNone counts
// the requests passed on untouched).
func (p *FaultProxy) Injected() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Fault]int)
	for _, r := range p.records {
		out[r.Fault]++
	}
	return out
}

// plan numbers the request, chooses its fault and records both.
func (p *FaultProxy) plan(req FaultRequest) (int, Fault, time.Duration) {
	p.mu.Lock()
	req.Seq = len(p.records) + 1
	p.records = append(p.records, FaultRecord{FaultRequest: req})
	var f Fault
	var delay time.Duration
	switch {
	case p.calm:
		f = FaultNone
	case p.opts.Plan == nil:
		f = FaultNone
		if p.rng.Float64() < p.opts.Rate {
			f = p.opts.Kinds[p.rng.IntN(len(p.opts.Kinds))]
		}
		delay = time.Duration(p.rng.Int64N(int64(p.opts.Latency) + 1))
	}
	calm := p.calm
	p.mu.Unlock()
	if p.opts.Plan != nil && !calm {
		f = p.opts.Plan(&req)
		if f == "" {
			f = FaultNone
		}
		delay = p.opts.Latency
	}
	p.update(req.Seq, func(r *FaultRecord) { r.Fault = f })
	return req.Seq, f, delay
}

// update changes the record of request seq.
func (p *FaultProxy) update(seq int, f func(*FaultRecord)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.records[seq-1])
}

func (p *FaultProxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	seq, fault, delay := p.plan(describe(r.Method, body))
	defer p.update(seq, func(r *FaultRecord) { r.Ended = true })

	switch fault {
	case FaultLatency:
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	case FaultStall:
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
		return
	case FaultResetBefore:
		reset(w)
		return
	case Fault503:
		http.Error(w, "fault proxy: service unavailable", http.StatusServiceUnavailable)
		return
	case Fault429:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "fault proxy: too many requests", http.StatusTooManyRequests)
		return
	}

	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.backend.Scheme+"://"+p.backend.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Connection")
	p.update(seq, func(r *FaultRecord) { r.Sent = true })
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		// The backend may or may not have seen it; the client is told
		// the way a gateway tells it.
		p.update(seq, func(r *FaultRecord) { r.Fault = FaultNone })
		http.Error(w, "fault proxy: backend unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	p.update(seq, func(r *FaultRecord) { r.Forwarded, r.Status = true, resp.StatusCode })
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")

	if fault == FaultResetAfter {
		drainToResponse(resp.Body, sse)
		reset(w)
		return
	}
	if fault == FaultDuplicate && !sse {
		fault = FaultNone
		p.update(seq, func(r *FaultRecord) { r.Fault = fault })
	}
	for k, v := range resp.Header {
		if k != "Content-Length" || fault == FaultNone || fault == FaultLatency {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	fw := flushWriter{w: w, rc: http.NewResponseController(w)}

	switch fault {
	case FaultTruncate:
		truncate(fw, resp.Body, sse)
		reset(w)
	case FaultDuplicate:
		events := bufio.NewReader(resp.Body)
		for {
			ev, err := readEvent(events)
			if len(ev) > 0 {
				if _, werr := fw.Write(append(ev, ev...)); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	case FaultSlowloris:
		trickle(r.Context(), fw, resp.Body, p.opts.TrickleBytes, p.opts.TrickleEvery)
	case FaultOversized:
		if pad(fw, p.opts.OversizedBytes, sse) == nil {
			copyFlushing(fw, resp.Body)
		}
	default:
		copyFlushing(fw, resp.Body)
	}
}

// describe reads what the proxy needs of a request to plan and record it.
func describe(method string, body []byte) FaultRequest {
	req := FaultRequest{HTTPMethod: method}
	msgs, _ := decodeMessages(body)
	if len(msgs) == 0 {
		return req
	}
	req.Method = msgs[0].Method
	if req.Method == "tools/call" {
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(msgs[0].Params, &p) == nil {
			req.Tool, req.Arguments = p.Name, p.Arguments
		}
	}
	return req
}

// reset cuts the client's connection with a TCP RST, without a response
// (or in the middle of one already begun).
func reset(w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// drainToResponse reads an answer until it holds a JSON-RPC response: the
// whole of a JSON body, an event stream up to the first event carrying a
// result or an error (or its end).
func drainToResponse(body io.Reader, sse bool) {
	if !sse {
		io.Copy(io.Discard, body)
		return
	}
	events := bufio.NewReader(body)
	for {
		ev, err := readEvent(events)
		if isResponseEvent(ev) || err != nil {
			return
		}
	}
}

// isResponseEvent reports whether an SSE event's data is a JSON-RPC
// response (it has an id and a result or an error).
func isResponseEvent(ev []byte) bool {
	for _, line := range strings.Split(string(ev), "\n") {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(data), &m) == nil && len(m.ID) > 0 && (m.Result != nil || m.Error != nil) {
			return true
		}
	}
	return false
}

// truncate passes an answer on up to the middle of its first event (or of
// a JSON body).
func truncate(w io.Writer, body io.Reader, sse bool) {
	var cut []byte
	if sse {
		cut, _ = readEvent(bufio.NewReader(body))
	} else {
		cut, _ = io.ReadAll(io.LimitReader(body, 64<<20))
	}
	w.Write(cut[:len(cut)/2])
}

// readEvent reads one SSE event with the blank line that ends it. At the
// end of the stream it returns what was left (possibly nothing) and the
// error.
func readEvent(r *bufio.Reader) ([]byte, error) {
	var ev []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			ev = append(ev, line...)
			continue
		}
		ev = append(ev, line...)
		if err != nil {
			return ev, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 && len(ev) > len(line) {
			return ev, nil
		}
	}
}

// trickle passes body on n bytes at a time, waiting every between writes.
func trickle(ctx context.Context, w io.Writer, body io.Reader, n int, every time.Duration) {
	buf := make([]byte, n)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		k, err := body.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pad writes about n bytes that change nothing in the answer: SSE comment
// lines before the first event, or whitespace before a JSON value.
func pad(w io.Writer, n int, sse bool) error {
	line := bytes.Repeat([]byte{' '}, 1024)
	if sse {
		line[0], line[len(line)-1] = ':', '\n'
	}
	for ; n > 0; n -= len(line) {
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

func copyFlushing(w io.Writer, body io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// flushWriter flushes after every write, so events reach the client as
// the backend sends them.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}
