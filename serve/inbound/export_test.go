package inbound

import (
	"testing"
	"time"
)

// SetNow replaces the clock for the rest of the test.
func SetNow(t testing.TB, now func() time.Time) {
	old := timeNow
	timeNow = now
	t.Cleanup(func() { timeNow = old })
}

// Timings the tests step over.
const (
	TouchEvery        = touchEvery
	DiscoveryRetry    = discoveryRetry
	DefaultKeyRefresh = defaultKeyRefresh
)
