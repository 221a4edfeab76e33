package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/netpolicy"
)

// The HTTP layer under one session. The go-sdk transport sends every
// request through sessionTransport, which
//   - sets the configured headers (references expanded per request),
//   - lets a sender-constrained credential sign the request (DPoP),
//   - bounds every POST response body, and every resumption of one (a
//     hostile server cannot make us hold more than
//     Limits.MaxResponseBytes),
//   - records the HTTP status of POST responses in the request's
//     observation so errors can be attributed,
//   - meters every other request for the request log (see requestlog.go),
//   - answers the SDK's event streams (the standalone GET of the session
//     era, subscriptions/listen of 2026-07-28) with supervised ones (see
//     streams.go) that can neither block Connect nor end the session,
//   - paces the SDK's resumptions of broken POST streams, and
//   - removes SSE event IDs from 2026-07-28 responses, whose streams are
//     never resumed.

type sessionTransport struct {
	// streams are the supervised event streams running; the session's
	// close waits for them, so whoever is told a stream opened is told it
	// ended before the session is gone.
	streams streamGroup
	// exchanges are the requests the request log has not recorded yet (a
	// POST's stream is read to its end after the SDK took the answer); the
	// session's close waits for them too, so a call made just before a
	// process ends is in the log.
	exchanges streamGroup

	base    http.RoundTripper
	headers func() (http.Header, error)
	maxBody int64
	// lost is called when an event stream failed in a way that may mean
	// the session is gone; reopened when one opened again after a break,
	// so what the server announced meanwhile is fetched again.
	lost     func(error)
	reopened func()
	// streamed, when set, is told when an event stream opens and ends.
	streamed func(open bool)
	// authorize sets a current Authorization header on a request the
	// transport sends by itself (a reopened stream); nil sends the one the
	// SDK set first.
	authorize func(*http.Request) error
	// prepare, when set, sees every request last (DPoP proofs).
	prepare func(*http.Request) error
	// progress and log take the notifications a call's own response
	// stream carries, as they pass (see eventFilter); tools sees every
	// tools/list result, for what the SDK's Tool does not keep.
	progress func(json.RawMessage)
	log      func(json.RawMessage)
	tools    func(json.RawMessage)
	logf     func(format string, args ...any)
	server   string // the server ID, for the request log
	// answers notes the session's last POST answer (session.answers).
	answers *observation
	record  func(RequestLogEntry) // nil records nothing

	// Seams for tests; zero values mean the real clock and policy.
	now    func() time.Time
	sleep  func(time.Duration) <-chan time.Time
	policy reconnectPolicy

	resume resumeGate
}

func (t *sessionTransport) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

func (t *sessionTransport) after(d time.Duration) <-chan time.Time {
	if t.sleep != nil {
		return t.sleep(d)
	}
	return time.After(d)
}

// observation collects what the HTTP layer saw for one operation.
type observation struct {
	mu       sync.Mutex
	posts    int  // POST requests attempted
	status   int  // first non-2xx status of a POST, else the last status
	tooLarge bool // a response exceeded the body bound
	// foreign is the media type of a successful POST answer that is
	// neither JSON nor an event stream (a web page: the URL is not the
	// MCP endpoint), "" when there was none.
	foreign string
	// raw says the operation's tool call was sent by the raw path, which
	// ends a session it takes for broken before it returns.
	raw bool
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

// answered notes a POST's answer, foreign being its foreignAnswer.
func (o *observation) answered(foreign string) {
	if o == nil || foreign == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.foreign == "" {
		o.foreign = foreign
	}
}

// answeredLast notes a POST's answer as the session's last: what the
// session's end is told by, whichever request the SDK gave up on (see
// server.sessionEnded). foreign is the answer's foreignAnswer.
func (o *observation) answeredLast(status int, foreign string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.status, o.foreign, o.tooLarge = status, foreign, false
}

// overBound notes a response over the body bound.
func (o *observation) overBound() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tooLarge = true
}

