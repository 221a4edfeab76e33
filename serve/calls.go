package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Calls in flight. Every host request that a remote server serves (a tool
// call through the gateway or the bridge, a prompt, a resource read) is a
// call, registered under the server's ID while it runs, so that what the
// server sends during it reaches the right host request: its progress
// notifications go to the host's progress token, its log messages to that
// host's session, and its form elicitations to the host when it can answer
// them.
//
// How a question reaches the host depends on the host's protocol:
//   - A session-era host (2025-06-18, 2025-11-25) that declared form
//     elicitation is asked with a server-initiated elicitation/create
//     during the request, as many times as the remote server asks.
//   - A 2026-07-28 host cannot receive server-initiated requests. Its
//     request ends with an InputRequiredResult carrying the question and a
//     requestState; the remote call stays pending in this process until the
//     host retries with the answer, and the retry then waits for the
//     result (or the next question). The requestState names the pending
//     call and the round, is bound to the request (method, name, arguments)
//     and expires; an HMAC with a key made per process protects it. It
//     holds no secret. A call nobody retries is cancelled after parkTTL,
//     and at most maxParked calls wait at once (beyond that a question is
//     declined).
//   - Any other host: Options.Questions (the settings page), else decline.
//
// The go-sdk server could fulfil an InputRequiredResult for a session-era
// host by itself, but it does so for one round only (it re-invokes the
// handler once), so a remote server that asks twice would leave such a host
// with a bare input-required result; session-era hosts are asked directly.

var (
	// parkTTL bounds how long a pending call waits for the host's retry.
	parkTTL = 5 * time.Minute
	// maxParked bounds the pending calls waiting for retries.
	maxParked = 32
)

// flushWait bounds how long a request waits for its queued notifications
// to be written before its result.
const flushWait = time.Second

// hostRequest is what the front knows of the host request it serves.
type hostRequest struct {
	ss        *mcp.ServerSession
	method    string // tools/call, prompts/get or resources/read
	name      string // the tool's or prompt's name, the resource's URI
	args      any    // the request's arguments, for binding requestState
	token     any    // the host's progress token, if any
	mrtr      bool   // the host speaks 2026-07-28: questions go back in results
	elicit    bool   // the host can answer form elicitations
	state     string
	responses mcp.InputResponseMap
}

func toolRequest(req *mcp.CallToolRequest) hostRequest {
	hr := hostRequest{ss: req.Session, method: "tools/call", name: req.Params.Name, args: req.Params.Arguments,
		token: req.Params.GetProgressToken(), state: req.Params.RequestState, responses: req.Params.InputResponses}
	hr.capabilities(req.ProtocolVersion(), req.ClientCapabilities())
	return hr
}

func promptRequest(req *mcp.GetPromptRequest) hostRequest {
	hr := hostRequest{ss: req.Session, method: "prompts/get", name: req.Params.Name, args: req.Params.Arguments,
		token: req.Params.GetProgressToken(), state: req.Params.RequestState, responses: req.Params.InputResponses}
	hr.capabilities(req.ProtocolVersion(), req.ClientCapabilities())
	return hr
}

func readRequest(req *mcp.ReadResourceRequest) hostRequest {
	hr := hostRequest{ss: req.Session, method: "resources/read", name: req.Params.URI,
		token: req.Params.GetProgressToken(), state: req.Params.RequestState, responses: req.Params.InputResponses}
	hr.capabilities(req.ProtocolVersion(), req.ClientCapabilities())
	return hr
}

const mrtrVersion = "2026-07-28"

func (hr *hostRequest) capabilities(version string, caps *mcp.ClientCapabilities) {
	hr.mrtr = version >= mrtrVersion
	// An empty elicitation capability means form (2025-06-18); a declared
	// set must include form.
	hr.elicit = caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
}

// binding digests what a requestState is bound to.
func (hr *hostRequest) binding() string {
	args := []byte("null")
	if hr.args != nil {
		// Canonical form: the retry may encode the same arguments differently.
		var v any
		raw, _ := json.Marshal(hr.args)
		if json.Unmarshal(raw, &v) == nil {
			args, _ = json.Marshal(v)
		}
	}
	sum := sha256.Sum256([]byte(hr.method + "\x00" + hr.name + "\x00" + string(args)))
	return hex.EncodeToString(sum[:16])
}

// question is a remote server's form elicitation waiting for the host.
type question struct {
	params *mcp.ElicitParams
	answer chan *mcp.ElicitResult // buffered: whoever answers never waits
}

// call is one host request being served by a remote server.
type call struct {
	id     string // random; names a pending call in requestState (MRTR only)
	server string
	ss     *mcp.ServerSession
	mrtr   bool
	elicit bool
	bound  string // hostRequest.binding of the first request

	questions chan *question // remote questions for the waiting request (MRTR)
	done      chan struct{}  // closed when the remote operation has ended
	cancel    func()         // ends the remote operation
	res       any            // set before done is closed
	err       error          // set before done is closed
	notes     *notifier      // where notifications to the host queue

	mu       sync.Mutex
	attached context.Context // the host request being served; nil between rounds
	token    any             // the attached request's progress token
	queued   bool            // a notification for the attached request was queued
	// progressed is set when that notification was progress (see detach).
	progressed bool
	// last is the progress value last sent to the attached request's
	// token, valid when progressed; each one sent must be greater.
	last  float64
	step  int       // rounds sent back to the host
	asked *question // the question sent back, awaiting the retry
	key   string    // its key in inputRequests
	timer *time.Timer
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// options are the manager's call options for this call.
func (c *call) options() *manager.CallOptions {
	return &manager.CallOptions{Progress: c.progress}
}

// progress forwards a remote progress notification to the attached
// request's progress token. It never blocks: the manager calls it from the
// goroutine reading the server's stream.
func (c *call) progress(p *mcp.ProgressNotificationParams) {
	if p == nil {
		return
	}
	c.mu.Lock()
	ctx, token := c.attached, c.token
	c.mu.Unlock()
	if ctx == nil || token == nil {
		return
	}
	c.sendProgress(ctx, token, p.Progress, p.Total, mcpgate.Sanitize(p.Message, 200))
}

// sendProgress queues a progress notification for the attached request,
// its value raised above the last one sent if need be (a notice of the
// front's own came between the remote server's).
func (c *call) sendProgress(ctx context.Context, token any, value, total float64, message string) {
	c.mu.Lock()
	if c.progressed && value <= c.last {
		value = math.Nextafter(c.last, math.Inf(1))
	}
	c.last = value
	c.mu.Unlock()
	out := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: value, Total: total, Message: message}
	c.queue(func() { c.ss.NotifyProgress(ctx, out) })
	c.mu.Lock()
	c.progressed = true
	c.mu.Unlock()
}

// notice tells the attached request's host something of the front's own,
// as a log message (when the host takes them) and as the message of a
// progress notification (when the request has a progress token), which
// hosts show while a call runs.
func (c *call) notice(server, text string) {
	c.mu.Lock()
	ctx, token, last, progressed := c.attached, c.token, c.last, c.progressed
	c.mu.Unlock()
	if ctx == nil {
		return
	}
	c.queue(func() {
		//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
		c.ss.Log(ctx, &mcp.LoggingMessageParams{Level: "notice", Logger: "mcpgate", Data: text})
	})
	if token != nil {
		if !progressed {
			last = 0
		}
		c.sendProgress(ctx, token, last, 0, text)
	}
}

// queue sends a notification for the attached request.
func (c *call) queue(fn func()) {
	if c.notes.send(fn) {
		c.mu.Lock()
		c.queued = true
		c.mu.Unlock()
	}
}

// attach makes hr's request the one this call serves.
func (c *call) attach(ctx context.Context, hr hostRequest) {
	c.mu.Lock()
	c.attached, c.token = ctx, hr.token
	c.mu.Unlock()
}

// detach ends serving the attached request, once the notifications queued
// for it are written, so none follows its result.
func (c *call) detach() {
	c.mu.Lock()
	queued, progressed := c.queued, c.progressed
	c.attached, c.token, c.queued, c.progressed = nil, nil, false, false
	c.mu.Unlock()
	if queued {
		c.notes.flush(flushWait)
	}
	if progressed {
		// Hosts built on the TypeScript SDK (Claude Code, Cursor, VS Code)
		// handle a notification a turn after the message it arrived with,
		// and forget a request's progress handler as its result arrives: a
		// progress notification read together with the result is lost. A
		// moment between them keeps them in separate reads.
		time.Sleep(progressGap)
	}
}

// progressGap separates a call's last progress notification from its
// result.
const progressGap = 5 * time.Millisecond

// ask hands a question to the waiting host request (MRTR) and waits for
// the host's answer. A call that has ended gets no more answers.
func (c *call) ask(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	q := &question{params: params, answer: make(chan *mcp.ElicitResult, 1)}
	select {
	case c.questions <- q:
	case <-c.done:
		return &mcp.ElicitResult{Action: "cancel"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-q.answer:
		return r, nil
	case <-c.done:
		return &mcp.ElicitResult{Action: "cancel"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// inputRequired is the round a request ends with when the host must answer.
type inputRequired struct {
	requests mcp.InputRequestMap
	state    string
}

// serveCall serves one host request whose work, op, runs on server. res
// is op's result, or ask is the InputRequiredResult to answer with.
func (f *Front) serveCall(ctx context.Context, hr hostRequest, server string, op func(context.Context, *manager.CallOptions) (any, error)) (res any, ask *inputRequired, err error) {
	if server == "" {
		return f.recovered(func() (any, error) { return op(ctx, nil) })
	}
	if !hr.mrtr || !hr.elicit {
		// Questions never go back in results: op runs in the request, and
		// the call is never parked, so it needs no ID.
		c := &call{server: server, ss: hr.ss, mrtr: hr.mrtr, elicit: hr.elicit, notes: f.notes}
		c.attach(ctx, hr)
		defer c.detach()
		defer f.register(c)()
		opts := c.options()
		if hr.token == nil {
			// Nobody to tell: the one request this call serves asked for
			// no progress, so the server is not asked for any either.
			opts.Progress = nil
		}
		return f.recovered(func() (any, error) { return op(ctx, opts) })
	}
	var c *call
	if hr.state != "" {
		c, ask, err = f.resume(hr)
		if c == nil {
			return nil, ask, err
		}
		c.attach(ctx, hr)
	} else {
		c = f.start(ctx, hr, server, op)
	}
	defer c.detach()
	for {
		select {
		case <-c.done:
			return c.res, nil, c.err
		case q := <-c.questions:
			if ask := f.park(c, q); ask != nil {
				return nil, ask, nil
			}
			q.answer <- &mcp.ElicitResult{Action: "decline"} // too many calls wait already
		case <-ctx.Done():
			c.cancel() // the host cancelled: so is the remote call
			return nil, nil, ctx.Err()
		}
	}
}

// recovered runs op, turning a panic (a bug, or a remote definition the
// go-sdk chokes on) into an error so one request cannot end the process.
func (f *Front) recovered(op func() (any, error)) (res any, ask *inputRequired, err error) {
	defer func() {
		if r := recover(); r != nil {
			f.opts.Logger.Error("serve: a request panicked", "panic", r)
			res, ask, err = nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error in mcpgate"}
		}
	}()
	res, err = op()
	return res, nil, err
}

// start runs op for an MRTR host in the background, so it can outlive the
// request that started it (attached to reqCtx's request) while the host
// answers a question.
func (f *Front) start(reqCtx context.Context, hr hostRequest, server string, op func(context.Context, *manager.CallOptions) (any, error)) *call {
	ctx, cancel := context.WithCancel(f.base)
	c := &call{id: newID(), server: server, ss: hr.ss, mrtr: true, elicit: true, bound: hr.binding(),
		questions: make(chan *question), done: make(chan struct{}), cancel: cancel, notes: f.notes}
	c.attach(reqCtx, hr)
	unregister := f.register(c)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer cancel()
		defer close(c.done)
		defer unregister()
		c.res, _, c.err = f.recovered(func() (any, error) { return op(ctx, c.options()) })
	}()
	return c
}

// park keeps c pending for the host's answer to q and returns the round
// to send, or nil when too many calls wait already.
func (f *Front) park(c *call, q *question) *inputRequired {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.parked) >= maxParked {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step++
	c.asked, c.key = q, "elicit-"+strconv.Itoa(c.step)
	f.parked[c.id] = c
	step := c.step
	c.timer = time.AfterFunc(parkTTL, func() { f.abandon(c, step) })
	return &inputRequired{requests: mcp.InputRequestMap{c.key: q.params}, state: f.sign(c.id, step, c.bound)}
}

// abandon cancels a call whose host never came back for round step.
func (f *Front) abandon(c *call, step int) {
	f.mu.Lock()
	c.mu.Lock()
	if f.parked[c.id] != c || c.step != step {
		c.mu.Unlock()
		f.mu.Unlock()
		return
	}
	delete(f.parked, c.id)
	c.timer.Stop()
	q := c.asked
	c.asked = nil
	c.mu.Unlock()
	f.mu.Unlock()
	q.answer <- &mcp.ElicitResult{Action: "cancel"}
	c.cancel()
}

// errBadState answers a retry whose requestState does not name a pending
// round of this request.
var errBadState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
	Message: "requestState is not valid: it expired, was used already, or belongs to another request; send the request again without it"}

// resume takes the pending call a retry names and gives it the host's
// answer. Without an answer to the question, the same round is sent again.
func (f *Front) resume(hr hostRequest) (*call, *inputRequired, error) {
	id, step, ok := f.verify(hr.state, hr.binding())
	if !ok {
		return nil, nil, errBadState
	}
	f.mu.Lock()
	c := f.parked[id]
	if c == nil || c.ss != hr.ss {
		f.mu.Unlock()
		return nil, nil, errBadState
	}
	c.mu.Lock()
	if c.step != step {
		c.mu.Unlock()
		f.mu.Unlock()
		return nil, nil, errBadState
	}
	answer, _ := hr.responses[c.key].(*mcp.ElicitResult)
	if answer == nil {
		ask := &inputRequired{requests: mcp.InputRequestMap{c.key: c.asked.params}, state: f.sign(c.id, step, c.bound)}
		c.timer.Reset(parkTTL)
		c.mu.Unlock()
		f.mu.Unlock()
		return nil, ask, nil
	}
	delete(f.parked, id)
	c.timer.Stop()
	q := c.asked
	c.asked = nil
	c.mu.Unlock()
	f.mu.Unlock()
	q.answer <- answer
	return c, nil, nil
}

// requestState: base64url(JSON payload) "." base64url(HMAC-SHA256).
type statePayload struct {
	Call    string `json:"c"`
	Step    int    `json:"s"`
	Expires int64  `json:"e"`
	Bound   string `json:"b"`
}

var timeNow = time.Now

func (f *Front) sign(id string, step int, bound string) string {
	p, _ := json.Marshal(statePayload{Call: id, Step: step, Expires: timeNow().Add(parkTTL).Unix(), Bound: bound})
	body := base64.RawURLEncoding.EncodeToString(p)
	return body + "." + base64.RawURLEncoding.EncodeToString(f.mac(body))
}

func (f *Front) verify(state, bound string) (id string, step int, ok bool) {
	body, sig, found := strings.Cut(state, ".")
	if !found || len(state) > 512 {
		return "", 0, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, f.mac(body)) {
		return "", 0, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	var p statePayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return "", 0, false
	}
	if p.Bound != bound || timeNow().Unix() > p.Expires {
		return "", 0, false
	}
	return p.Call, p.Step, true
}

func (f *Front) mac(body string) []byte {
	h := hmac.New(sha256.New, f.stateKey)
	h.Write([]byte(body))
	return h.Sum(nil)
}

// register records c as in flight to its server until the returned
// function is called.
func (f *Front) register(c *call) (unregister func()) {
	f.mu.Lock()
	f.calls[c.server] = append(f.calls[c.server], c)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		list := f.calls[c.server]
		for i, x := range list {
			if x == c {
				f.calls[c.server] = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(f.calls[c.server]) == 0 {
			delete(f.calls, c.server)
		}
	}
}

// latest is the newest call in flight to server, or nil.
func (f *Front) latest(server string) *call {
	f.mu.Lock()
	defer f.mu.Unlock()
	if list := f.calls[server]; len(list) > 0 {
		return list[len(list)-1]
	}
	return nil
}

// abandonAll cancels every pending call (the front is stopping).
func (f *Front) abandonAll() {
	f.mu.Lock()
	var parked []*call
	for _, c := range f.parked {
		parked = append(parked, c)
	}
	f.mu.Unlock()
	for _, c := range parked {
		c.mu.Lock()
		step := c.step
		c.mu.Unlock()
		f.abandon(c, step)
	}
}
