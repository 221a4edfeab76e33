package search

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkSearchQuality reports the model's quality on the dev queries
// against the naive baseline measured in the same run: recall@1 (the first
// hit serves the need), recall@5 (one of the first five does) and MRR@5,
// on the tuning half, the held-out half and all queries. The figures are
// computed once; the timed loop is one search with limit 5 over the real
// catalog (749 tools), so ns/op is per query.
func BenchmarkSearchQuality(b *testing.B) {
	d := data(b)
	ix := New(d.docs)
	model := evaluate(d, modelRanker(ix))
	base := evaluate(d, baselineRanker(d.docs))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ix.Search(d.queries[i%len(d.queries)].text, 5)
	}
	// Reported after the loop: b.Loop resets the timer, and with it any
	// metric reported before.
	report := func(prefix string, m metrics) {
		b.ReportMetric(m.r1, prefix+"-r@1")
		b.ReportMetric(m.r5, prefix+"-r@5")
		b.ReportMetric(m.mrr, prefix+"-mrr")
	}
	report("tune", model.tune)
	report("held", model.held)
	report("all", model.all)
	report("base-tune", base.tune)
	report("base-held", base.held)
	report("base-all", base.all)
	b.ReportMetric(ratio(model.held.r5, base.held.r5), "held-r@5/base")
	b.ReportMetric(ratio(model.held.mrr, base.held.mrr), "held-mrr/base")
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// BenchmarkSearchAblation reports the quality with one part of the model
// switched off at a time (see ablations), for RESULTS.md.
func BenchmarkSearchAblation(b *testing.B) {
	d := data(b)
	for _, a := range ablations {
		b.Run(a.name, func(b *testing.B) {
			c := defaultConfig
			a.set(&c)
			m := evaluate(d, modelRanker(newIndex(d.docs, c)))
			for b.Loop() {
			}
			b.ReportMetric(m.tune.r5, "tune-r@5")
			b.ReportMetric(m.tune.mrr, "tune-mrr")
			b.ReportMetric(m.held.r5, "held-r@5")
			b.ReportMetric(m.held.mrr, "held-mrr")
			b.ReportMetric(m.all.r1, "all-r@1")
			b.ReportMetric(m.all.r5, "all-r@5")
			b.ReportMetric(m.all.mrr, "all-mrr")
			b.ReportMetric(m.seen.r5, "seen-r@5")
			b.ReportMetric(m.srvHeld.r5, "srvheld-r@5")
			b.ReportMetric(m.clean.r5, "clean-r@5")
		})
	}
}

// replicate replicates the real catalog under renamed servers ("github-7")
// until it holds n tools, so term statistics stay those of real tools.
func replicate(d *evalData, n int) []Doc {
	docs := make([]Doc, 0, n)
	for k := 0; len(docs) < n; k++ {
		for _, doc := range d.docs {
			if len(docs) == n {
				break
			}
			doc.Server = fmt.Sprintf("%s-%d", doc.Server, k)
			doc.ServerTitle = fmt.Sprintf("%s %d", doc.ServerTitle, k)
			docs = append(docs, doc)
		}
	}
	return docs
}

var sizes = []int{10000, 20000}

// BenchmarkSearchLatency times one search (limit 5) over 10,000 and
// 20,000 tools, the dev queries taken round-robin, and reports the median
// and 99th percentile. It reports the time of the naive baseline over the
// same tools, measured in the same run on the first 30 queries, and the
// median's ratio to it (p50/base).
func BenchmarkSearchLatency(b *testing.B) {
	d := data(b)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			docs := replicate(d, n)
			ix := New(docs)
			base := baselineRanker(docs)
			start := time.Now()
			const baseQueries = 30
			for _, q := range d.queries[:baseQueries] {
				base(q.text)
			}
			perBase := float64(time.Since(start).Nanoseconds()) / baseQueries
			b.ReportAllocs()
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				t := time.Now()
				ix.Search(d.queries[i%len(d.queries)].text, 5)
				took = append(took, time.Since(t))
			}
			slices.Sort(took)
			p50 := float64(took[len(took)/2].Nanoseconds())
			b.ReportMetric(p50/1e3, "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
			b.ReportMetric(perBase/1e3, "base-µs/op")
			b.ReportMetric(p50/perBase, "p50/base")
		})
	}
}

// BenchmarkBuild times building the index of 10,000 and 20,000 tools, and
// reports the heap the built index keeps (index-MB).
func BenchmarkBuild(b *testing.B) {
	d := data(b)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			docs := replicate(d, n)
			b.ReportAllocs()
			for b.Loop() {
				New(docs)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			ix := New(docs)
			ix.Search("warm the scratch pool", 5)
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(ix)
			b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/(1<<20), "index-MB")
		})
	}
}

// BenchmarkReplace20k times replacing one server's tools (github-3, 86
// tools) in an index of 20,000, alternately by a changed catalog (one tool
// fewer, one description reworded) and back, and reports it as a share of
// building the whole index afresh, measured in the same run (replace/build).
func BenchmarkReplace20k(b *testing.B) {
	d := data(b)
	docs := replicate(d, 20000)
	const server = "github-3"
	var old []Doc
	for _, doc := range docs {
		if doc.Server == server {
			old = append(old, doc)
		}
	}
	changed := append([]Doc(nil), old[1:]...)
	changed[0].Description = "Reworded: " + changed[0].Description
	start := time.Now()
	ix := New(docs)
	build := time.Since(start)
	b.ReportAllocs()
	start = time.Now()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			ix.Replace(server, changed)
		} else {
			ix.Replace(server, old)
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(len(old)), "tools")
	b.ReportMetric(float64(build.Microseconds())/1e3, "build-ms")
	b.ReportMetric(float64(per)/float64(build), "replace/build")
}
