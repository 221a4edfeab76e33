package search

import (
	"testing"

	"github.com/mcpgate/mcpgate/internal/nodetest"
)

// fifthNeedsFile holds 88 needs for the 22 real MCP servers of
// .ci/servers/fifth (from npm, pinned; 1,000 tools, Twilio's 197 among
// them), four each, written (2026-12-07) by a helper session that read
// only those servers' catalog. Unlike the catalog of the dev queries,
// these servers' schemas are as servers send them: nested objects,
// variants, consts. Unlike the fresh servers, this set is visible: the
// tuning aids may show its misses (-search.misses), so a choice is made
// on real servers too, and the fresh servers stay the judge of servers
// nobody tuned for. Measured once before anything was changed for it:
// recall@5 0.670, r@1 0.364, MRR 0.475 (baseline 0.375).
const fifthNeedsFile = "testdata/fifth-needs.jsonl"

// TestFifthServers reports the search on the fifth servers' catalog, as
// .ci/run lists it, and holds it to its floor.
func TestFifthServers(t *testing.T) {
	d, qs, err := serverSetData(t, nodetest.ServerCatalog(t, "fifth"), fifthNeedsFile)
	if err != nil {
		t.Fatal(err)
	}
	ix := newIndex(d.docs, defaultConfig)
	m := evaluateQueries(d, qs, modelRanker(ix))
	t.Logf("model:    fifth servers (%d entries) %v", len(d.docs), m)
	t.Logf("baseline: fifth servers %v", evaluateQueries(d, qs, baselineRanker(d.docs)))
	// Two needs under what was measured, as the other floors.
	if m.r5 < 0.79 { // 72 of 88 measured (59 before amounts, 60 before fifthGroups)
		t.Errorf("fifth servers' recall@5 = %.3f, want >= 0.79", m.r5)
	}
	if *showMisses {
		logSetMisses(t, d, qs, ix)
	}
}
