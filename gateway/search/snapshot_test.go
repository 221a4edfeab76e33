package search

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reloaded writes ix down and reads it back.
func reloaded(t testing.TB, ix *Index) *Index {
	t.Helper()
	b, err := ix.AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// sameRanking fails unless a and b answer every query with the same
// documents, in the same order, with the same scores to the bit.
func sameRanking(t *testing.T, what string, a, b *Index, queries []string) {
	t.Helper()
	for _, q := range queries {
		if got, want := b.Search(q, 20), a.Search(q, 20); !cmp.Equal(got, want) {
			t.Errorf("%s, %q: %v, want %v", what, q, got, want)
		}
	}
}

// TestSnapshotRanksAsTheIndexWritten: an index read back from its
// snapshot ranks every query exactly as the index written, also after
// servers were replaced (removed documents, forgotten terms, reused IDs),
// and goes on being replaced the same way.
func TestSnapshotRanksAsTheIndexWritten(t *testing.T) {
	docs := replaceCatalog()
	ix := New(docs)
	sameRanking(t, "fresh", ix, reloaded(t, ix), replaceQueries)

	ix.Replace("slack", []Doc{{Server: "slack", Tool: "post_message", Description: "Post a chat message"}})
	ix.Replace("sentry", nil) // "error", "project" are forgotten
	back := reloaded(t, ix)
	sameRanking(t, "after replacing", ix, back, replaceQueries)

	more := []Doc{{Server: "sentry", Tool: "list_projects", Description: "List the projects and their errors"}}
	if a, b := ix.Replace("sentry", more), back.Replace("sentry", more); !cmp.Equal(a, b) {
		t.Errorf("replacing after reading back gave IDs %v, the original %v", b, a)
	}
	sameRanking(t, "replaced after reading back", ix, back, replaceQueries)
}

// TestSnapshotOfTheCatalog: the same for the 749 tools of the shared
// catalog and all 150 dev queries.
func TestSnapshotOfTheCatalog(t *testing.T) {
	d := data(t)
	ix := New(d.docs)
	var queries []string
	for _, q := range d.queries {
		queries = append(queries, q.text)
	}
	sameRanking(t, "the catalog", ix, reloaded(t, ix), queries)
}

// TestLoadRefusesWhatIsNotASnapshot: every cut of a snapshot, and other
// bytes, are refused with ErrSnapshot (never a partial index, never a
// panic); so is an index of another model.
func TestLoadRefusesWhatIsNotASnapshot(t *testing.T) {
	b, err := New(replaceCatalog()).AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	withInstructions, err := New(twoSchedules(true)).AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{b, withInstructions} {
		for n := range len(b) {
			if ix, err := Load(b[:n]); !errors.Is(err, ErrSnapshot) || ix != nil {
				t.Fatalf("Load of the first %d of %d bytes: %v, %v", n, len(b), ix, err)
			}
		}
	}
	if _, err := Load(append(b[:len(b):len(b)], 0)); !errors.Is(err, ErrSnapshot) {
		t.Errorf("Load with a byte more: %v", err)
	}
	// Two terms of one text, as a snapshot written by no index has.
	twins, err := New([]Doc{{Server: "s", Tool: "qqqq"}, {Server: "s", Tool: "zzzz"}}).AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(twins, []byte("zzzz")) {
		t.Fatal("the terms are not in the snapshot as written")
	}
	if _, err := Load(bytes.ReplaceAll(twins, []byte("zzzz"), []byte("qqqq"))); !errors.Is(err, ErrSnapshot) {
		t.Errorf("Load of two terms of one text: %v", err)
	}
	if _, err := Load([]byte(`{"not":"an index"}`)); !errors.Is(err, ErrSnapshot) {
		t.Errorf("Load of JSON: %v", err)
	}
	if _, err := newIndex(replaceCatalog(), defaultConfig).AppendSnapshot(nil); err == nil {
		t.Error("an index of a test's model was written")
	}
}

// FuzzLoad: whatever the bytes, Load returns an index or an error, and an
// index it returns can be searched, written down and read back the same,
// and changed.
func FuzzLoad(f *testing.F) {
	b, err := New(replaceCatalog()).AppendSnapshot(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if b, err = New(twoSchedules(true)).AppendSnapshot(nil); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Load(data)
		if err != nil {
			return
		}
		var hits [][]Hit
		for _, q := range replaceQueries {
			hits = append(hits, ix.Search(q, 5))
		}
		again, err := ix.AppendSnapshot(nil)
		if err != nil {
			t.Fatalf("a loaded index cannot be written down: %v", err)
		}
		back, err := Load(again)
		if err != nil {
			t.Fatalf("a loaded index's snapshot does not load: %v", err)
		}
		for i, q := range replaceQueries {
			if got := back.Search(q, 5); !cmp.Equal(got, hits[i]) {
				t.Fatalf("%q read back: %v, want %v", q, got, hits[i])
			}
		}
		for server := range ix.byServer {
			ix.Replace(server, []Doc{{Server: server, Tool: "list_things", Description: "List the things"}})
			break
		}
		for _, q := range replaceQueries {
			ix.Search(q, 5)
		}
	})
}
