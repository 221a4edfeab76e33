package serve

import (
	"context"
	"sync/atomic"
	"time"
)

// notifier writes notifications to the host on one goroutine, in order, so
// that the goroutine reading a remote server's stream never waits for the
// host. When the queue is full a notification is dropped: progress and log
// messages are advisory.
type notifier struct {
	queue   chan func()
	running atomic.Bool
}

func newNotifier() *notifier { return &notifier{queue: make(chan func(), 256)} }

// run writes queued notifications until ctx ends.
func (n *notifier) run(ctx context.Context) {
	n.running.Store(true)
	defer n.running.Store(false)
	for {
		select {
		case fn := <-n.queue:
			fn()
		case <-ctx.Done():
			return
		}
	}
}

// send queues fn; it reports false when fn was dropped.
func (n *notifier) send(fn func()) bool {
	if !n.running.Load() {
		return false
	}
	select {
	case n.queue <- fn:
		return true
	default:
		return false
	}
}

// flush waits, at most d, until what is queued now has been written.
func (n *notifier) flush(d time.Duration) {
	done := make(chan struct{})
	if !n.send(func() { close(done) }) {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
