package manager

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event streams are the long-lived streams on which a server sends what it
// was not asked for: the standalone GET stream in the session era
// (2025-x), the response stream of subscriptions/listen in 2026-07-28. The
// go-sdk opens either once and would give up on it (or on the whole
// session) when it ends; instead the transport answers the SDK's request at
// once with a stream of its own, and a supervisor feeds it from the real
// one, reopening it under one reconnect policy whenever the server ends it.
//
// The policy honours the server's SSE retry field, but never sooner than a
// floor, backs off while streams keep ending at once, and caps reconnects
// per minute: a server that answers with `retry: 1` and hangs up can cost
// a few requests a minute, not thousands a second.

// reconnectPolicy bounds how often one stream is reopened.
type reconnectPolicy struct {
	floor     time.Duration // never sooner than this, whatever retry says
	initial   time.Duration // the delay when the server names no retry
	max       time.Duration // the longest delay backoff reaches
	stable    time.Duration // a stream that stayed up this long resets the backoff
	perMinute int           // reopens in any minute
	failures  int           // failed opens in a row before giving up
}

var defaultStreamPolicy = reconnectPolicy{
	floor:     250 * time.Millisecond,
	initial:   time.Second,
	max:       30 * time.Second,
	stable:    10 * time.Second,
	perMinute: 20,
	failures:  5,
}

// backoff decides the delays of one stream's reopens.
type backoff struct {
	p      reconnectPolicy
	quick  int         // streams in a row that ended before p.stable
	recent []time.Time // reopens scheduled within the last minute, in order
}

// next returns how long to wait before reopening a stream that lasted
// lasted (zero if it never opened), given the server's retry (zero if it
// named none).
func (b *backoff) next(now time.Time, retry, lasted time.Duration) time.Duration {
	base := b.p.initial
	if retry > 0 {
		base = max(retry, b.p.floor)
	}
	if lasted >= b.p.stable {
		b.quick = 0
	} else {
		b.quick++
	}
	d := base
	for i := 1; i < b.quick && d < b.p.max; i++ {
		d *= 2
	}
	d = min(d, max(b.p.max, base))
	at := now.Add(d)
	cut := now.Add(-time.Minute)
	b.recent = slices.DeleteFunc(b.recent, func(t time.Time) bool { return t.Before(cut) })
	if n := len(b.recent); n >= b.p.perMinute {
		if earliest := b.recent[n-b.p.perMinute].Add(time.Minute); at.Before(earliest) {
			at = earliest
		}
	}
	b.recent = append(b.recent, at)
	return at.Sub(now)
}

// eventStream is one supervised stream.
type eventStream struct {
	what string
	// open sends the request for the stream; lastID is the last event ID
	// seen, for resumption (always "" for subscriptions/listen).
	open func(ctx context.Context, lastID string) (*http.Response, error)
	// keep chooses which events reach the SDK; nil keeps all.
	keep func(data []byte) bool
	// resumable says whether the stream may be resumed with Last-Event-ID.
	resumable bool
	// opened, when set, is closed once the first open has an answer (or
	// failed): the stream's synthetic response waits for it.
	opened chan struct{}
}

// firstOpenWait bounds how long a standalone stream's synthetic response
// waits for the real stream to open.
const firstOpenWait = time.Second

// syntheticStream answers the SDK's request for a stream with a response
// that a supervisor feeds until ctx ends.
func (t *sessionTransport) syntheticStream(req *http.Request, es *eventStream) *http.Response {
	pr, pw := io.Pipe()
	if !t.streams.add() {
		pw.CloseWithError(errSessionClosing)
	} else {
		go func() {
			defer t.streams.done()
			t.supervise(req.Context(), es, pw)
		}()
		if es.opened != nil {
			// The SDK sends its first request once this answers. A
			// session-era server sends what a call asks of the client
			// (an elicitation, a sampling request) on this stream when it
			// is open, and may drop it if it is not open yet: answer when
			// the real stream has, so the first call cannot outrun it.
			select {
			case <-es.opened:
			case <-time.After(firstOpenWait):
			case <-req.Context().Done():
			}
		}
	}
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

// streamGroup counts running streams; once closed, it starts none.
type streamGroup struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

var errSessionClosing = errors.New("the session is closing")

func (g *streamGroup) add() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *streamGroup) done() { g.wg.Done() }

// closeAndWait starts no more streams and waits for those running to
// end, at most limit.
func (g *streamGroup) closeAndWait(limit time.Duration) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	ended := make(chan struct{})
	go func() { g.wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(limit):
	}
}

