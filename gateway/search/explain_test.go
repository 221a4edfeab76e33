package search

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

var explainQuery = flag.String("search.explain", "", "explain the ranking of this query (tuning aid)")

// TestExplain prints, for -search.explain=QUERY, the concepts read from the
// query and each top hit's score per concept.
func TestExplain(t *testing.T) {
	if *explainQuery == "" {
		t.Skip("no -search.explain query")
	}
	d := data(t)
	ix := New(d.docs)
	cs := ix.concepts(*explainQuery)
	rev := map[int32]string{}
	for term, id := range ix.ids {
		rev[id] = term
	}
	for _, c := range cs {
		var alts []string
		for _, a := range c.alts {
			var ts []string
			for _, id := range a.terms {
				ts = append(ts, fmt.Sprintf("%s(idf %.2f)", rev[id], ix.idf[id]))
			}
			alts = append(alts, fmt.Sprintf("%.2f*[%s]", a.weight, strings.Join(ts, " ")))
		}
		t.Logf("concept %q: %s", c.key, strings.Join(alts, " | "))
	}
	for _, h := range ix.Search(*explainQuery, 10) {
		var parts []string
		for _, c := range cs {
			best := 0.0
			for _, a := range c.alts {
				s := 0.0
				for _, id := range a.terms {
					for _, p := range ix.postings[id] {
						if int(p.doc) == h.Doc {
							s += a.weight * ix.idf[id] * float64(p.sat)
						}
					}
				}
				best = max(best, s)
			}
			if best > 0 {
				parts = append(parts, fmt.Sprintf("%s=%.2f", c.key, best))
			}
		}
		t.Logf("%-45s %.2f  %s", d.names[h.Doc], h.Score, strings.Join(parts, " "))
	}
}
