package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate/store/sqlite"
)

// BenchmarkOpen opens and closes a store that exists already, as every
// command does.
//
//	go test -run '^$' -bench Open ./store/sqlite/
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
