package fake

import "testing"

// BenchmarkStart is what each test pays for a fake server: its catalog's
// tools, prompts and resources registered, a listener on loopback.
//
//	go test -run '^$' -bench Start -benchmem ./internal/fake/
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		s, err := newServer(nil)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
