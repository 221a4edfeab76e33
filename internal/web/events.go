package web

import (
	"net/http"
	"sync"
	"time"
)

// hub tells every open page that something changed. A signal carries no
// data: the page fetches the servers again, so a missed or merged signal
// loses nothing.
type hub struct {
	mu     sync.Mutex
	subs   map[chan struct{}]bool
	closed bool
	done   chan struct{}
}

func newHub() *hub { return &hub{subs: map[chan struct{}]bool{}, done: make(chan struct{})} }

// publish signals every subscriber without blocking; a subscriber that has
// a signal pending keeps just one.
func (h *hub) publish() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (h *hub) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.subs[c] = true
	}
	return c, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, c)
	}
}

// close ends every stream; it may be called more than once.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// heartbeat keeps idle streams from being cut by anything in between.
var heartbeat = 25 * time.Second

// serveEvents is /events: a server-sent event "changed" whenever a server
// changes state, and once at the start so a page that reconnects catches up.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	sig, unsubscribe := s.events.subscribe()
	defer unsubscribe()
	send := func(msg string) bool {
		if _, err := w.Write([]byte(msg)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\nevent: changed\ndata: {}\n\n") {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.events.done:
			return
		case <-tick.C:
			if !send(": keep-alive\n\n") {
				return
			}
		case <-sig:
			if !send("event: changed\ndata: {}\n\n") {
				return
			}
		}
	}
}
