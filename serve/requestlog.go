package serve

import (
	"context"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store"
)

const (
	// logQueueSize bounds the entries waiting for the store; when the
	// store is slower than the requests, the oldest are dropped.
	logQueueSize = 1000
	// logWriteTimeout bounds one write of the queue, and the last one at
	// close, so a store held by a long token refresh elsewhere cannot
	// hold the process.
	logWriteTimeout = 5 * time.Second
	// logBatchDelay gathers the requests of a burst into one write, so the
	// log takes the store's write lock once per burst, not per request. A
	// write costs about as much as 75 of its rows (a transaction, and the
	// trim to MaxLogEntries), so under load a longer wait is most of what
	// the log costs a call; logFlushAt ends it early, before the queue
	// drops anything.
	logBatchDelay = 200 * time.Millisecond
	logFlushAt    = logQueueSize / 2
)

// RequestLog carries managers' request logs to the store in the
// background, so that `mcpgate log` in another process (or the settings
// page, or a person of a shared gateway) sees what this one did. Add never
// blocks a request: entries wait in a bounded queue, and whatever piled up
// while one write ran goes in the next, as one batch. A failed write loses
// its batch: the log is a diagnostic, not worth holding anything up for.
type RequestLog struct {
	st store.Store

	mu    sync.Mutex
	queue []*store.LogEntry

	wake    chan struct{}
	full    chan struct{} // logFlushAt entries are waiting
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
}

// NewRequestLog starts writing to st; [RequestLog.Close] stops it.
func NewRequestLog(st store.Store) *RequestLog {
	s := idleRequestLog(st)
	go s.run()
	return s
}

// idleRequestLog is a sink that queues but does not write until run
// starts.
func idleRequestLog(st store.Store) *RequestLog {
	return &RequestLog{st: st, wake: make(chan struct{}, 1), full: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
}

// Add queues e as a request of tenant's, dropping the oldest entry when
// the queue is full.
func (s *RequestLog) Add(tenant string, e manager.RequestLogEntry) {
	s.mu.Lock()
	if len(s.queue) == logQueueSize {
		copy(s.queue, s.queue[1:])
		s.queue = s.queue[:len(s.queue)-1]
	}
	s.queue = append(s.queue, &store.LogEntry{
		Tenant: tenant, Time: e.Time, Server: e.Server, Method: e.Method, Tool: e.Tool, Duration: e.Duration,
		Outcome: e.Outcome, HTTPStatus: e.HTTPStatus, BytesIn: e.BytesIn, BytesOut: e.BytesOut,
	})
	full := len(s.queue) >= logFlushAt
	s.mu.Unlock()
	signal(s.wake)
	if full {
		signal(s.full)
	}
}

// signal wakes the one waiting on c, if it is not awake already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// For returns a manager.Options.RequestLog that adds to tenant's log.
func (s *RequestLog) For(tenant string) func(manager.RequestLogEntry) {
	return func(e manager.RequestLogEntry) { s.Add(tenant, e) }
}

func (s *RequestLog) run() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
			select {
			case <-time.After(logBatchDelay):
			case <-s.full:
			case <-s.closing:
			}
			s.write()
		case <-s.closing:
			s.write()
			return
		}
	}
}

// write appends what is queued.
func (s *RequestLog) write() {
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), logWriteTimeout)
	defer cancel()
	_ = s.st.AppendLog(ctx, batch)
}

// Close writes what is still queued and stops. Entries added afterwards
// are dropped.
func (s *RequestLog) Close() {
	s.once.Do(func() { close(s.closing) })
	<-s.done
}

// LogEntryJSON is one logged request as mcpgate shows it in JSON (`mcpgate
// log --json`, the shared gateway's /api/log).
type LogEntryJSON struct {
	Time       time.Time `json:"time"`
	Server     string    `json:"server"`
	Method     string    `json:"method"`
	Tool       string    `json:"tool,omitempty"`
	DurationMs float64   `json:"durationMs"`
	Outcome    string    `json:"outcome"`
	HTTPStatus int       `json:"httpStatus,omitempty"`
	BytesIn    int64     `json:"bytesIn"`
	BytesOut   int64     `json:"bytesOut"`
}

// LogJSON converts stored entries to their JSON form; never nil.
func LogJSON(entries []*store.LogEntry) []LogEntryJSON {
	out := make([]LogEntryJSON, len(entries))
	for i, e := range entries {
		out[i] = LogEntryJSON{
			Time: e.Time, Server: e.Server, Method: e.Method, Tool: e.Tool,
			DurationMs: float64(e.Duration.Microseconds()) / 1000, Outcome: e.Outcome,
			HTTPStatus: e.HTTPStatus, BytesIn: e.BytesIn, BytesOut: e.BytesOut,
		}
	}
	return out
}
