package search

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzSearch: whatever a person or a model types, a search returns at most
// the hits asked for, each a document of the index, best first, with a
// finite score, and the same hits for the same query.
func FuzzSearch(f *testing.F) {
	docs := append(replaceCatalog(),
		Doc{Server: "web", Tool: "fetch", Description: "Fetches a URL from the internet",
			Params: []Param{{Name: "url", Required: true}}},
		Doc{Server: "vcs", Tool: "git_show", Description: "Shows the contents of a commit",
			Params: []Param{{Name: "repo_path", Required: true}, {Name: "revision", Required: true}}},
		Doc{Server: "k8s", Tool: "pods_exec", Description: "Execute a command in a pod",
			Params: []Param{{Name: "name", Required: true}, {Name: "command", Required: true}}},
		Doc{Server: "cal", Tool: "create_event", Title: "New event", Description: "Book a meeting",
			Params: []Param{{Name: "start", Description: "When it starts, RFC 3339"}}},
	)
	ix := New(docs)
	for _, q := range []string{
		"", "`", "``", "` `", "`a b", "run `cat /etc/hosts` in `web-1`",
		"what did a1b2c3d do", "-a1b2c3d-", "123e4567-e89b-12d3-a456-426614174000", "a1b2c3d e4f5a6b",
		`see "https://acme.slack.com/archives/C04`, "https://x", "://", "mail jane@acme.com about ENG-12",
		"~/notes/a.txt and acme/web-app", "Book a sync on Friday at 2pm saying 'hi'", "thumbs-up it",
		"don't send it", "日本語の検索", "\x00\xff", "called", "named 'x", "?", "a . b . c",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		const limit = 5
		hits := ix.Search(q, limit)
		if len(hits) > limit {
			t.Fatalf("Search(%q) gave %d hits, asked for %d", q, len(hits), limit)
		}
		for i, h := range hits {
			if h.Doc < 0 || h.Doc >= len(docs) {
				t.Fatalf("Search(%q) hit %d is document %d of %d", q, i, h.Doc, len(docs))
			}
			if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
				t.Fatalf("Search(%q) hit %d scores %v", q, i, h.Score)
			}
			if i > 0 && h.Score > hits[i-1].Score {
				t.Fatalf("Search(%q) is not best first: %v", q, hits)
			}
		}
		if again := ix.Search(q, limit); !cmp.Equal(again, hits) {
			t.Fatalf("Search(%q) twice: %v, then %v", q, hits, again)
		}
	})
}

// TestLongWordIsNotSplit: split looks for the two words a compound is made
// of ("codebase") only in words of compound length; trying every split
// point of a pasted token of thousands of letters cost its square.
func TestLongWordIsNotSplit(t *testing.T) {
	const l, r = "pneumonoultramicroscopic", "silicovolcanoconiosis"
	ix := New([]Doc{
		{Server: "a", Tool: "code", Description: "code"},
		{Server: "a", Tool: "base", Description: "base"},
		{Server: "a", Tool: "lung", Description: l + " " + r},
	})
	if _, ok := ix.split("codebase"); !ok {
		t.Error(`"codebase" is not split into code and base`)
	}
	if len(l+r) <= maxCompound {
		t.Fatalf("%q is not past maxCompound", l+r)
	}
	if _, ok := ix.split(l + r); ok {
		t.Errorf("%q, past maxCompound letters, is split", l+r)
	}
}
