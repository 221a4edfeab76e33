package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/lazyregexp"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"go.opentelemetry.io/otel/trace"
)

// AuditEvent names what happened.
type AuditEvent string

// The audited events.
const (
	EventSignInStarted   AuditEvent = "sign-in.started"
	EventSignInCompleted AuditEvent = "sign-in.completed"
	EventSignInFailed    AuditEvent = "sign-in.failed"
	EventLogout          AuditEvent = "logout"
	EventKeyCreated      AuditEvent = "key.created"
	// EventKeyUsed is recorded through [Audit.KeyUsed], which writes a
	// key's first use and then at most one entry per interval.
	EventKeyUsed    AuditEvent = "key.used"
	EventKeyRevoked AuditEvent = "key.revoked"
	// EventKeyRefused is a presented API key that was refused; Reason
	// says why (see inbound.Reason) and KeyID is the ID it named (the
	// public half of a key; the secret half is never kept).
	EventKeyRefused AuditEvent = "key.refused"
	// EventCredentialRefused is any other refused inbound credential: none,
	// a malformed one, a JWT that did not verify. Reason says why.
	EventCredentialRefused AuditEvent = "credential.refused"
	// EventPolicyRefused is a request a policy stopped; Reason names the
	// policy: "network" (the outbound network policy; Target is the
	// host), LimitRate or LimitConcurrency.
	EventPolicyRefused AuditEvent = "policy.refused"
	// EventAuditDropped is written by the audit log itself: Count entries
	// were lost to a full queue before it.
	EventAuditDropped AuditEvent = "audit.dropped"
)

// The outcomes of audited events.
const (
	AuditOK      = "ok"
	AuditFailed  = "failed"
	AuditRefused = "refused"
)

// AuditEntry is one audited event: metadata only. There is no field for a
// token, key, argument, result or free text, and [Audit.Record] holds
// every field to what it may contain (see there).
type AuditEntry struct {
	Time  time.Time  `json:"time"`
	Event AuditEvent `json:"event"`
	// Outcome is AuditOK, AuditFailed or AuditRefused; empty means the
	// event's own (failed for sign-in.failed, refused for *.refused, else
	// ok).
	Outcome string `json:"outcome"`
	Tenant  string `json:"tenant,omitempty"`
	User    string `json:"user,omitempty"`
	Server  string `json:"server,omitempty"`
	// KeyID identifies an API key by its public ID; never the key.
	KeyID string `json:"keyId,omitempty"`
	// Reason is a code from a closed set: an error category, an OAuth
	// error code or a JSON-RPC code ([ReasonOf] makes one from an error),
	// a limit, or one of the Reason constants; anything else is written
	// as "other".
	Reason string `json:"reason,omitempty"`
	// Target is the host a refused outbound request was for.
	Target string `json:"target,omitempty"`
	// Remote is the address the request came from (the connection's; behind
	// a reverse proxy, the front may put the forwarded client here).
	Remote string `json:"remote,omitempty"`
	// TraceID ties the entry to the request's trace.
	TraceID string `json:"traceId,omitempty"`
	// Count is how many events this entry stands for, when coalesced
	// (key use, refusals by a limit, dropped entries).
	Count int `json:"count,omitempty"`
}

// An AuditSink stores audit entries. WriteAudit is called from one
// goroutine at a time, with the entries in the order they were recorded;
// it may be slow (it never delays a request). A sink that also implements
// io.Closer is closed by [Audit.Close].
type AuditSink interface {
	WriteAudit(entries []AuditEntry) error
}

// AuditOptions configure [NewAudit]; the struct is copied.
type AuditOptions struct {
	// QueueSize bounds the entries waiting for the sink; zero means 4096.
	// When it is full, entries are dropped and counted (an audit.dropped
	// entry says how many, and mcpgate_audit_dropped_total).
	QueueSize int
	// KeyUseInterval is how often one key's use is written; zero means an
	// hour.
	KeyUseInterval time.Duration
	// Metrics counts drops and write errors; nil does not.
	Metrics *Metrics
	// Logger is told when the sink fails (never an entry's content); nil
	// discards.
	Logger *slog.Logger
}

// Audit is the audit log: a bounded queue in front of a sink, so a slow
// disk never slows a request. Record never blocks. Safe for concurrent
// use; methods on a nil *Audit do nothing.
type Audit struct {
	sink    AuditSink
	q       chan AuditEntry
	stop    chan struct{}
	done    chan struct{}
	metrics *Metrics
	logger  *slog.Logger
	keyUse  time.Duration
	now     func() time.Time

	mu      sync.RWMutex // write-held by Close: no Record sends after it
	closed  bool
	dropped int // guarded by dropMu
	dropMu  sync.Mutex

	everyMu sync.Mutex
	every   map[string]*coalesced // what is being coalesced → its events since the last entry
}

