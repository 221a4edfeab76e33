package names

import (
	"slices"
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
