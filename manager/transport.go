package manager

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The HTTP layer under one session. The go-sdk transport sends every
// request through sessionTransport, which
//   - sets the configured headers (references expanded per request),
//   - bounds every POST response body (a hostile server cannot make us
//     hold more than Limits.MaxResponseBytes),
//   - records the HTTP status of POST responses in the request's
//     observation so errors can be attributed, and
//   - meters every other request for the request log (see requestlog.go),
//     and
//   - replaces the standalone GET stream with a supervised one (see
//     superviseStream) that can neither block Connect nor end the session.

type sessionTransport struct {
	base       http.RoundTripper
	headers    func() (http.Header, error)
	maxBody    int64
	streamLost func(error) // called when the GET stream ends or fails
	logf       func(format string, args ...any)
	now        func() time.Time
	server     string                // the server ID, for the request log
	record     func(RequestLogEntry) // nil records nothing
}

// observation collects what the HTTP layer saw for one operation.
type observation struct {
	mu       sync.Mutex
	posts    int  // POST requests attempted
	status   int  // first non-2xx status of a POST, else the last status
	tooLarge bool // a response exceeded the body bound
	wwwAuth  string
}

type observationKey struct{}

func withObservation(ctx context.Context) (context.Context, *observation) {
	o := new(observation)
	return context.WithValue(ctx, observationKey{}, o), o
}

func observationFrom(ctx context.Context) *observation {
	o, _ := ctx.Value(observationKey{}).(*observation)
	return o
}

func (o *observation) record(status int) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.status < 300 || o.status == 0 {
		o.status = status
	}
}

func (o *observation) sending() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.posts++
}

// unsent reports whether no request of this operation left the process.
func (o *observation) unsent() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.posts == 0
}

func (o *observation) snapshot() (status int, tooLarge bool) {
	if o == nil {
		return 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.status, o.tooLarge
}

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	hdr, err := t.headers()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if req.Method == http.MethodGet && strings.Contains(req.Header.Get("Accept"), "text/event-stream") {
		return t.standaloneStream(req), nil
	}
	obs := observationFrom(req.Context())
	if req.Method == http.MethodPost {
		obs.sending()
	}
	x := t.startExchange(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		x.finish(err)
		return nil, err
	}
	if x != nil {
		x.responded(resp)
	}
	if req.Method == http.MethodPost {
		obs.record(resp.StatusCode)
		resp.Body = &boundedBody{rc: resp.Body, left: t.maxBody, obs: obs, x: x}
	} else if x != nil {
		resp.Body = &boundedBody{rc: resp.Body, left: -1, x: x}
	}
	return resp, nil
}

// errResponseTooLarge is returned when a response body exceeds its bound.
var errResponseTooLarge = errors.New("response body exceeds the size bound")

// boundedBody bounds a response body (unless left is negative) and meters
// it for the request log (when x is set): the exchange ends at the body's
// end, at a read error, or when it is closed, whichever comes first.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
	obs  *observation
	x    *exchange
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		if b.obs != nil {
			b.obs.mu.Lock()
			b.obs.tooLarge = true
			b.obs.mu.Unlock()
		}
		b.x.finish(errResponseTooLarge)
		return 0, errResponseTooLarge
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if b.x != nil {
		b.x.read(p[:n])
		if err != nil {
			b.x.finish(err)
		}
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.rc.Close()
	b.x.finish(errBodyClosed)
	return err
}

// Standalone stream supervision.
//
// The go-sdk opens the standalone GET stream synchronously inside Connect,
// on a context detached from the caller's deadline, so a server that never
// answers the GET would hold Connect forever; and a stream the server closes
// is retried a few times and then fails the whole session. Instead, the GET
// is answered at once with a synthetic event stream, and a goroutine feeds it
// from the real GET: it forwards only complete events, reconnects with
// backoff (resuming with Last-Event-ID), gives up quietly when the server
// does not offer a stream, and reports a lost stream so the manager can
// check the session with a ping instead of guessing.

