package sqlite_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mcpgate/mcpgate/store/sqlite"
)

// BenchmarkOpen opens and closes a store that exists already, as every
// command does.
//
//	go test -run '^$' -bench 'Open|Create' ./store/sqlite/
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "mcpgate.db")
	sl := sealer(b, 1)
	open(b, path, sl).Close()
	b.ReportAllocs()
	for b.Loop() {
		s, err := sqlite.Open(path, sl)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkCreate opens and closes a new store in a new directory each
// time: from the second on, a copy of the empty store.
func BenchmarkCreate(b *testing.B) {
	dir := b.TempDir()
	sl := sealer(b, 1)
	i := 0
	for b.Loop() {
		i++
		s, err := sqlite.Open(filepath.Join(dir, strconv.Itoa(i), "mcpgate.db"), sl)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
