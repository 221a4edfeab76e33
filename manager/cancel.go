package manager

import (
	"context"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
)

// operations tracks calls by operation ID so Cancel can reach them. A cancel
// that arrives before its call is admitted is remembered, in a record bounded
// in size and age, so the call is refused when it arrives: the person who
// pressed stop must win even if the stop overtook the call.
type operations struct {
	mu      sync.Mutex
	active  map[string]context.CancelCauseFunc
	early   map[string]time.Time // operation ID → when its cancel arrived
	order   []string             // early IDs, oldest first
	maxKept int
	maxAge  time.Duration
	now     func() time.Time
}

func newOperations() *operations {
	return &operations{
		active:  make(map[string]context.CancelCauseFunc),
		early:   make(map[string]time.Time),
		maxKept: 1024,
		maxAge:  10 * time.Minute,
		now:     time.Now,
	}
}

// admit registers a call. It fails if the call was cancelled before it
// arrived or its ID is already in use; release must be called when the call
// ends.
func (o *operations) admit(id string, cancel context.CancelCauseFunc) (release func(), err error) {
	if id == "" {
		return func() {}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expireLocked()
	if _, ok := o.early[id]; ok {
		delete(o.early, id)
		return nil, &mcpgate.Error{Category: mcpgate.CategoryCancelled, Message: "call cancelled before it started", Err: errCallCancelled}
	}
	if _, ok := o.active[id]; ok {
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "operation ID %q is already in use by a running call", id)
	}
	o.active[id] = cancel
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.active, id)
	}, nil
}

// cancel cancels the active call with this ID, or remembers the ID so the
// call is refused when it is admitted.
func (o *operations) cancel(id string) {
	if id == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if c, ok := o.active[id]; ok {
		c(errCallCancelled)
		return
	}
	o.expireLocked()
	if _, ok := o.early[id]; ok {
		return
	}
	if len(o.order) >= o.maxKept {
		// Evict the oldest still-remembered cancel.
		for len(o.order) > 0 && len(o.order) >= o.maxKept {
			delete(o.early, o.order[0])
			o.order = o.order[1:]
		}
	}
	o.early[id] = o.now()
	o.order = append(o.order, id)
}

// expireLocked forgets cancels older than maxAge and compacts the order.
func (o *operations) expireLocked() {
	cutoff := o.now().Add(-o.maxAge)
	i := 0
	for ; i < len(o.order); i++ {
		t, ok := o.early[o.order[i]]
		if ok && t.After(cutoff) {
			break
		}
		delete(o.early, o.order[i])
	}
	o.order = o.order[i:]
	// Drop IDs already consumed by admit from the front of order lazily:
	// they no longer appear in early and are skipped above.
}

// remembered returns how many early cancels are kept (for tests).
func (o *operations) remembered() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.early)
}
