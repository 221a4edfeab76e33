package serve

import "time"

// SetParking changes how long and how many calls may wait for a host's
// retry, until the test ends.
func SetParking(t interface{ Cleanup(func()) }, ttl time.Duration, max int) {
	oldTTL, oldMax := parkTTL, maxParked
	parkTTL, maxParked = ttl, max
	t.Cleanup(func() { parkTTL, maxParked = oldTTL, oldMax })
}

// FastCalls is how many requests the stdio fast path of f's last Run
// answered.
func FastCalls(f *Front) int64 {
	if p := f.fast.Load(); p != nil {
		return p.served.Load()
	}
	return 0
}

// DirectTools is how many bridged tools f's mirror holds.
func DirectTools(f *Front) int {
	f.regMu.Lock()
	defer f.regMu.Unlock()
	return len(f.direct)
}
