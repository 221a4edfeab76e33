package ops

import "time"

// SetNow replaces the clocks of a limiter and an audit log, so refill and
// coalescing are tested without sleeping.
func (l *Limiter) SetNow(now func() time.Time) { l.now = now }
func (a *Audit) SetNow(now func() time.Time)   { a.now = now }
func (h *Health) SetNow(now func() time.Time)  { h.now = now }
