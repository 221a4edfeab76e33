package serve

import "time"

// SetParking changes how long and how many calls may wait for a host's
// retry, until the test ends.
func SetParking(t interface{ Cleanup(func()) }, ttl time.Duration, max int) {
	oldTTL, oldMax := parkTTL, maxParked
	parkTTL, maxParked = ttl, max
	t.Cleanup(func() { parkTTL, maxParked = oldTTL, oldMax })
}
