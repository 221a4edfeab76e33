package cli

import (
	"runtime"
	"sync"
)

// A stdio serve process hands one host's messages between pipes, sockets
// and goroutines, and spends little of its time computing. With a
// processor (a P) per CPU, almost every handoff found one idle, and woke
// a thread to run there: the thread spun looking for work and slept
// again, and the goroutine it took ran on another CPU than the one that
// woke it. On one processor, a goroutine made ready waits for the running
// one to block, which on a call path is soon. BenchmarkServeCallLatency,
// 2 CPUs: the serve process's CPU per call fell by 12-18 % on every path,
// and a call's p50 by about 7 % (docs/performance.md).
//
// The process's own bursts of work, which run side by side on every CPU
// (mirroring a large catalog with --direct), are lent every processor
// while they run.

// oneProcessor puts the process on one processor and returns what lends
// it the processors it had for a burst of work (see serve.Options.Burst),
// or nil, changing nothing, when the invocation is not the whole process,
// GOMAXPROCS says how many to use, or there was one already.
func (a *App) oneProcessor() (lend func() (done func())) {
	if !a.ownsProcess || a.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	p := &processors{all: runtime.GOMAXPROCS(0)}
	if p.all <= 1 {
		return nil
	}
	runtime.GOMAXPROCS(1)
	return p.lend
}

// processors lends a process on one processor its others while bursts of
// work run.
type processors struct {
	all int // the processors the process had

	mu    sync.Mutex
	lent  int       // bursts running
	setTo func(int) // runtime.GOMAXPROCS, or a test's stand-in
}

// lend gives the process every processor until the last burst running
// calls its done; done may be called more than once.
func (p *processors) lend() (done func()) {
	p.mu.Lock()
	if p.lent++; p.lent == 1 {
		p.set(p.all)
	}
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.lent--; p.lent == 0 {
				p.set(1)
			}
			p.mu.Unlock()
		})
	}
}

func (p *processors) set(n int) {
	if p.setTo != nil {
		p.setTo(n)
		return
	}
	runtime.GOMAXPROCS(n)
}
