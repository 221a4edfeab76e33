package names

import (
	"slices"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	tools := []string{"echo", "add", "slow", "fail", "search_issues", "create_issue"}
	cases := []struct {
		name string
		want []string
	}{
		{"ecko", []string{"echo"}},
		{"issue", []string{"create_issue", "search_issues"}},
		{"Create_Issue", []string{"create_issue"}},
		{"zzzzzzzz", []string{}},
	}
	for _, c := range cases {
		if got := Closest(c.name, tools, 3); !slices.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestClosestDoesNotMeasureWhatCannotBeClose: a name far longer than every
// candidate (a model's pasted text as a tool name) is measured against
// none of them, whose distance would cost the product of both lengths; a
// candidate it contains is still suggested.
func TestClosestDoesNotMeasureWhatCannotBeClose(t *testing.T) {
	var tools []string
	for i := range 200 {
		tools = append(tools, "tool_"+strings.Repeat("x", i%30))
	}
	tools = append(tools, "create_issue")
	long := strings.Repeat("please ", 20000) + "create_issue"
	if got := Closest(long, tools, 3); !slices.Equal(got, []string{"create_issue"}) {
		t.Errorf("Closest(a long text naming create_issue) = %q", got)
	}
	// Each distance allocates its two rows; the long name's copy in lower
	// case and the result are the only other allocations.
	if allocs := testing.AllocsPerRun(5, func() { Closest(long, tools, 3) }); allocs > 10 {
		t.Errorf("Closest of a long name made %v allocations over %d candidates: it measured distances", allocs, len(tools))
	}
}