type coalesced struct {
	written time.Time
	count   int
}

// maxCoalesced bounds what is being coalesced; past it the table starts
// over (some entries come sooner than their interval).
const maxCoalesced = 10000

// NewAudit starts the audit log's writer; [Audit.Close] stops it.
func NewAudit(sink AuditSink, opts *AuditOptions) *Audit {
	var o AuditOptions
	if opts != nil {
		o = *opts
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.KeyUseInterval <= 0 {
		o.KeyUseInterval = time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Audit{sink: sink, q: make(chan AuditEntry, o.QueueSize), stop: make(chan struct{}), done: make(chan struct{}),
		metrics: o.Metrics, logger: o.Logger, keyUse: o.KeyUseInterval, now: time.Now, every: make(map[string]*coalesced)}
	go a.run()
	return a
}

// Record queues e, held to what each field may contain: the event,
// outcome and reason come from closed sets (else "other"); identifiers
// (tenant, user, server, key ID) are cleaned of control characters,
// bounded, and replaced by "[redacted]" when they look like a credential
// (a JWT, a whole API key, a bearer value, a known token prefix); Target
// and Remote are host names or addresses, never URLs; the trace ID is a
// trace ID. When the queue is full, e is dropped and counted.
func (a *Audit) Record(e AuditEntry) {
	if a == nil {
		return
	}
	e = clean(e, a.now)
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return
	}
	select {
	case a.q <- e:
	default:
		a.dropMu.Lock()
		a.dropped++
		a.dropMu.Unlock()
		a.metrics.auditDrop()
	}
}

// KeyUsed records a use of an API key: its first use is written at once,
// then at most one entry per [AuditOptions.KeyUseInterval], whose Count
// says how many uses it stands for. The event is set to key.used.
func (a *Audit) KeyUsed(e AuditEntry) {
	e.Event = EventKeyUsed
	a.recordEvery("key\x00"+e.Tenant+"\x00"+e.KeyID, a.interval(), e)
}

func (a *Audit) interval() time.Duration {
	if a == nil {
		return 0
	}
	return a.keyUse
}

// recordEvery records e for what key names at most once per interval: the
// first at once, then one an interval later whose Count is how many
// happened since (e's own fields are the latest's). Events between are
// only counted; a count not yet written when the process stops is lost,
// which is why metrics count each.
func (a *Audit) recordEvery(key string, interval time.Duration, e AuditEntry) {
	if a == nil {
		return
	}
	now := a.now()
	if e.Time.IsZero() {
		e.Time = now
	}
	a.everyMu.Lock()
	c := a.every[key]
	if c == nil {
		if len(a.every) >= maxCoalesced {
			clear(a.every)
		}
		c = &coalesced{}
		a.every[key] = c
	}
	c.count++
	due := c.written.IsZero() || now.Sub(c.written) >= interval
	if due {
		e.Count, c.count, c.written = c.count, 0, now
	}
	a.everyMu.Unlock()
	if due {
		a.Record(e)
	}
}

// Inbound records a decision of inbound authentication; it has the shape
// of inbound.Options.Audit. An accepted API key is a key use (see
// [Audit.KeyUsed]); an accepted JWT is not written (each request is its
// own sign-in; metrics count requests). A refusal is key.refused when it
// named a key, else credential.refused, at most one entry a second per
// reason and tenant, with the count: a scanner must not fill the disk. A
// check that could not run (unavailable) is the log's business, not the
// audit's.
func (a *Audit) Inbound(ev inbound.Event) {
	if a == nil {
		return
	}
	e := AuditEntry{Time: ev.Time, Tenant: ev.Tenant, User: ev.User, KeyID: ev.KeyID, Remote: ev.RemoteAddr}
	switch {
	case ev.Accepted && ev.Via == inbound.ViaKey:
		a.KeyUsed(e)
	case ev.Accepted, ev.Reason == inbound.ReasonUnavailable:
	default:
		e.Event, e.Reason = EventCredentialRefused, string(ev.Reason)
		if ev.KeyID != "" {
			e.Event = EventKeyRefused
		}
		a.recordEvery("refused\x00"+string(ev.Reason)+"\x00"+ev.Tenant, auditEvery, e)
	}
}

// Close stops taking entries, writes those queued (until ctx ends) and
// closes the sink if it is an io.Closer. Entries recorded after Close are
// dropped.
func (a *Audit) Close(ctx context.Context) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	already := a.closed
	a.closed = true
	a.mu.Unlock()
	if !already {
		close(a.stop)
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c, ok := a.sink.(io.Closer); ok && !already {
		return c.Close()
	}
	return nil
}

// maxBatch bounds the entries handed to the sink at once.
const maxBatch = 256

func (a *Audit) run() {
	defer close(a.done)
	batch := make([]AuditEntry, 0, maxBatch)
	for {
		select {
		case e := <-a.q:
			batch = append(batch[:0], e)
		case <-a.stop:
			// Close holds no more senders: what is queued is all there is.
			for {
				batch = a.fill(batch[:0])
				a.write(batch) // with none left, it still reports drops
				if len(batch) == 0 {
					return
				}
			}
		}
		batch = a.fill(batch)
		a.write(batch)
	}
}

// fill adds what is queued, without waiting, up to maxBatch.
func (a *Audit) fill(batch []AuditEntry) []AuditEntry {
	for len(batch) < maxBatch {
		select {
		case e := <-a.q:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

func (a *Audit) write(batch []AuditEntry) {
	a.dropMu.Lock()
	lost := a.dropped
	a.dropped = 0
	a.dropMu.Unlock()
	if lost > 0 {
		batch = append([]AuditEntry{{Time: a.now().UTC(), Event: EventAuditDropped, Outcome: AuditFailed, Count: lost}}, batch...)
	}
	if len(batch) == 0 {
		return
	}
	if err := a.sink.WriteAudit(batch); err != nil {
		a.metrics.auditFailure()
		a.logger.Warn("audit log: writing entries failed", slog.Int("entries", len(batch)), slog.String("error", mcpgate.Sanitize(err.Error(), 200)))
	}
}

// clean holds e's fields to what they may contain; see Record.
func clean(e AuditEntry, now func() time.Time) AuditEntry {
	if e.Time.IsZero() {
		e.Time = now()
	}
	e.Time = e.Time.UTC()
	if !events[e.Event] {
		e.Event = "other"
	}
	if e.Outcome == "" {
		switch {
		case e.Event == EventSignInFailed:
			e.Outcome = AuditFailed
		case strings.HasSuffix(string(e.Event), ".refused"):
			e.Outcome = AuditRefused
		default:
			e.Outcome = AuditOK
		}
	}
	if e.Outcome != AuditOK && e.Outcome != AuditFailed && e.Outcome != AuditRefused {
		e.Outcome = "other"
	}
	e.Tenant, e.User, e.Server, e.KeyID = ident(e.Tenant), ident(e.User), ident(e.Server), ident(e.KeyID)
	if e.Reason != "" && !knownReason(e.Reason) {
		e.Reason = "other"
	}
	e.Target = host(e.Target)
	e.Remote = host(e.Remote)
	if e.TraceID != "" && !traceIDPattern().MatchString(e.TraceID) {
		e.TraceID = ""
	}
	e.Count = max(e.Count, 0)
	return e
}

var events = map[AuditEvent]bool{
	EventSignInStarted: true, EventSignInCompleted: true, EventSignInFailed: true, EventLogout: true,
	EventKeyCreated: true, EventKeyUsed: true, EventKeyRevoked: true, EventKeyRefused: true, EventCredentialRefused: true,
	EventPolicyRefused: true, EventAuditDropped: true,
}

// ReasonNetwork is the Reason of a refusal by the outbound network policy.
const ReasonNetwork = "network"

// reasons is what a Reason may be, besides a JSON-RPC code: error
// categories, the OAuth error codes of RFC 6749, 6750, 8628, 8707, 9449
// and OpenID Connect, the limits, inbound authentication's reasons and
// ReasonNetwork. A reason is a closed set because a provider's code is the
// provider's text.
var reasons = map[string]bool{
	LimitRate: true, LimitConcurrency: true, ReasonNetwork: true,
	string(inbound.ReasonMissing): true, string(inbound.ReasonScheme): true, string(inbound.ReasonMalformed): true,
	string(inbound.ReasonDisabled): true, string(inbound.ReasonUnknownKey): true, string(inbound.ReasonWrongSecret): true,
	string(inbound.ReasonRevoked): true, string(inbound.ReasonSignature): true, string(inbound.ReasonIssuer): true,
	string(inbound.ReasonAudience): true, string(inbound.ReasonExpired): true, string(inbound.ReasonNotYetValid): true,
	string(inbound.ReasonClaim): true, string(inbound.ReasonTenant): true, string(inbound.ReasonBound): true,
	"invalid_request": true, "invalid_client": true, "invalid_grant": true, "unauthorized_client": true,
	"unsupported_grant_type": true, "invalid_scope": true, "access_denied": true, "unsupported_response_type": true,
	"server_error": true, "temporarily_unavailable": true, "invalid_token": true, "insufficient_scope": true,
	"invalid_target": true, "use_dpop_nonce": true, "invalid_dpop_proof": true, "authorization_pending": true,
	"slow_down": true, "expired_token": true, "login_required": true, "interaction_required": true,
	"consent_required": true, "invalid_client_metadata": true, "invalid_redirect_uri": true,
}

func knownReason(s string) bool {
	return reasons[s] || outcomes[s] && s != OutcomeOK || rpcCode().MatchString(s)
}

// The patterns are compiled when first used, not when the program starts:
// only serve --http audits.
var (
	rpcCode        = lazyregexp.New(`^-?[0-9]{1,6}$`)
	traceIDPattern = lazyregexp.New(`^[0-9a-f]{32}$`)
	jwtShape       = lazyregexp.New(`[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	// apiKeyShape is a whole mcpgate API key, ID and secret: mgk_ID_SECRET.
	apiKeyShape = lazyregexp.New(`mgk_[^\s_]+_\S`)
)

// ident keeps an identifier fit for the log: printable, bounded, and not
// shaped like a credential.
func ident(s string) string {
	if s == "" {
		return ""
	}
	c := mcpgate.Sanitize(s, 128)
	if strings.Contains(c, "[redacted]") || jwtShape().MatchString(c) || apiKeyShape().MatchString(c) {
		return "[redacted]"
	}
	return c
}

// host keeps only the host of an address, host:port or URL (never a path,
// query or user info).
func host(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Host
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	s = strings.Trim(s, "[]")
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if !hostPattern().MatchString(s) {
		return "other"
	}
	return s
}

var hostPattern = lazyregexp.New(`^[A-Za-z0-9.:%_-]{1,255}$`)

// ReasonOf is the Reason for err: its OAuth error or JSON-RPC code when it
// is a known one (invalid_grant, access_denied, -32602), else its
// category; "" for nil. Never the error's text.
func ReasonOf(err error) string {
	if err == nil {
		return ""
	}
	var me *mcpgate.Error
	if errors.As(err, &me) && me.Code != "" && knownReason(me.Code) {
		return me.Code
	}
	return string(mcpgate.CategoryOf(err))
}

// RemoteAddr is the host of the address r came from, for
// [AuditEntry.Remote].
func RemoteAddr(r *http.Request) string { return remoteAddr(r) }

func remoteAddr(r *http.Request) string {
	if r == nil {
		return ""
	}
	return host(r.RemoteAddr)
}

// TraceID is the ID of the trace ctx belongs to, for
// [AuditEntry.TraceID]; "" when there is none.
func TraceID(ctx context.Context) string { return traceID(ctx) }

func traceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// JSONLines is an [AuditSink] that writes one JSON object per line.
type JSONLines struct {
	mu   sync.Mutex
	w    io.Writer
	path string   // set by OpenJSONLines
	f    *os.File // the file it opened, closed by Close
}

// NewJSONLines writes to w (os.Stderr, for journald); it is never closed
// by the sink.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// OpenJSONLines appends to the file at path, creating it 0600. Each batch
// is written with one write and synced to disk before the next.
func OpenJSONLines(path string) (*JSONLines, error) {
	j := &JSONLines{path: path}
	if err := j.Reopen(); err != nil {
		return nil, err
	}
	return j, nil
}

// Reopen closes and opens the file again, for log rotation that renames
// it (on SIGHUP, say); a sink made by NewJSONLines is left as it is.
func (j *JSONLines) Reopen() error {
	if j.path == "" {
		return nil
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	j.mu.Lock()
	old := j.f
	j.f, j.w = f, f
	j.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// WriteAudit writes entries, one line each.
func (j *JSONLines) WriteAudit(entries []AuditEntry) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.w == nil {
		return os.ErrClosed
	}
	if _, err := j.w.Write(buf.Bytes()); err != nil {
		return err
	}
	if j.f != nil {
		return j.f.Sync()
	}
	return nil
}

// Close closes the file OpenJSONLines opened.
func (j *JSONLines) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f, j.w = nil, nil
	return err
}
