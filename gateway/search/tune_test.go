package search

// Tuning aids. They are skipped unless asked for with a flag, and they show
// only the visible queries: the tuning half of the dev queries (see
// tuningHalf) whose expected tools are of tuning servers (see
// tuningServer). The held-out half and the held-out servers are only ever
// reported as figures, by TestSearchQualityFloor and the benchmarks. Run them as
//
//	go test -run TestTune -v ./gateway/search/ -args -search.tune
//	go test -run TestAblateTuning -v ./gateway/search/ -args -search.ablate
//	go test -run TestDiffTuning -v ./gateway/search/ -args -search.diff=no-stemming
//	go test -run TestExplain -v ./gateway/search/ -args -search.explain='open a bug'
//	go test -run TestSearchQualityFloor -v ./gateway/search/ -args -search.misses

import (
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

var (
	tune         = flag.Bool("search.tune", false, "grid-search the model's weights on the visible queries")
	ablate       = flag.Bool("search.ablate", false, "log the visible queries' figures with each part of the model, and each thesaurus group, switched off")
	diffWith     = flag.String("search.diff", "", "log the tuning queries whose rank changes with this ablation")
	explainQuery = flag.String("search.explain", "", "explain the ranking of this query")
)

// TestTune searches a grid of weights around the defaults and logs the best
// by the visible queries' recall@5 + MRR@5. The defaults sit inside the broad
// plateau this found, not on its single best point.
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
	for _, k1 := range []float64{0.5, 0.8, 1.2, 2} {
		for _, wn := range []float64{2, 3, 5} {
			for _, bd := range []float64{0.5, 0.75, 0.9} {
				for _, syn := range []float64{0.6, 0.8, 1} {
					for _, cov := range []float64{1, 2, 3} {
						c := defaultConfig
						c.k1, c.weight[fieldName], c.b[fieldDesc], c.synWeight, c.coverage = k1, wn, bd, syn, cov
						rs = append(rs, result{c, evaluate(d, modelRanker(newIndex(d.docs, c))).seen})
					}
				}
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].m.r5+rs[i].m.mrr > rs[j].m.r5+rs[j].m.mrr })
	for _, r := range rs[:min(30, len(rs))] {
		c := r.cfg
		t.Logf("%v  k1=%.1f name=%.0f b(desc)=%.2f syn=%.1f coverage=%.0f", r.m, c.k1, c.weight[fieldName], c.b[fieldDesc], c.synWeight, c.coverage)
	}
}

// TestAblateTuning logs the visible queries' figures with each part of the
// model, then each thesaurus group, left out.
func TestAblateTuning(t *testing.T) {
	if !*ablate {
		t.Skip("no -search.ablate")
	}
	d := data(t)
	for _, a := range ablations {
		c := defaultConfig
		a.set(&c)
		t.Logf("%-20s %v", a.name, evaluate(d, modelRanker(newIndex(d.docs, c))).seen)
	}
	for g, line := range thesaurusGroups {
		c := defaultConfig
		c.thesaurus = slices.Delete(slices.Clone(thesaurusGroups), g, g+1)
		t.Logf("without %-40q %v", line, evaluate(d, modelRanker(newIndex(d.docs, c))).seen)
	}
}

// TestDiffTuning logs the tuning queries whose first expected hit moves
// when one part of the model is switched off.
func TestDiffTuning(t *testing.T) {
	if *diffWith == "" {
		t.Skip("no -search.diff")
	}
	d := data(t)
	c := defaultConfig
	i := slices.IndexFunc(ablations, func(a ablation) bool { return a.name == *diffWith })
	if i < 0 {
		t.Fatalf("no ablation %q", *diffWith)
	}
	ablations[i].set(&c)
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
		if !q.visible() {
			continue
		}
		r1, t1 := rank(base, q)
		r2, t2 := rank(other, q)
		if r1 != r2 {
			t.Logf("model rank %d (top %s) -> %s rank %d (top %s): %q", r1, t1, *diffWith, r2, t2, q.text)
		}
	}
}

// TestExplain logs the concepts read from a query and each top hit's score
// per concept. It works on any query: it shows no expected tools.
func TestExplain(t *testing.T) {
	if *explainQuery == "" {
		t.Skip("no -search.explain")
	}
	d := data(t)
	ix := New(d.docs)
	cs := ix.concepts(*explainQuery, true)
	name := map[int32]string{}
	for term, id := range ix.ids {
		name[id] = term
	}
	for _, c := range cs {
		var alts []string
		for _, a := range c.alts {
			var ts []string
			for _, id := range a.terms {
				ts = append(ts, fmt.Sprintf("%s(idf %.2f)", name[id], ix.idf(id)))
			}
			alts = append(alts, fmt.Sprintf("%.2f*[%s]", a.weight, strings.Join(ts, " ")))
		}
		t.Logf("concept %q (weight %.2f): %s", c.key, c.weight, strings.Join(alts, " | "))
	}
	for _, h := range ix.Search(*explainQuery, 10) {
		t.Logf("%-45s %.2f", d.names[h.Doc], h.Score)
	}
}

var prune = flag.Bool("search.prune", false, "list the thesaurus groups and expressions with no effect on the visible queries")

// TestPruneThesaurus leaves out each thesaurus group, then each expression
// of the groups kept, and logs those whose absence costs nothing on the
// visible queries (recall@5 + MRR@5): they have no evidence for them. The
// issue's own synonyms are kept whatever they measure.
func TestPruneThesaurus(t *testing.T) {
	if !*prune {
		t.Skip("no -search.prune")
	}
	d := data(t)
	protected := map[string]bool{}
	for _, line := range issueThesaurus {
		for _, e := range strings.Split(line, "|") {
			protected[e] = true
		}
	}
	score := func(groups []string) float64 {
		c := defaultConfig
		c.thesaurus = groups
		m := evaluate(d, modelRanker(newIndex(d.docs, c))).seen
		return m.r5 + m.mrr
	}
	full := score(thesaurusGroups)
	t.Logf("full thesaurus: %.4f", full)
	var kept []string
	for g, line := range thesaurusGroups {
		if slices.ContainsFunc(strings.Split(line, "|"), func(e string) bool { return protected[e] }) {
			kept = append(kept, line)
			continue
		}
		if s := score(slices.Delete(slices.Clone(thesaurusGroups), g, g+1)); s >= full {
			t.Logf("no evidence for group %q (%.4f without)", line, s)
			continue
		}
		kept = append(kept, line)
	}
	base := score(kept)
	t.Logf("groups with evidence: %.4f", base)
	for g, line := range kept {
		exprs := strings.Split(line, "|")
		for i, e := range exprs {
			if protected[e] || len(exprs) < 2 {
				continue
			}
			trial := slices.Clone(kept)
			trial[g] = strings.Join(slices.Delete(slices.Clone(exprs), i, i+1), "|")
			if s := score(trial); s >= base {
				t.Logf("no evidence for %q in %q (%.4f without)", e, line, s)
			}
		}
	}
}
