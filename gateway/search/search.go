// Package search ranks tools for a model's free-text query.
//
// The gateway shows a model one small tool instead of every tool schema, so
// the model finds the tool it needs by describing it: "open a bug in the
// acme/web repo", "what PRs are still open?", "tail the logs of pod api-7".
// This package turns such a sentence into a ranked list of tools.
//
// # Documents
//
// Each tool is a document with fields: its name, title, description,
// parameter names, parameter descriptions, and its server's ID and product
// name. A server's instructions (what it says of itself in initialize)
// are a document of their own that is never a hit; see Ranking. Text is
// split into words on anything that is not a letter or digit
// and inside identifiers (snake_case, kebab-case, camelCase, dotted names,
// letters and digits), lower-cased, stripped of stop words, and stemmed
// lightly, so that "issues", "merged" and "listing" meet "issue", "merge"
// and "list".
//
// # Queries
//
// A query is read into concepts. A word or phrase found in the thesaurus
// (thesaurusGroups) becomes one concept whose alternatives are itself and
// its synonyms: "open a bug" reaches create_issue, "PRs" pull_request tools,
// "kick off" run and trigger tools. A word also meets its derived forms
// ("deploy", "deployment"); a word that no tool has falls back to the known
// words it is made of ("codebase") or that share a long prefix with it; and
// two words may meet one compound ("stack trace", "stacktrace").
// Entities count as their kind rather than their text: a URL as "url", a
// path or a bare file name ("config.yaml") as a file, "ENG-120" as an
// issue, "acme/web" as a repository, "Friday at 2pm" or "the last 7 days"
// as a date; a tool that cannot be called without a URL or a path is the
// likelier one for a query that gives one. Quoted
// text, what follows "saying" and the name after "called" ("a folder
// called invoices") are the content to send, not the need, and count for
// less; the verb a command starts with counts for more; and a
// question ("which buckets are there?") leans towards listing and
// searching tools.
//
// # Ranking
//
// Documents are ranked with BM25F: a term's frequency in each field is
// normalized by the field's length and weighted by the field (a word in the
// name counts far more than one in a parameter description), summed, then
// saturated once and weighted by the term's inverse document frequency. A
// concept scores as the best of its alternatives, with the IDF of all of
// them together, so a description that happens to use three synonyms is not
// rewarded three times and a rare synonym is not worth more than the common
// word it stands for. A bonus for the share of a tool's name the query
// covers prefers create_issue to create_issue_from_template for "create an
// issue", and a tool's score follows the share of the query's concepts it
// has, so that one that answers every word of the need is preferred to one
// that matches a single word strongly; a concept the tool lacks and its
// server's instructions have counts there at half its weight, and that is
// all instructions do: they score nothing themselves and are in no
// document frequency. Every part and weight was chosen by
// measurement on real tool catalogs; docs/performance.md has the figures.
//
// # Changing catalogs
//
// [Index.Replace] swaps one server's documents for new ones, so that a
// server whose catalog changed re-indexes only itself: a few milliseconds
// at 20,000 tools, where [New] takes about a second.
//
// # Example
//
//	ix := search.New([]search.Doc{
//		{Server: "github", Tool: "create_issue", Description: "Create a new issue"},
//		{Server: "github", Tool: "list_issues", Description: "List issues"},
//	})
//	hits := ix.Search("open a bug on GitHub", 5)
//	// hits[0].Doc == 0: create_issue
//
// An [Index] is safe for concurrent use: searches run in parallel and
// [Index.Replace] waits for them.
package search

import (
	"container/heap"
	"math"
	"math/bits"
	"sort"
)

// Param is one top-level input parameter of a tool. Required says the
// tool cannot be called without it.
type Param struct {
	Name, Description string
	Required          bool
}

// Doc is one tool to be found.
type Doc struct {
	Server      string // server ID, e.g. "github"
	ServerTitle string // the server's product name if known (e.g. "GitHub"); may be ""
	Tool        string // tool name, e.g. "list_pull_requests"
	Title       string // optional display title
	Description string
	Params      []Param // top-level input parameters
	// ServerInstructions is what the server says of itself as a whole
	// (initialize's instructions), the same for every tool of a server;
	// the index reads it from the first of a server's docs that has it.
	// It is never a hit: a query's concepts that a tool lacks and its
	// server's instructions have count, in part, towards the tool's share
	// of the query.
	ServerInstructions string
}

// Hit is one ranked result.
type Hit struct {
	Doc   int // the document's ID: its index in the docs given to New, or an ID Replace returned
	Score float64
}

type field int

const (
	fieldName field = iota
	fieldTitle
	fieldDesc
	fieldParam
	fieldParamDesc
	fieldServer
	numFields
)