// supervise feeds pw from the real stream, reopening it per the policy.
// A server that offers no stream (405, another status, not SSE) ends
// supervision quietly: its messages then arrive on POST responses only.
// One that is overloaded (429, 5xx) is asked again later.
func (t *sessionTransport) supervise(ctx context.Context, es *eventStream, pw *io.PipeWriter) {
	defer func() { pw.CloseWithError(context.Cause(ctx)) }()
	policy := t.policy
	if policy.floor == 0 {
		policy = defaultStreamPolicy
	}
	b := backoff{p: policy}
	var lastID string
	failures := 0
	broken := false // a stream was open and ended: the next open is a reopen
	opened := es.opened
	for ctx.Err() == nil {
		start := t.clock()
		resp, err := es.open(ctx, lastID)
		if opened != nil {
			close(opened)
			opened = nil
		}
		var retry, lasted time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			failures++
			t.streamLost(fmt.Errorf("%s: %w", es.what, err))
		case resp.StatusCode == http.StatusNotFound && resp.Request != nil && resp.Request.Header.Get("Mcp-Session-Id") != "":
			resp.Body.Close()
			t.streamLost(errStreamSessionGone)
			<-ctx.Done()
			return
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			// The credential stopped working; the session's next request
			// learns why (and refreshes or asks for a sign-in).
			resp.Body.Close()
			failures++
			t.streamLost(fmt.Errorf("%s: HTTP %d", es.what, resp.StatusCode))
		case overloaded(resp.StatusCode):
			// Busy or briefly down, not without a stream: open it again
			// later, no sooner than the server asked.
			resp.Body.Close()
			failures++
			retry = retryAfter(resp.Header.Get("Retry-After"), policy.max)
			// What the server announces until then is lost.
			broken = true
		case resp.StatusCode < 200 || resp.StatusCode > 299 ||
			!strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream"):
			resp.Body.Close()
			<-ctx.Done()
			return
		default:
			failures = 0
			if broken && (lastID == "" || !es.resumable) && t.reopened != nil {
				// Whatever the server announced while the stream was down
				// is lost: catalogs must be listed again.
				t.reopened()
			}
			t.streamOpen(true)
			id, r, werr := forwardEvents(resp.Body, pw, es.keep)
			resp.Body.Close()
			t.streamOpen(false)
			if werr != nil || ctx.Err() != nil {
				return // the SDK closed its end, or the session is closing
			}
			if es.resumable && id != "" {
				lastID = id
			}
			retry, lasted = r, t.clock().Sub(start)
			broken = true
		}
		if failures > policy.failures {
			t.logf("%s given up after %d failed attempts", es.what, policy.failures)
			<-ctx.Done()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.after(b.next(t.clock(), retry, lasted)):
		}
	}
}

// overloaded reports whether an HTTP status says the server is busy or
// briefly unavailable: the statuses the go-sdk also treats as transient.
func overloaded(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryAfter reads a Retry-After header's delay in seconds (RFC 9110
// §10.2.3; the HTTP-date form is treated as absent), at most limit; zero
// when there is none.
func retryAfter(v string, limit time.Duration) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || secs <= 0 {
		return 0
	}
	return min(time.Duration(min(secs, 86400))*time.Second, limit)
}

func (t *sessionTransport) streamOpen(open bool) {
	if t.streamed != nil {
		t.streamed(open)
	}
}

func (t *sessionTransport) streamLost(err error) {
	if t.lost != nil {
		t.lost(err)
	}
}

var errStreamSessionGone = errors.New("standalone stream: session not found (HTTP 404)")

// maxStreamEventBytes bounds one event of a supervised stream.
const maxStreamEventBytes = 4 << 20

// forwardEvents copies complete SSE events from body to w, those keep
// accepts. It returns the last event ID seen, a server-sent retry delay,
// and an error only if writing to w failed. A partial event at the end of
// body is dropped, so the reader never sees half an event; so is an event
// over the size bound, which ends the stream.
func forwardEvents(body io.Reader, w io.Writer, keep func([]byte) bool) (lastID string, retry time.Duration, werr error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamEventBytes)
	var event, data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if event.Len() > 0 && (keep == nil || data.Len() == 0 || keep(data.Bytes())) {
				event.WriteByte('\n')
				if _, err := w.Write(event.Bytes()); err != nil {
					return lastID, retry, err
				}
			}
			event.Reset()
			data.Reset()
			continue
		}
		if event.Len()+len(line) > maxStreamEventBytes {
			return lastID, retry, nil
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
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		}
		event.Write(line)
		event.WriteByte('\n')
	}
	return lastID, retry, nil
}

// notificationsOnly keeps the events of a subscriptions/listen stream the
// SDK expects there: notifications. The answers to the listen requests the
// supervisor re-sent carry IDs the SDK never issued.
func notificationsOnly(data []byte) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(data, &msg) != nil {
		return false
	}
	return msg.Method != "" && len(msg.ID) == 0
}

// withRequestID returns a JSON-RPC request body with its id replaced.
func withRequestID(body []byte, id string) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(id)
	msg["id"] = raw
	return json.Marshal(msg)
}

// resumeGate limits how often the SDK may resume broken POST streams of one
// session (a GET with Last-Event-ID): at most one per floor, and a bounded
// number per minute. A refused resumption fails the stream, and so the
// call, as in doubt: it is never re-sent.
type resumeGate struct {
	mu     sync.Mutex
	last   time.Time
	recent []time.Time
}