// foreignAnswer is the media type of a POST's answer when it has an answer
// in its body (a 2xx status but 202 and 204) that is neither JSON nor an
// event stream, or "".
func foreignAnswer(status int, ct string) string {
	if status < 200 || status > 299 || status == http.StatusAccepted || status == http.StatusNoContent {
		return ""
	}
	switch ct { // as MCP servers write them, without parsing
	case "application/json", "text/event-stream":
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt == "application/json" || mt == "text/event-stream" {
		return ""
	}
	return mt
}

// sentRaw notes that the raw path sent the operation's call.
func (o *observation) sentRaw() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.raw = true
}

// viaRaw reports whether the raw path sent the operation's call.
func (o *observation) viaRaw() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.raw
}

// notJSONRPC notes a successful JSON answer that is not a JSON-RPC
// message: a REST API's, or a site's error in JSON.
func (o *observation) notJSONRPC() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.foreign == "" {
		o.foreign = foreignJSON
	}
}

// foreignJSON is the foreign type of JSON that is not JSON-RPC.
const foreignJSON = "application/json, not JSON-RPC"

// foreignType is the media type answered that was not MCP's, or "".
func (o *observation) foreignType() string {
	if o == nil {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.foreign
}

func (o *observation) snapshot() (status int, tooLarge bool) {
	if o == nil {
		return 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.status, o.tooLarge
}

// stateless reports whether a request speaks 2026-07-28 or later.
func stateless(req *http.Request) bool {
	return req.Header.Get("Mcp-Protocol-Version") >= version20260728
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
		if req.Header.Get("Last-Event-ID") == "" {
			return t.syntheticStream(req, t.standaloneStream(req)), nil
		}
		// The SDK resumes a POST stream that broke before its answer.
		if stateless(req) {
			return nil, errors.New("2026-07-28 response streams are not resumed")
		}
		if err := t.resume.admit(req.Context(), t); err != nil {
			return nil, err
		}
	}
	if req.Method == http.MethodPost && req.Header.Get("Mcp-Method") == "subscriptions/listen" {
		es, err := t.listenStream(req)
		if err != nil {
			return nil, err
		}
		return t.syntheticStream(req, es), nil
	}
	if err := t.prepareRequest(req); err != nil {
		return nil, err
	}
	obs := observationFrom(req.Context())
	if req.Method == http.MethodPost {
		obs.sending()
	}
	summary := newBodySummary(req)
	x := t.startExchange(req, summary)
	var keep *keepAlive
	if req.Method == http.MethodPost {
		req, keep = keepConnection(req)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		keep.release()
		x.finish(err)
		return nil, err
	}
	if x != nil {
		x.responded(resp)
	}
	if req.Method == http.MethodPost {
		obs.record(resp.StatusCode)
		ct := resp.Header.Get("Content-Type")
		foreign := foreignAnswer(resp.StatusCode, ct)
		obs.answered(foreign)
		t.answers.answeredLast(resp.StatusCode, foreign)
		body := &boundedBody{rc: resp.Body, left: t.maxBody, obs: obs, last: t.answers, x: x, keep: keep}
		body.answer.sse = strings.HasPrefix(strings.ToLower(ct), "text/event-stream")
		resp.Body = body
		method := postMethod(req, summary)
		listing := t.tools != nil && method == "tools/list"
		switch ct := strings.ToLower(resp.Header.Get("Content-Type")); {
		case strings.HasPrefix(ct, "text/event-stream"):
			resp.Body = filterEvents(resp.Body, stateless(req), t.tap(listing))
		case listing && strings.HasPrefix(ct, "application/json"):
			resp.Body = &bodyTee{rc: resp.Body, max: int(t.maxBody), done: func(b []byte) {
				var msg struct {
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal(b, &msg) == nil && msg.Result != nil {
					t.tools(msg.Result)
				}
			}}
		case (method == "initialize" || method == "server/discover") && strings.HasPrefix(ct, "application/json"):
			// JSON that is no JSON-RPC message answering the request that
			// opens a connection means the URL is not an MCP endpoint (a
			// REST API, a site's error in JSON), which the SDK would take
			// for a dead connection: the observation says so. A larger
			// answer than rpcShapeBytes is not looked at.
			resp.Body = &bodyTee{rc: resp.Body, max: rpcShapeBytes, done: func(b []byte) {
				if !isRPCMessage(b) {
					obs.notJSONRPC()
				}
			}}
		}
	} else if req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" {
		// A resumed response stream is the rest of a POST's: bound as
		// that POST's body is, so a resumption cannot carry more.
		resp.Body = &boundedBody{rc: resp.Body, left: t.maxBody, obs: obs, x: x}
	} else if x != nil {
		resp.Body = &boundedBody{rc: resp.Body, left: -1, x: x}
	}
	return resp, nil
}

// tap is what a POST response stream's events go through: progress and
// log notifications are taken and delivered at once; a tools/list result
// is looked at on its way to the SDK.
func (t *sessionTransport) tap(listing bool) func([]byte) bool {
	return func(data []byte) bool {
		if !listing && !bytes.Contains(data, []byte(`"notifications/`)) {
			return false
		}
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(data, &msg) != nil {
			return false
		}
		switch {
		case msg.Method == "notifications/progress" && t.progress != nil:
			t.progress(msg.Params)
			return true
		case msg.Method == "notifications/message" && t.log != nil:
			t.log(msg.Params)
			return true
		case listing && msg.Method == "" && msg.Result != nil:
			t.tools(msg.Result)
		}
		return false
	}
}

// postMethod is the JSON-RPC method of a POST: the Mcp-Method header of
// 2026-07-28, else read from the body.
func postMethod(req *http.Request, summary *bodySummaryOnce) string {
	if m := req.Header.Get("Mcp-Method"); m != "" {
		return m
	}
	method, _, _ := summary.get()
	return method
}

// rpcShapeBytes bounds the answer to a connection's first request that
// is held to being JSON-RPC.
const rpcShapeBytes = 64 << 10

// isRPCMessage reports whether b is a JSON-RPC message or batch: a JSON
// object with a jsonrpc member, or an array.
func isRPCMessage(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || !json.Valid(b) {
		return false
	}
	if b[0] == '[' {
		return true
	}
	if b[0] != '{' {
		return false
	}
	for k := range jsonscan.Members(b) {
		if string(k) == "jsonrpc" {
			return true
		}
	}
	return false
}

// bodyTee hands a response body to done once it has been read to its
// end, before the reader sees that end, if the whole body was within max
// bytes; done is not called for a larger one.
type bodyTee struct {
	rc   io.ReadCloser
	max  int
	buf  []byte
	over bool
	done func([]byte)
	once sync.Once
}

func (r *bodyTee) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if !r.over {
		if len(r.buf)+n > r.max {
			r.over, r.buf = true, nil
		} else {
			r.buf = append(r.buf, p[:n]...)
		}
	}
	if errors.Is(err, io.EOF) {
		r.once.Do(func() {
			if !r.over {
				r.done(r.buf)
			}
			r.buf = nil
		})
	}
	return n, err
}

