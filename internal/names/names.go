// Package names suggests the closest known names for a mistyped one.
package names

import (
	"sort"
	"strings"
)

// Closest returns up to n candidates nearest to name, best first: those
// containing it or contained in it, then those within an edit distance of
// a third of the name's length. Case is ignored.
func Closest(name string, candidates []string, n int) []string {
	type scored struct {
		s string
		d int
	}
	lname := strings.ToLower(name)
	limit := max(2, len(lname)/3)
	var out []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		// The distance is at least the difference in length: past the
		// limit it is not worth its product of lengths, which for a name
		// pasted whole would be the square of its size.
		d := limit + 1
		if abs(len(lname)-len(lc)) <= limit {
			d = distance(lname, lc)
		}
		if lname != "" && (strings.Contains(lc, lname) || strings.Contains(lname, lc)) {
			d = min(d, 1)
		}
		if d <= limit {
			out = append(out, scored{c, d})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].s < out[j].s
	})
	res := make([]string, 0, n)
	for i := 0; i < len(out) && i < n; i++ {
		res = append(res, out[i].s)
	}
	return res
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
