package cli

import (
	"runtime"
	"slices"
	"testing"
)

func TestProcessorsAreLentForBursts(t *testing.T) {
	t.Parallel()
	var set []int
	p := &processors{all: 4, setTo: func(n int) { set = append(set, n) }}
	first := p.lend()
	second := p.lend()
	first()
	first() // a second call of a done changes nothing
	if !slices.Equal(set, []int{4}) {
		t.Fatalf("with one of two bursts ended, the processors were set to %v; want [4]", set)
	}
	second()
	third := p.lend()
	third()
	if want := []int{4, 1, 4, 1}; !slices.Equal(set, want) {
		t.Fatalf("the processors were set to %v; want %v", set, want)
	}
}

// TestOneProcessorOnlyInAProcessOfItsOwn: serve changes the process's
// processors only when Main owns the process and GOMAXPROCS is not set.
// Not parallel: it sets the test process's own.
func TestOneProcessorOnlyInAProcessOfItsOwn(t *testing.T) {
	was := runtime.GOMAXPROCS(2)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	if lend := (&App{Getenv: env(nil)}).oneProcessor(); lend != nil || runtime.GOMAXPROCS(0) != 2 {
		t.Fatalf("not owning the process: lend %v, %d processors; want nil and 2 untouched", lend != nil, runtime.GOMAXPROCS(0))
	}
	if lend := (&App{Getenv: env(map[string]string{"GOMAXPROCS": "2"}), ownsProcess: true}).oneProcessor(); lend != nil || runtime.GOMAXPROCS(0) != 2 {
		t.Fatalf("with GOMAXPROCS set: lend %v, %d processors; want nil and 2 untouched", lend != nil, runtime.GOMAXPROCS(0))
	}
	lend := (&App{Getenv: env(nil), ownsProcess: true}).oneProcessor()
	if lend == nil || runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("owning the process: lend %v, %d processors; want a lend and 1", lend != nil, runtime.GOMAXPROCS(0))
	}
	done := lend()
	if n := runtime.GOMAXPROCS(0); n != 2 {
		t.Fatalf("during a burst: %d processors; want the 2 the process had", n)
	}
	done()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("after the burst: %d processors; want 1", n)
	}
	if lend := (&App{Getenv: env(nil), ownsProcess: true}).oneProcessor(); lend != nil {
		t.Fatal("on one processor already: want no lend")
	}
}