func (r *bodyTee) Close() error { return r.rc.Close() }

func (t *sessionTransport) prepareRequest(req *http.Request) error {
	if t.prepare == nil {
		return nil
	}
	return t.prepare(req)
}

// reauthorize refreshes the credential of a request the transport sends
// again by itself.
func (t *sessionTransport) reauthorize(req *http.Request) error {
	if t.authorize != nil {
		if err := t.authorize(req); err != nil {
			return err
		}
	}
	return t.prepareRequest(req)
}

// standaloneStream is the session era's GET stream, resumed with
// Last-Event-ID when it breaks.
func (t *sessionTransport) standaloneStream(req *http.Request) *eventStream {
	return &eventStream{
		what:      "standalone stream",
		resumable: true,
		opened:    make(chan struct{}),
		open: func(ctx context.Context, lastID string) (*http.Response, error) {
			r := req.Clone(ctx)
			if lastID != "" {
				r.Header.Set("Last-Event-ID", lastID)
			}
			if err := t.reauthorize(r); err != nil {
				return nil, err
			}
			return t.base.RoundTrip(r)
		},
	}
}

// listenStream is 2026-07-28's subscriptions/listen: the first open sends
// the SDK's request, every reopen the same request under a new ID, with a
// current credential.
func (t *sessionTransport) listenStream(req *http.Request) (*eventStream, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxSummaryBytes))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	opens := 0
	return &eventStream{
		what: "subscriptions/listen",
		keep: notificationsOnly,
		open: func(ctx context.Context, _ string) (*http.Response, error) {
			b := body
			r := req.Clone(ctx)
			if opens > 0 {
				var err error
				if b, err = withRequestID(body, fmt.Sprintf("mcpgate-listen-%d", opens)); err != nil {
					return nil, err
				}
				if err := t.reauthorize(r); err != nil {
					return nil, err
				}
			} else if err := t.prepareRequest(r); err != nil {
				return nil, err
			}
			opens++
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
			return t.base.RoundTrip(r)
		},
	}, nil
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
	last *observation // a POST's: the session's answers
	x    *exchange

	// For a POST: the connection kept once the answer has come, and what
	// watches for it when x does not.
	keep   *keepAlive
	answer rpcErrorScanner
}