// config holds the model's parameters. The defaults were measured; tests
// change them to show what each part is worth.
type config struct {
	k1     float64
	weight [numFields]float64 // BM25F field weights
	b      [numFields]float64 // BM25F length normalization per field

	stem          bool
	synonyms      bool
	thesaurus     []string // groups, as in thesaurusGroups
	synWeight     float64  // weight of a synonym relative to the word itself
	partial       bool
	partialWeight float64 // weight of a prefix match for an unknown word
	partialMin    int     // shortest shared prefix that counts
	derived       bool    // a known word also matches its derived forms, at partialWeight
	compounds     bool    // "stack trace" meets "stacktrace", "codebase" meets "code base"
	entities      bool    // URLs, paths, issue keys and email addresses count as their kind
	takes         bool    // with entities: a URL, a path or a commit hash also meets the tools that require one
	hosts         bool    // with entities and payload: a URL's host words ("acme.slack.com") count as payload
	commands      bool    // with entities: words in backticks ("`cat /etc/hosts`") are a command
	files         bool    // with entities: a file named without a folder ("config.yaml") counts as a file
	when          bool    // with entities: days, times, dates and spans of time count as "date time"
	amounts       bool    // with entities: "$40" and "300 USD" are an amount
	unionIDF      bool    // a word and its synonyms share the IDF of their union
	coverage      float64 // bonus for the share of a tool's name the query covers
	imperative    float64 // extra weight of the verb a command starts with
	question      float64 // weight of the listing and searching a question implies
	payload       float64 // weight of words that are the content to send, not the need ("saying …", quotes)
	names         bool    // with payload: a name after "called", "named" or "titled" is payload
	coord         float64 // how much a tool's score follows the share of the query's concepts it has
	instructions  float64 // how much a concept only the tool's server's instructions have counts in that share
	assoc         float64 // weight of a term the catalog uses with a query word, times their association (0: off)
	assocTerms    int     // most associated terms per query word
	assocMin      float64 // weakest association that counts
	assocMaxShare float64 // query words in a greater share of the documents are not expanded
}

var defaultConfig = config{
	k1:            0.8,
	weight:        [numFields]float64{fieldName: 3, fieldTitle: 2, fieldDesc: 1, fieldParam: 0.5, fieldParamDesc: 0.2, fieldServer: 2},
	b:             [numFields]float64{fieldName: 0.5, fieldTitle: 0.5, fieldDesc: 0.75, fieldParam: 0.5, fieldParamDesc: 0.75, fieldServer: 0},
	stem:          true,
	synonyms:      true,
	thesaurus:     thesaurusGroups,
	synWeight:     0.8,
	partial:       true,
	partialWeight: 0.5,
	partialMin:    5,
	derived:       true,
	compounds:     true,
	entities:      true,
	takes:         true,
	hosts:         true,
	commands:      true,
	files:         true,
	when:          true,
	amounts:       true,
	unionIDF:      true,
	coverage:      2,
	payload:       0.3,
	names:         true,
	imperative:    0.25,
	question:      0.5,
	coord:         0.5,
	instructions:  0.5,
	assoc:         0, // measured worse once generalGroups were in; see with-associations
	assocTerms:    3,
	assocMin:      0.3,
	assocMaxShare: 0.06,
}

// Len is the number of documents in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n - ix.about
}

// Search returns up to limit hits, best first; equal scores keep the order
// of the document IDs. Every document that shares a meaningful word
// with the query (any word but a stop word, a bare number or a single
// letter, compared after stemming) scores above zero, so the result is
// empty only when no document does, or when limit <= 0.
func (ix *Index) Search(query string, limit int) []Hit {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if limit <= 0 || ix.n == 0 {
		return nil
	}
	hits := ix.rank(ix.concepts(query, ix.cfg.entities), limit)
	if len(hits) == 0 && ix.cfg.entities {
		// Entities stand in for the words they are written with; a query
		// whose only shared words were inside one still finds its tools.
		hits = ix.rank(ix.concepts(query, false), limit)
	}
	return hits
}