const (
	maxStreamEventBytes  = 4 << 20
	maxStreamReconnects  = 5
	streamInitialBackoff = 500 * time.Millisecond
	streamMaxBackoff     = 30 * time.Second
)

func (t *sessionTransport) standaloneStream(req *http.Request) *http.Response {
	pr, pw := io.Pipe()
	go t.superviseStream(req, pw)
	return &http.Response{
		Status:     "200 OK",
		StatusCode: http.StatusOK,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       pr,
		Request:    req,
	}
}

func (t *sessionTransport) superviseStream(req *http.Request, pw *io.PipeWriter) {
	ctx := req.Context()
	var lastID string
	failures := 0
	backoff := streamInitialBackoff
	defer func() { pw.CloseWithError(context.Cause(ctx)) }()
	for ctx.Err() == nil {
		r := req.Clone(ctx)
		if lastID != "" {
			r.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := t.base.RoundTrip(r)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			t.streamLost(fmt.Errorf("standalone stream: %w", err))
		case resp.StatusCode == http.StatusNotFound && r.Header.Get("Mcp-Session-Id") != "":
			resp.Body.Close()
			t.streamLost(errStreamSessionGone)
			<-ctx.Done()
			return
		case resp.StatusCode < 200 || resp.StatusCode > 299 ||
			!strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream"):
			// The server offers no stream (405 is what the spec says; some
			// answer other codes). Server-initiated messages then arrive only
			// on POST responses; the session itself is fine.
			resp.Body.Close()
			<-ctx.Done()
			return
		default:
			progressed, id, retry, werr := forwardEvents(resp.Body, pw)
			resp.Body.Close()
			if werr != nil || ctx.Err() != nil {
				return // the SDK closed its end, or the session is closing
			}
			if id != "" {
				lastID = id
			}
			if retry > 0 {
				backoff = retry
			}
			if progressed {
				failures = 0
			}
			t.streamLost(errStreamEnded)
		}
		failures++
		if failures > maxStreamReconnects {
			t.logf("standalone stream given up after %d attempts", maxStreamReconnects)
			<-ctx.Done()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, streamMaxBackoff)
	}
}

var (
	errStreamEnded       = errors.New("standalone stream ended")
	errStreamSessionGone = errors.New("standalone stream: session not found (HTTP 404)")
)

// forwardEvents copies complete SSE events from body to w. It reports
// whether any event carried data, the last event ID seen, a server-sent
// retry delay, and an error only if writing to w failed. A partial event at
// the end of body is dropped, so the reader never sees half an event.
func forwardEvents(body io.Reader, w io.Writer) (progressed bool, lastID string, retry time.Duration, werr error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamEventBytes)
	var event bytes.Buffer
	hasData := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if event.Len() > 0 {
				event.WriteByte('\n')
				if _, err := w.Write(event.Bytes()); err != nil {
					return progressed, lastID, retry, err
				}
				progressed = progressed || hasData
			}
			event.Reset()
			hasData = false
			continue
		}
		if event.Len()+len(line) > maxStreamEventBytes {
			return progressed, lastID, retry, nil // hostile event: drop the stream
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			lastID = string(value)
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms > 0 {
				retry = time.Duration(ms) * time.Millisecond
			}
		case "data":
			hasData = true
		}
		event.Write(line)
		event.WriteByte('\n')
	}
	return progressed, lastID, retry, nil
}

// defaultHTTPClient is used when Options.HTTPClient is nil. It has no
// overall timeout: streams are long-lived and each operation carries its
// own deadline.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	return &http.Client{Transport: tr}
}

// sameOriginRedirects follows a redirect only to the same scheme and host:
// configured headers and tokens must not travel to another origin.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("refusing redirect to another origin (%s://%s)", req.URL.Scheme, req.URL.Host)
	}
	return nil
}
