package search

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// twoSchedules is two servers with the same tool; only what each server
// says of itself tells them apart.
func twoSchedules(withInstructions bool) []Doc {
	docs := []Doc{
		{Server: "north", Tool: "list_schedules", Description: "List schedules."},
		{Server: "north", Tool: "get_room", Description: "Get a room by its number."},
		{Server: "south", Tool: "list_schedules", Description: "List schedules."},
		{Server: "south", Tool: "get_escalation_policy", Description: "Get an escalation policy."},
	}
	if withInstructions {
		for i := range docs {
			docs[i].ServerInstructions = map[string]string{
				"north": "Class timetables for a university: lectures, teachers and rooms.",
				"south": "On-call rotations and alerting for incident response.",
			}[docs[i].Server]
		}
	}
	return docs
}

func first(t *testing.T, ix *Index, docs map[int]Doc, q string) string {
	t.Helper()
	hits := ix.Search(q, 5)
	if len(hits) == 0 {
		t.Fatalf("%q: no hits", q)
	}
	d := docs[hits[0].Doc]
	return d.Server + "/" + d.Tool
}

func byID(docs []Doc) map[int]Doc {
	m := map[int]Doc{}
	for i, d := range docs {
		m[i] = d
	}
	return m
}

// TestInstructionsLeanTowardsTheirServer: of two tools alike, the one
// whose server's instructions have the words of the need the tool lacks
// comes first; without instructions the tie keeps catalog order.
func TestInstructionsLeanTowardsTheirServer(t *testing.T) {
	const q = "list the schedules of the on-call rotations"
	plain := twoSchedules(false)
	if got := first(t, New(plain), byID(plain), q); got != "north/list_schedules" {
		t.Fatalf("without instructions: %s first, want the tie kept in catalog order (north)", got)
	}
	docs := twoSchedules(true)
	ix := New(docs)
	if got := first(t, ix, byID(docs), q); got != "south/list_schedules" {
		t.Errorf("with instructions: %s first, want south/list_schedules", got)
	}
	if got := first(t, ix, byID(docs), "list schedules of the lectures"); got != "north/list_schedules" {
		t.Errorf("lectures: %s first, want north/list_schedules", got)
	}
	off := defaultConfig
	off.instructions = 0
	if got := first(t, newIndex(docs, off), byID(docs), q); got != "north/list_schedules" {
		t.Errorf("with the part switched off: %s first, want north", got)
	}
}

// TestInstructionsAreNeverAHit: a server's instructions are not a
// document to be found, nor do they bring in a tool that shares no word
// with the need; the index counts tools only.
func TestInstructionsAreNeverAHit(t *testing.T) {
	docs := twoSchedules(true)
	ix := New(docs)
	if n := ix.Len(); n != len(docs) {
		t.Errorf("Len = %d, want the %d tools", n, len(docs))
	}
	for _, q := range []string{"incident response", "alerting", "university lectures teachers"} {
		if hits := ix.Search(q, 10); len(hits) != 0 {
			t.Errorf("%q (words only instructions have): %v, want no hits", q, hits)
		}
	}
	// Where the instructions have no concept a tool lacks, every score is
	// the one an index without them gives, to the bit: they are in no
	// document frequency and no field's average length.
	without := New(twoSchedules(false))
	for _, q := range []string{"get a room by its number", "get an escalation policy", "list schedules"} {
		if got, want := ix.Search(q, 10), without.Search(q, 10); !cmp.Equal(got, want) {
			t.Errorf("%q: %v, want as without instructions %v", q, got, want)
		}
	}
	for _, h := range ix.Search("list schedules, rooms and policies for on-call incident response", 10) {
		if _, ok := byID(docs)[h.Doc]; !ok {
			t.Errorf("hit %d is not one of the tools", h.Doc)
		}
	}
}

// TestInstructionsCannotOutrankWhatAToolSaysItself: a hostile server whose
// instructions repeat every word there is lifts none of its tools above
// one that has the need's words itself.
func TestInstructionsCannotOutrankWhatAToolSaysItself(t *testing.T) {
	stuffed := strings.Repeat("list schedules on-call rotations incident paging escalation policy ", 50)
	docs := append(twoSchedules(true),
		Doc{Server: "spam", Tool: "list_items", Description: "List items.", ServerInstructions: stuffed},
		Doc{Server: "spam", Tool: "get_item", Description: "Get an item.", ServerInstructions: stuffed},
	)
	ix := New(docs)
	for q, want := range map[string]string{
		"list the schedules of the on-call rotations": "south/list_schedules",
		"get the escalation policy":                   "south/get_escalation_policy",
	} {
		if got := first(t, ix, byID(docs), q); got != want {
			t.Errorf("%q: %s first, want %s", q, got, want)
		}
	}
}

// TestReplaceChangesInstructions: a server replaced with other
// instructions, or none, ranks as an index built afresh from the new
// documents, and a snapshot of it reads back the same.
func TestReplaceChangesInstructions(t *testing.T) {
	const q = "list the schedules of the on-call rotations"
	docs := twoSchedules(true)
	ix := New(docs)
	ids := byID(docs)
	plain := twoSchedules(false)
	for i, id := range ix.Replace("south", plain[2:]) {
		ids[id] = plain[2+i]
	}
	if got := first(t, ix, ids, q); got != "north/list_schedules" {
		t.Errorf("south's instructions removed: %s first, want north", got)
	}
	if n := ix.Len(); n != len(docs) {
		t.Errorf("Len after Replace = %d, want %d", n, len(docs))
	}
	for i, id := range ix.Replace("south", docs[2:]) {
		ids[id] = docs[2+i]
	}
	if got := first(t, ix, ids, q); got != "south/list_schedules" {
		t.Errorf("south's instructions back: %s first, want south", got)
	}
	back := reloaded(t, ix)
	if n := back.Len(); n != len(docs) {
		t.Errorf("Len read back = %d, want %d", n, len(docs))
	}
	queries := []string{q, "list schedules of the lectures", "escalation", "rooms", "incident response"}
	sameRanking(t, "instructions replaced, read back", ix, back, queries)
	fresh := New(docs)
	for _, q := range queries {
		var got, want []string
		for _, h := range ix.Search(q, 5) {
			got = append(got, ids[h.Doc].Server+"/"+ids[h.Doc].Tool)
		}
		for _, h := range fresh.Search(q, 5) {
			want = append(want, docs[h.Doc].Server+"/"+docs[h.Doc].Tool)
		}
		if !cmp.Equal(got, want) {
			t.Errorf("%q after replacing: %v, want as a fresh index %v", q, got, want)
		}
	}
}

// TestLoadRefusesInstructionsOfAnotherServer: a snapshot whose tool
// points at another server's instructions is not a snapshot.
func TestLoadRefusesInstructionsOfAnotherServer(t *testing.T) {
	ix := New(twoSchedules(true))
	ix.prior[0] = ix.prior[2] // north's first tool, south's instructions
	b, err := ix.AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(b); err == nil {
		t.Error("Load took a tool pointing at another server's instructions")
	}
}
