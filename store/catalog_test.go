package store

import "testing"

// TestCountsRoundTrip: what EncodeCounts writes DecodeCounts reads back,
// as it reads the JSON arrays stores wrote before (spaces included), and
// anything that is not four counts is an error.
func TestCountsRoundTrip(t *testing.T) {
	want := [4]int{749, 0, 12, 3}
	var got [4]int
	if err := DecodeCounts(EncodeCounts(want), &got); err != nil || got != want {
		t.Errorf("round trip: %v %v, want %v", got, err, want)
	}
	if err := DecodeCounts("[1, 2, 3, 4]", &got); err != nil || got != [4]int{1, 2, 3, 4} {
		t.Errorf("with spaces: %v %v", got, err)
	}
	for _, bad := range []string{"", "[]", "[1,2,3]", "[1,2,3,4,5]", "[1,x,3,4]", "[-1,0,0,0]"} {
		if err := DecodeCounts(bad, &got); err == nil {
			t.Errorf("DecodeCounts(%q) accepted", bad)
		}
	}
}
