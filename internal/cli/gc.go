package cli

import (
	"math"
	"runtime/debug"
)

// collection is how the garbage collector of an mcpgate process runs.
type collection int

const (
	// collectOneShot is a command that answers and exits (search, list,
	// call): collecting would only spend its time, so it collects only if
	// its heap reaches oneShotLimit.
	collectOneShot collection = iota
	// collectLongLived is a process that serves one person for long
	// (serve on stdio, ui). Every message through it is decoded by the
	// go-sdk with a fresh decoder and its 32 KiB buffer (about 1.2 MB of
	// garbage a call on the whole path, BenchmarkServeInProcess) while
	// it keeps little, so at the default GOGC of 100 the collector runs
	// every few calls. A target of five times the live heap, under a
	// soft limit, collects a fifth as often for a few tens of MiB.
	collectLongLived
	// collectShared is serve --http, whose heap grows with the people it
	// serves: the runtime's defaults, which operators tune with GOGC and
	// GOMEMLIMIT like any Go service's.
	collectShared
)

// oneShotLimit bounds the heap of a command that does not collect, and of
// a long-lived process before it collects as often as the default.
const oneShotLimit = 512 << 20

// collect sets the collector for the kind of process this invocation is,
// when the invocation is the whole process (Main, not a test or a
// program embedding the CLI) and neither GOGC nor GOMEMLIMIT says
// otherwise.
func (a *App) collect(kind collection) {
	if !a.ownsProcess || a.Getenv("GOGC") != "" || a.Getenv("GOMEMLIMIT") != "" {
		return
	}
	switch kind {
	case collectOneShot:
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(oneShotLimit)
	case collectLongLived:
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(oneShotLimit)
	case collectShared:
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