var errResumeLimit = errors.New("the server keeps breaking response streams; stopped resuming them")

func (g *resumeGate) admit(ctx context.Context, t *sessionTransport) error {
	policy := t.policy
	if policy.floor == 0 {
		policy = defaultStreamPolicy
	}
	g.mu.Lock()
	now := t.clock()
	cut := now.Add(-time.Minute)
	g.recent = slices.DeleteFunc(g.recent, func(t time.Time) bool { return t.Before(cut) })
	if len(g.recent) >= 3*policy.perMinute {
		g.mu.Unlock()
		return errResumeLimit
	}
	at := now
	if next := g.last.Add(policy.floor); next.After(at) {
		at = next
	}
	g.last = at
	g.recent = append(g.recent, at)
	g.mu.Unlock()
	if wait := at.Sub(now); wait > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.after(wait):
		}
	}
	return nil
}

// eventFilter passes an SSE response body through event by event. Each
// complete event's data goes to tap first, which may take the event (it is
// then not passed on): the manager takes the notifications of a call's own
// stream (progress, log messages) as they pass, so they reach whoever
// waits for them before the answer that follows them does; the go-sdk
// would deliver them on another goroutine, after the answer. With
// stripIDs, id lines are removed: a 2026-07-28 stream is never resumed (a
// broken one loses its request), and without IDs the SDK reports a broken
// stream at once instead of trying a GET the server does not serve. A body
// that ends inside an event reads as io.ErrUnexpectedEOF: only whole
// events are delivered as such.
type eventFilter struct {
	r        *bufio.Reader
	rc       io.Closer
	stripIDs bool
	tap      func(data []byte) (taken bool)

	event   []byte // the lines of the event being read
	data    []byte // its data, joined
	passing bool   // the event outgrew the tap's interest: lines go straight out
	// inLine is set while a line longer than the reader's buffer comes in
	// pieces: the next piece continues it (a piece that is only its line
	// break is not a blank line); dropLine, while that line is an id line
	// being removed.
	inLine, dropLine bool
	out              []byte
	err              error
}

// maxTappedEvent bounds the events the tap looks at; larger ones (a big
// tool result) pass through unexamined, line by line.
const maxTappedEvent = 64 << 10

func filterEvents(rc io.ReadCloser, stripIDs bool, tap func([]byte) bool) io.ReadCloser {
	return &eventFilter{r: bufio.NewReader(rc), rc: rc, stripIDs: stripIDs, tap: tap}
}

func (f *eventFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 && f.err == nil {
		line, err := f.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: handled in pieces, passing through.
			if !f.inLine {
				f.dropLine = f.stripIDs && isIDLine(line)
				f.spill()
			}
			if !f.dropLine {
				f.out = append(f.out, line...)
			}
			f.inLine = true
			continue
		}
		f.err = err
		if f.inLine {
			if !f.dropLine {
				f.out = append(f.out, line...)
			}
			f.inLine, f.dropLine = false, false
		} else {
			f.line(line)
		}
		if errors.Is(err, io.EOF) && (f.passing || len(f.event) > 0) {
			// The body ended inside an event: the stream broke. Said as
			// EOF, the SDK would take what it got of a large event for a
			// whole one.
			f.err = io.ErrUnexpectedEOF
		}
	}
	if len(f.out) > 0 {
		n := copy(p, f.out)
		f.out = f.out[n:]
		return n, nil
	}
	return 0, f.err
}

// line handles one line of the body (with its line break, if any).
func (f *eventFilter) line(line []byte) {
	bare := bytes.TrimRight(line, "\r\n")
	if f.stripIDs && isIDLine(bare) {
		return
	}
	if len(bare) == 0 && len(line) > 0 {
		// The end of an event.
		taken := !f.passing && len(f.data) > 0 && f.tap != nil && f.tap(f.data)
		if !taken {
			f.out = append(f.out, f.event...)
			f.out = append(f.out, line...)
		}
		f.event, f.data, f.passing = f.event[:0], f.data[:0], false
		return
	}
	if f.passing {
		f.out = append(f.out, line...)
		return
	}
	f.event = append(f.event, line...)
	if v, ok := bytes.CutPrefix(bare, []byte("data:")); ok {
		if len(f.data) > 0 {
			f.data = append(f.data, '\n')
		}
		f.data = append(f.data, bytes.TrimPrefix(v, []byte(" "))...)
	}
	if len(f.event) > maxTappedEvent {
		f.spill()
	}
}

// spill sends the event read so far on, and the rest of it as it comes.
func (f *eventFilter) spill() {
	if !f.passing {
		f.out = append(f.out, f.event...)
		f.event, f.data, f.passing = f.event[:0], f.data[:0], true
	}
}

func (f *eventFilter) Close() error { return f.rc.Close() }

// isIDLine reports whether line (or the start of a long one) is an SSE id
// field.
func isIDLine(line []byte) bool {
	return bytes.HasPrefix(line, []byte("id:")) || bytes.Equal(bytes.TrimRight(line, "\r\n"), []byte("id"))
}