// rank scores every document for the concepts and keeps the best limit.
func (ix *Index) rank(concepts []concept, limit int) []Hit {
	if len(concepts) == 0 {
		return nil
	}
	s := ix.scratch.Get().(*scratch)
	defer ix.scratch.Put(s)
	s.grow(len(ix.slots))
	acc := s.acc

	var weight float64      // of the concepts a tool can cover
	var weights [64]float64 // of each of the first 64, by its place in concepts
	for i, c := range concepts {
		if !c.boost {
			weight += c.weight
			if i < len(weights) {
				weights[i] = c.weight
			}
		}
	}
	for ci, c := range concepts {
		unionIDF := 0.0
		if ix.cfg.unionIDF && len(c.alts) > 1 {
			unionIDF = ix.unionIDF(c, s)
		}
		for _, a := range c.alts {
			for _, id := range a.terms {
				w := c.weight * a.weight * ix.idf(id)
				if unionIDF > 0 {
					w = c.weight * a.weight * unionIDF / float64(len(a.terms))
				}
				for _, p := range ix.postingsOf(id, &s.postings) {
					x := &acc[p.doc]
					if x.alt == 0 {
						s.altTouched = append(s.altTouched, p.doc)
					}
					x.alt += w * float64(p.sat)
					if p.bit > 0 {
						x.names |= 1 << (p.bit - 1)
					}
				}
			}
			// A concept scores as the best of its alternatives.
			for _, d := range s.altTouched {
				x := &acc[d]
				if x.concept == 0 {
					s.conceptTouched = append(s.conceptTouched, d)
				}
				x.concept = max(x.concept, x.alt)
				x.alt = 0
			}
			s.altTouched = s.altTouched[:0]
		}
		for _, d := range s.conceptTouched {
			x := &acc[d]
			if x.total == 0 {
				if c.boost {
					x.concept, x.names = 0, 0
					continue
				}
				s.touched = append(s.touched, d)
			}
			x.total += x.concept
			if !c.boost {
				x.covered += float32(c.weight)
				if ci < 64 {
					x.concepts |= 1 << ci
				}
			}
			x.concept = 0
		}
		s.conceptTouched = s.conceptTouched[:0]
	}

	h := hitHeap(make([]Hit, 0, min(limit, len(s.touched))))
	for _, d := range s.touched {
		x := &acc[d]
		about := ix.prior[d]
		if about < 0 {
			// A server's instructions: read by its tools below, reset
			// after them.
			s.priors = append(s.priors, d)
			continue
		}
		hit := Hit{Doc: int(d), Score: x.total}
		if n := ix.nameLen[d]; n > 0 && x.names != 0 {
			hit.Score += ix.cfg.coverage * float64(bits.OnesCount32(x.names)) / float64(n)
		}
		if ix.cfg.coord > 0 && weight > 0 {
			covered := float64(x.covered)
			if about > 0 && ix.cfg.instructions > 0 {
				for more := acc[about-1].concepts &^ x.concepts; more != 0; more &= more - 1 {
					covered += ix.cfg.instructions * weights[bits.TrailingZeros64(more)]
				}
			}
			hit.Score *= 1 - ix.cfg.coord + ix.cfg.coord*covered/weight
		}
		*x = accum{}
		if len(h) < limit {
			heap.Push(&h, hit)
		} else if better(hit, h[0]) {
			h[0] = hit
			heap.Fix(&h, 0)
		}
	}
	s.touched = s.touched[:0]
	for _, d := range s.priors {
		acc[d] = accum{}
	}
	s.priors = s.priors[:0]
	out := []Hit(h)
	sort.Slice(out, func(i, j int) bool { return better(out[i], out[j]) })
	return out
}

// unionIDF is the IDF of the documents that have any of c's alternatives:
// a word and its synonyms are one concept, as rare or as common as the
// concept, however rare the word the query happened to use.
func (ix *Index) unionIDF(c concept, s *scratch) float64 {
	for _, a := range c.alts {
		for _, id := range a.terms {
			for _, p := range ix.postingsOf(id, &s.postings) {
				if !s.mark[p.doc] && ix.prior[p.doc] >= 0 {
					s.mark[p.doc] = true
					s.altTouched = append(s.altTouched, p.doc)
				}
			}
		}
	}
	df := float64(len(s.altTouched))
	for _, d := range s.altTouched {
		s.mark[d] = false
	}
	s.altTouched = s.altTouched[:0]
	return idf(float64(ix.n-ix.about), df)
}

func idf(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// better orders hits best first: higher score, then earlier document.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Doc < b.Doc
}

// hitHeap is a min-heap: its root is the worst of the hits kept.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// scratch holds per-query accumulators, reused across queries. Every
// accumulator is zero between queries; the touched lists say which to reset.
type scratch struct {
	acc                                 []accum // by document
	mark                                []bool  // by document, for unionIDF
	touched, conceptTouched, altTouched []int32
	priors                              []int32   // instructions documents touched
	postings                            []posting // room to decode a loaded index's postings
}

// accum is one document's accumulators, together so that a posting touches
// one cache line.
type accum struct {
	total   float64 // over the concepts so far
	concept float64 // best alternative so far of the current concept
	alt     float64 // the current alternative
	names   uint32  // name words matched, by posting.bit
	covered float32 // weight of the concepts matched
	// concepts has bit i set when the i-th of the query's concepts (the
	// first 64) matched.
	concepts uint64
}

// grow makes room for n documents.
func (s *scratch) grow(n int) {
	if len(s.acc) < n {
		s.acc = make([]accum, n)
		s.mark = make([]bool, n)
	}
}