// keepAlive lets a POST's connection outlive its caller's context once
// the answer has arrived: the SDK's caller cancels as soon as it has the
// answer, and a connection cancelled before the end of its stream (which
// follows the answer by a moment) is closed instead of used again. Until
// the answer, cancelling cancels the request, as it must (2026-07-28
// servers see a cancelled call as its stream closing).
type keepAlive struct {
	answered atomic.Bool
	stop     func() bool
	cancel   context.CancelFunc
}

// keepConnection returns req on a context of its own, cancelled with
// req's until keep sees the answer.
func keepConnection(req *http.Request) (*http.Request, *keepAlive) {
	parent := req.Context()
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	k := &keepAlive{cancel: cancel}
	k.stop = context.AfterFunc(parent, func() {
		if !k.answered.Load() {
			cancel()
		}
	})
	if parent.Err() != nil {
		// AfterFunc of an ended context runs in a goroutine of its own,
		// perhaps after the request went out; it must not go out.
		cancel()
	}
	return req.WithContext(ctx), k
}

// release ends the request's own context; nil does nothing.
func (k *keepAlive) release() {
	if k != nil {
		k.stop()
		k.cancel()
	}
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		b.obs.overBound()
		b.last.overBound()
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
	if b.keep != nil && !b.keep.answered.Load() && b.sawAnswer(p[:n]) {
		b.keep.answered.Store(true)
	}
	return n, err
}

// sawAnswer reports whether the answer has come, p being the bytes just
// read: the request log's exchange watches for it already when there is
// one; otherwise the body's own scanner does.
func (b *boundedBody) sawAnswer(p []byte) bool {
	if b.x != nil {
		return b.x.answered()
	}
	b.answer.feed(p)
	return b.answer.responded || b.answer.found
}

func (b *boundedBody) Close() error {
	if b.obs == nil {
		err := b.rc.Close()
		b.x.finish(errBodyClosed)
		return err
	}
	// A POST's stream ends a moment after its answer, which the SDK stops
	// reading at: read the rest in the background, so the connection is
	// kept for the next request instead of thrown away with the unread
	// end of the stream.
	b.x.finish(errBodyClosed)
	go func() {
		drain(b.rc)
		b.keep.release()
	}()
	return nil
}

// Bounds on reading the rest of a response the SDK has done with.
const (
	drainLimit = 64 << 10
	drainWait  = 250 * time.Millisecond
)

// drain reads what is left of rc, at most drainLimit bytes for at most
// drainWait, then closes it.
func drain(rc io.ReadCloser) {
	stop := time.AfterFunc(drainWait, func() { rc.Close() })
	_, _ = io.CopyN(io.Discard, rc, drainLimit) // whatever it was, the body is closed next
	stop.Stop()
	rc.Close()
}

// defaultHTTPClient is used when Options.HTTPClient is nil: the network
// policy's transport (package netpolicy), with the proxies and CAs of the
// process's environment, as any Go program reads them (Options.Getenv
// resolves what the config names, nothing else). It has no overall
// timeout: streams are long-lived and each operation carries its own
// deadline.
func defaultHTTPClient() (*http.Client, error) {
	tr, err := netpolicy.New(nil)
	if err != nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "setting up the network: %w", err)
	}
	return &http.Client{Transport: tr}, nil
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
