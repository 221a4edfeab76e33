package search

import (
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate/internal/nodetest"
)

// extraNeedsFile holds needs written for this repository after the dev
// queries' split, from the tuning servers' tool names alone, in the words
// a person would use rather than the catalog's (testdata/extra-needs.jsonl).
// No dev query was read to write them. They are a second visible set: the
// tuning aids may show them, and they widen what a choice is made on.
const extraNeedsFile = "testdata/extra-needs.jsonl"

// secondNeedsFile holds a second such set, written later (2026-12-06) the
// same way, for the same ten servers, without reading the dev queries (of
// the extra needs, its author had seen the six the model missed and the
// file's first five lines), and measured once before anything was changed
// for it: recall@5 0.870, MRR 0.714 (docs/performance.md).
const secondNeedsFile = "testdata/second-needs.jsonl"

// thirdNeedsFile holds 80 needs written (2026-12-06, late) for the ten
// held-out servers, eight each, by a writer that read only the catalog:
// no dev query, no other needs file, no search code. Users' servers are
// not the ones the model was tuned on, and the dev queries share their
// author's habits with the model; these share neither. Measured once
// before anything was looked at: recall@5 0.575, r@1 0.350, MRR 0.442
// (baseline 0.325). They are split in two by the same hash as the dev
// queries: the tuning aids may show the first half (43), never the
// second (37), which is only reported as a figure. The session that
// added them read all 80 once, to check their labels, before the split.
const thirdNeedsFile = "testdata/third-needs.jsonl"

// extraQueries reads the extra needs; every expected tool must be in d.
func extraQueries(tb testing.TB, d *evalData) []evalQuery {
	return needsQueries(tb, d, extraNeedsFile)
}

// secondQueries reads the second needs; every expected tool must be in d.
func secondQueries(tb testing.TB, d *evalData) []evalQuery {
	return needsQueries(tb, d, secondNeedsFile)
}

// thirdQueries reads the third needs, as the half the tuning aids may
// show and the half they never do.
func thirdQueries(tb testing.TB, d *evalData) (visible, held []evalQuery) {
	for _, q := range needsQueries(tb, d, thirdNeedsFile) {
		if tuningHalf(q.text) {
			visible = append(visible, q)
		} else {
			held = append(held, q)
		}
	}
	return visible, held
}

func needsQueries(tb testing.TB, d *evalData, file string) []evalQuery {
	tb.Helper()
	needs, err := readNeeds(file)
	if err != nil {
		tb.Fatal(err)
	}
	known := map[string]bool{}
	for _, n := range d.names {
		known[n] = true
	}
	var qs []evalQuery
	for _, q := range needs {
		eq := evalQuery{text: q.Query, expect: map[string]bool{}, tuning: true, servers: true}
		for _, e := range q.Expect {
			if !known[e] {
				tb.Fatalf("%s: %q expects %s, which the catalog does not have", file, q.Query, e)
			}
			eq.expect[e] = true
		}
		qs = append(qs, eq)
	}
	return qs
}

// evaluateQueries is recall@1, recall@5 and MRR@5 of rank over qs.
func evaluateQueries(d *evalData, qs []evalQuery, rank func(string) []int) metrics {
	m := metrics{n: len(qs)}
	for _, q := range qs {
		rr := reciprocalRank(d, q, rank(q.text))
		if rr == 1 {
			m.r1++
		}
		if rr > 0 {
			m.r5++
		}
		m.mrr += rr
	}
	if m.n > 0 {
		m.r1 /= float64(m.n)
		m.r5 /= float64(m.n)
		m.mrr /= float64(m.n)
	}
	return m
}

func TestExtraNeeds(t *testing.T) {
	d := data(t)
	ix := newIndex(d.docs, defaultConfig)
	t.Logf("model:    visible dev %v", evaluate(d, modelRanker(ix)).seen)
	thirdVisible, thirdHeld := thirdQueries(t, d)
	for _, set := range []struct {
		name   string
		qs     []evalQuery
		floor  float64 // two queries under what was measured, as the dev floors
		hidden bool    // never shown to the tuning aids
	}{
		{"extra needs", extraQueries(t, d), 0.87, false},         // 65 of 71 measured
		{"second needs", secondQueries(t, d), 0.89, false},       // 64 of 69 measured
		{"third needs, visible half", thirdVisible, 0.81, false}, // 37 of 43 measured (23 before the required URL or path, the host; 28 before their vocabulary, the command and the hash)
		{"third needs, held-out half", thirdHeld, 0.56, true},    // 23 of 37 measured
	} {
		m := evaluateQueries(d, set.qs, modelRanker(ix))
		t.Logf("model:    %s %v", set.name, m)
		t.Logf("baseline: %s %v", set.name, evaluateQueries(d, set.qs, baselineRanker(d.docs)))
		if m.r5 < set.floor {
			t.Errorf("%s recall@5 = %.3f, want >= %.2f", set.name, m.r5, set.floor)
		}
		if *showMisses && !set.hidden {
			logSetMisses(t, d, set.qs, ix)
		}
	}
}

// logSetMisses logs the needs of qs the model does not rank in its top five.
// Only for sets the tuning aids may show.
func logSetMisses(t *testing.T, d *evalData, qs []evalQuery, ix *Index) {
	for _, q := range qs {
		top := modelRanker(ix)(q.text)
		if rr := reciprocalRank(d, q, top); rr == 0 {
			var got []string
			for _, i := range top {
				got = append(got, d.names[i])
			}
			t.Logf("miss %q\n\twant %v\n\tgot  %v", q.text, keys(q.expect), got)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestAblateExtraGroups logs the visible figures (dev, extra, second, the
// third set's visible half and, where .ci/run has listed them, the fifth
// servers) without each of the groups written for the later sets' misses.
func TestAblateExtraGroups(t *testing.T) {
	if !*ablate {
		t.Skip("no -search.ablate")
	}
	d := data(t)
	extra, second := extraQueries(t, d), secondQueries(t, d)
	third, _ := thirdQueries(t, d)
	fifth, fifthQs, fifthErr := serverSetData(t, nodetest.ServerCatalogPath("fifth"), fifthNeedsFile)
	for _, g := range slices.Concat(extraGroups, secondGroups, thirdGroups, fifthGroups) {
		c := defaultConfig
		c.thesaurus = slices.DeleteFunc(slices.Clone(thesaurusGroups), func(s string) bool { return s == g })
		r := modelRanker(newIndex(d.docs, c))
		var f metrics
		if fifthErr == nil {
			f = evaluateQueries(fifth, fifthQs, modelRanker(newIndex(fifth.docs, c)))
		}
		t.Logf("without %-40.40q dev %v\n\textra %v\n\tsecond %v\n\tthird %v\n\tfifth %v", g, evaluate(d, r).seen,
			evaluateQueries(d, extra, r), evaluateQueries(d, second, r), evaluateQueries(d, third, r), f)
	}
}
