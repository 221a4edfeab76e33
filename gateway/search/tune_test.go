package search

import (
	"flag"
	"fmt"
	"slices"
	"sort"
	"testing"
)

var tune = flag.Bool("search.tune", false, "grid-search the model's weights on the tuning half (tuning aid)")

// TestTune searches a coarse grid of weights and logs the best by the
// tuning half's recall@5 + MRR@5. It reports the tuning half only: the
// held-out half must not guide the choice.
func TestTune(t *testing.T) {
	if !*tune {
		t.Skip("no -search.tune")
	}
	d := data(t)
	type result struct {
		cfg config
		m   metrics
	}
	var rs []result
	for _, k1 := range []float64{0.5, 0.8, 1.2} {
		for _, wn := range []float64{3, 5} {
			for _, bd := range []float64{0.75, 0.9} {
				for _, syn := range []float64{0.7, 0.8, 0.9, 1} {
					for _, pw := range []float64{0.5} {
						for _, cov := range []float64{1.5, 2, 3} {
							c := defaultConfig
							c.k1 = k1
							c.weight[fieldName] = wn
							c.b[fieldDesc] = bd
							c.synWeight = syn
							c.partialWeight = pw
							c.coverage = cov
							m := evaluate(d, modelRanker(newIndex(d.docs, c))).tune
							rs = append(rs, result{c, m})
						}
					}
				}
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].m.r5+rs[i].m.mrr > rs[j].m.r5+rs[j].m.mrr })
	for _, r := range rs[:min(40, len(rs))] {
		c := r.cfg
		t.Logf("%v  k1=%.1f name=%.0f bdesc=%.2f syn=%.1f partial=%.1f cov=%.1f", r.m, c.k1, c.weight[fieldName], c.b[fieldDesc], c.synWeight, c.partialWeight, c.coverage)
	}
	_ = fmt.Sprint()
}

var ablate = flag.Bool("search.ablate", false, "log the tuning half's figures with each part of the model switched off (tuning aid)")

func TestAblateTuning(t *testing.T) {
	if !*ablate {
		t.Skip("no -search.ablate")
	}
	d := data(t)
	for _, a := range ablations {
		c := defaultConfig
		a.set(&c)
		t.Logf("%-20s %v", a.name, evaluate(d, modelRanker(newIndex(d.docs, c))).tune)
	}
	for g, line := range thesaurusGroups {
		c := defaultConfig
		c.thesaurus = slices.Delete(slices.Clone(thesaurusGroups), g, g+1)
		t.Logf("without %-40q %v", line, evaluate(d, modelRanker(newIndex(d.docs, c))).tune)
	}
}

var diffWith = flag.String("search.diff", "", "log the tuning queries whose rank changes with this ablation (tuning aid)")

func TestDiffTuning(t *testing.T) {
	if *diffWith == "" {
		t.Skip("no -search.diff")
	}
	d := data(t)
	c := defaultConfig
	found := false
	for _, a := range ablations {
		if a.name == *diffWith {
			a.set(&c)
			found = true
		}
	}
	if !found {
		t.Fatalf("no ablation %q", *diffWith)
	}
	base, other := New(d.docs), newIndex(d.docs, c)
	rank := func(ix *Index, q evalQuery) (int, string) {
		hits := ix.Search(q.text, 5)
		top := ""
		if len(hits) > 0 {
			top = d.names[hits[0].Doc]
		}
		for i, h := range hits {
			if q.expect[d.names[h.Doc]] {
				return i + 1, top
			}
		}
		return 0, top
	}
	for _, q := range d.queries {
		if !q.tuning {
			continue
		}
		r1, t1 := rank(base, q)
		r2, t2 := rank(other, q)
		if r1 != r2 {
			t.Logf("model rank %d (top %s) -> %s rank %d (top %s): %q", r1, t1, *diffWith, r2, t2, q.text)
		}
	}
}
