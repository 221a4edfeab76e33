package search

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func replaceCatalog() []Doc {
	return []Doc{
		{Server: "github", Tool: "create_issue", Description: "Create a new issue in a repository"},
		{Server: "github", Tool: "list_pull_requests", Description: "List pull requests of a repository"},
		{Server: "slack", Tool: "post_message", Description: "Post a message to a channel"},
		{Server: "slack", Tool: "list_channels", Description: "List the channels of a workspace"},
		{Server: "sentry", Tool: "search_issues", Description: "Search the error issues of a project"},
	}
}

// named is a search's hits as tool names with scores, through ids (doc ID
// to tool).
type named struct {
	Tool  string
	Score float64
}

func searchNamed(ix *Index, ids map[int]string, q string) []named {
	var out []named
	for _, h := range ix.Search(q, 10) {
		out = append(out, named{ids[h.Doc], h.Score})
	}
	return out
}

func idsOf(docs []Doc) map[int]string {
	m := map[int]string{}
	for i, d := range docs {
		m[i] = d.Tool
	}
	return m
}

var replaceQueries = []string{"open an issue", "list pull requests", "send a message to a channel", "errors in sentry", "channels", "workspace"}

func TestReplaceWithSameDocsChangesNothing(t *testing.T) {
	docs := replaceCatalog()
	ix, fresh := New(docs), New(docs)
	ids := idsOf(docs)
	for i, id := range ix.Replace("slack", docs[2:4]) {
		ids[id] = docs[2+i].Tool
	}
	for _, q := range replaceQueries {
		if got, want := searchNamed(ix, ids, q), searchNamed(fresh, idsOf(docs), q); !cmp.Equal(got, want) {
			t.Errorf("%q after replacing slack by itself: %v, want %v", q, got, want)
		}
	}
}

// TestReplaceIsAFreshIndex replaces a server by tools whose fields are as
// long as the old ones, so that the field-length averages stay put: then
// the replaced index scores exactly as one built afresh, document
// frequencies and all.
func TestReplaceIsAFreshIndex(t *testing.T) {
	docs := replaceCatalog()
	ix := New(docs)
	repl := []Doc{
		{Server: "slack", Tool: "send_reminder", Description: "Remind a workspace member"},
		{Server: "slack", Tool: "list_users", Description: "List the members of a workspace"},
	}
	ids := ix.Replace("slack", repl)
	after := make([]Doc, len(docs))
	copy(after, docs)
	for i, id := range ids {
		after[id] = repl[i]
	}
	fresh := New(after)
	for _, q := range append(replaceQueries, "remind me", "members", "post a message") {
		if got, want := searchNamed(ix, idsOf(after), q), searchNamed(fresh, idsOf(after), q); !cmp.Equal(got, want) {
			t.Errorf("%q after Replace: %v, want as a fresh index %v", q, got, want)
		}
	}
	if !cmp.Equal(ix.vocab, fresh.vocab) {
		t.Errorf("vocabulary after Replace %q, want as a fresh index %q", ix.vocab, fresh.vocab)
	}
	// Replacing a server by itself keeps its terms once.
	ix.Replace("slack", repl)
	if !cmp.Equal(ix.vocab, fresh.vocab) {
		t.Errorf("vocabulary after replacing slack by itself %q, want %q", ix.vocab, fresh.vocab)
	}
	if hits := ix.Search("post message", 10); len(hits) > 0 && after[hits[0].Doc].Tool == "post_message" {
		t.Errorf("post_message was replaced but is still found")
	}
}

func TestReplaceRemovesAndAdds(t *testing.T) {
	docs := replaceCatalog()
	ix := New(docs)
	if got := ix.Replace("slack", nil); len(got) != 0 {
		t.Errorf("Replace(slack, nil) = %v, want no IDs", got)
	}
	// "channel" was only slack's.
	if hits := ix.Search("channels", 5); len(hits) != 0 {
		t.Errorf("channels after removing slack: %v, want none", hits)
	}
	for _, h := range ix.Search("list post message", 10) {
		if docs[h.Doc].Server == "slack" {
			t.Errorf("removed %s still found", docs[h.Doc].Tool)
		}
	}
	// A server the index did not have is added; removed IDs are reused.
	ids := ix.Replace("linear", []Doc{{Server: "linear", Tool: "create_ticket", Description: "Open a ticket"}, {Server: "linear", Tool: "x", Description: "y"}, {Server: "linear", Tool: "z"}})
	if want := []int{2, 3, 5}; !cmp.Equal(ids, want) {
		t.Errorf("Replace(linear) IDs = %v, want %v", ids, want)
	}
	if hits := ix.Search("ticket", 5); len(hits) == 0 || hits[0].Doc != 2 {
		t.Errorf("ticket: %v, want the new linear tool (ID 2) first", hits)
	}
	// Unknown servers remove nothing.
	ix.Replace("nobody", nil)
	if hits := ix.Search("pull requests", 5); len(hits) == 0 || hits[0].Doc != 1 {
		t.Errorf("pull requests: %v, want list_pull_requests first", hits)
	}
}

// TestReplaceWhileSearching is for the race detector.
func TestReplaceWhileSearching(t *testing.T) {
	docs := replaceCatalog()
	ix := New(docs)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				ix.Search(replaceQueries[(g+i)%len(replaceQueries)], 3)
			}
		})
	}
	for i := range 50 {
		var repl []Doc
		for j := range i % 4 {
			repl = append(repl, Doc{Server: "slack", Tool: fmt.Sprintf("tool_%d", j), Description: "Post to channels"})
		}
		ix.Replace("slack", repl)
	}
	wg.Wait()
}

// TestReplacePostingsAsFresh replaces servers by more documents, fewer and
// none, and checks that every term's postings name the documents a fresh
// index of the same documents, at the same IDs, has.
func TestReplacePostingsAsFresh(t *testing.T) {
	docs := replaceCatalog()
	ix := New(docs)
	layout := append([]Doc(nil), docs...) // by ID; a removed ID holds Doc{}
	replace := func(server string, repl []Doc) {
		for id, d := range layout {
			if d.Server == server {
				layout[id] = Doc{}
			}
		}
		for i, id := range ix.Replace(server, repl) {
			for id >= len(layout) {
				layout = append(layout, Doc{})
			}
			layout[id] = repl[i]
		}
	}
	more := func(server string, n int) []Doc {
		var out []Doc
		for i := range n {
			out = append(out, Doc{Server: server, Tool: fmt.Sprintf("%s_tool_%d", server, i), Description: fmt.Sprintf("List channels and issues, number %d", i)})
		}
		return out
	}
	replace("slack", more("slack", 4)) // two IDs reused, two new
	replace("github", more("github", 1))
	replace("linear", more("linear", 2))
	replace("slack", nil)
	replace("sentry", more("sentry", 3))
	fresh := New(layout)
	docIDs := func(ix *Index) map[string][]int32 {
		m := map[string][]int32{}
		for term, id := range ix.ids {
			for _, p := range ix.postings[id] {
				m[term] = append(m[term], p.doc)
			}
		}
		return m
	}
	if got, want := docIDs(ix), docIDs(fresh); !cmp.Equal(got, want) {
		t.Errorf("postings after Replace:\n%v\nwant as a fresh index:\n%v", got, want)
	}
	if ix.n != 6 {
		t.Errorf("%d documents, want 6", ix.n)
	}
}
