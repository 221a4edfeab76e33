package search

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

type posting struct {
	doc int32
	sat float32 // tf'/(k1+tf'), where tf' is the field-weighted, length-normalized frequency
	bit uint8   // 1 + the term's position among the distinct words of the tool's name (at most 32), or 0
}

// Index ranks a set of documents. It is safe for concurrent use: searches
// run in parallel, and [Index.Replace] waits for them.
type Index struct {
	cfg  config
	thes *thesaurus
	// defaultModel says cfg is defaultConfig, the model a snapshot is
	// read with.
	defaultModel bool

	mu       sync.RWMutex
	n        int              // live documents
	ids      map[string]int32 // term to its ID, for terms some live document has
	terms    []string         // ID to term
	vocab    []string         // the terms of ids, sorted, for prefix matching
	postings [][]posting      // by term ID, in document order; nil while lazy
	// lazy, for an index Load read, is where the postings and the
	// documents' terms are until the index changes.
	lazy    *lazy
	slots   []slot  // by document ID
	nameLen []uint8 // by document ID: distinct words in the tool's name, at most 32
	// prior is, by document ID, 1 + the ID of the document of the tool's
	// server's instructions, 0 for a tool whose server gave none, and -1
	// for such a document itself, which is never a hit.
	prior []int32
	about int // live documents that are a server's instructions
	// aboutDF counts, by term ID, the instructions documents that have
	// the term: they are not in a term's document frequency, so that
	// instructions change no tool's own score.
	aboutDF map[int32]int32

	free     []int32 // IDs of removed documents, for reuse
	byServer map[string][]int32
	total    [numFields]float64 // length of each field over the live tools
	scratch  sync.Pool

	assocCache sync.Map // term ID to its associates; cleared when documents change
}

// slot is one document ID: what the index keeps of the document to score
// it and to remove it.
type slot struct {
	live   bool
	server string
	length [numFields]uint16
	terms  []int32 // the IDs of the document's distinct terms
}

// New builds an index of docs; their IDs are their positions in docs.
// Docs are read, not kept.
func New(docs []Doc) *Index { return build(docs, defaultConfig, defaultThesaurus(), true) }

// newIndex builds an index with a model of a test's.
func newIndex(docs []Doc, cfg config) *Index {
	var th *thesaurus
	if cfg.synonyms {
		th = newThesaurus(cfg.thesaurus, (&Index{cfg: cfg}).qtokens)
	}
	return build(docs, cfg, th, false)
}

// defaultThesaurus is the default model's thesaurus, which every index of
// it shares: nothing changes a thesaurus once it is made.
func defaultThesaurus() *thesaurus { return thesaurusTable }

func build(docs []Doc, cfg config, th *thesaurus, defaultModel bool) *Index {
	ix := &Index{cfg: cfg, thes: th, defaultModel: defaultModel, ids: map[string]int32{}, byServer: map[string][]int32{}, aboutDF: map[int32]int32{}}
	ix.scratch.New = func() any { return &scratch{} }
	_, added := ix.add(docs)
	for id, ps := range added {
		ix.postings[id] = ps
	}
	ix.addVocab(added)
	return ix
}

// Replace removes the documents of server and adds docs, which are
// normally all of that server, so that a server whose catalog changed
// re-indexes only itself. It returns the IDs of docs, in order; the IDs of
// removed documents may be given again. Term statistics (document
// frequencies, the count of documents) are those of the new set of
// documents. The field lengths the documents added are normalized by are
// the new averages too, but those of the documents kept are not
// recomputed: one server moves them little, and New starts afresh.
func (ix *Index) Replace(server string, docs []Doc) []int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.own()
	ix.assocCache.Clear()
	gone, dead, touched := ix.remove(server)
	ids, added := ix.add(docs)
	for id, ps := range added {
		if !touched[id] {
			ix.postings[id] = mergePostings(ix.postings[id], ps)
		}
	}
	var buf []posting
	for id := range touched {
		buf = ix.rewrite(id, dead, gone[0], gone[len(gone)-1], added[id], buf)
	}
	ix.addVocab(added)
	return ids
}

// remove frees the documents of server. It returns their IDs in order,
// them marked by ID, and the terms they had, whose postings still name
// them.
func (ix *Index) remove(server string) (gone []int32, dead []bool, touched map[int32]bool) {
	gone = ix.byServer[server]
	if len(gone) == 0 {
		return nil, nil, nil
	}
	slices.Sort(gone)
	delete(ix.byServer, server)
	touched = map[int32]bool{}
	dead = make([]bool, len(ix.slots)) // dense: read once per posting
	for _, d := range gone {
		dead[d] = true
		s := &ix.slots[d]
		for _, t := range s.terms {
			touched[t] = true
		}
		if ix.prior[d] < 0 {
			for _, t := range s.terms {
				if ix.aboutDF[t]--; ix.aboutDF[t] == 0 {
					delete(ix.aboutDF, t)
				}
			}
		} else {
			for k := range numFields {
				ix.total[k] -= float64(s.length[k])
			}
		}
		*s = slot{}
		ix.nameLen[d] = 0
		if ix.prior[d] < 0 {
			ix.about--
		}
		ix.prior[d] = 0
		ix.free = append(ix.free, d)
	}
	ix.n -= len(gone)
	return gone, dead, touched
}

// rewrite drops the dead documents, which lie between IDs first and last,
// from term id's postings and merges in added, in document order, with buf
// as room to merge in; it returns buf. Only the postings between the
// first and the last document changed are rewritten.
func (ix *Index) rewrite(id int32, dead []bool, first, last int32, added, buf []posting) []posting {
	ps := ix.postings[id]
	if len(added) > 0 {
		first, last = min(first, added[0].doc), max(last, added[len(added)-1].doc)
	}
	lo := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= first })
	hi := lo + sort.Search(len(ps)-lo, func(i int) bool { return ps[lo+i].doc > last })
	buf = buf[:0]
	for _, p := range ps[lo:hi] {
		if dead[p.doc] {
			continue
		}
		for len(added) > 0 && added[0].doc < p.doc {
			buf, added = append(buf, added[0]), added[1:]
		}
		buf = append(buf, p)
	}
	buf = append(buf, added...)
	ix.postings[id] = slices.Replace(ps, lo, hi, buf...)
	if len(ix.postings[id]) == 0 {
		ix.forget(id)
	}
	return buf
}

// forget takes a term no live document has out of the vocabulary.
func (ix *Index) forget(id int32) {
	t := ix.terms[id]
	delete(ix.ids, t)
	if i, ok := slices.BinarySearch(ix.vocab, t); ok {
		ix.vocab = slices.Delete(ix.vocab, i, i+1)
	}
	ix.postings[id] = nil
}

// add gives docs IDs and returns them, and the postings of docs by term, in
// document order, for the caller to merge into the index's postings.
//
// Terms are numbered locally while docs are read (a word seen before costs
// one map lookup, not a split, a stop-word check and a stem), and a local
// term gets the index's ID only when a document gives it a posting, so the
// index knows only terms some live document has.
func (ix *Index) add(docs []Doc) ([]int, map[int32][]posting) {
	cfg := &ix.cfg
	tools := len(docs)
	docs = withInstructions(docs)
	// A catalog of a few hundred tools has some eight distinct runs and
	// four distinct terms a document; sized so, the maps seldom grow while
	// they fill. Bigger catalogs repeat their words more.
	b := builder{ix: ix, run: make(map[string]span, min(8*len(docs), 1<<13)), term: make(map[string]int32, min(4*len(docs), 1<<12))}

	// Field terms of every document, and the average length of each field.
	// They are kept in one array (a document's field is a span of it), not
	// in a slice each.
	var all []int32
	spans := make([][numFields]span, len(docs))
	for i, d := range docs {
		sp := &spans[i]
		mark := func(k field, lo int) { sp[k] = span{int32(lo), int32(len(all))} }
		lo := len(all)
		all = b.terms(all, d.Tool)
		mark(fieldName, lo)
		lo = len(all)
		all = b.terms(all, d.Title)
		mark(fieldTitle, lo)
		lo = len(all)
		all = b.terms(all, d.Description)
		mark(fieldDesc, lo)
		lo = len(all)
		for _, p := range d.Params {
			all = b.terms(all, p.Name)
			if cfg.entities && cfg.takes && p.Required {
				if k := takes(p.Name); k != "" {
					all = b.terms(all, k)
				}
			}
		}
		mark(fieldParam, lo)
		lo = len(all)
		for _, p := range d.Params {
			all = b.terms(all, p.Description)
		}
		mark(fieldParamDesc, lo)
		// The server field says which product a tool belongs to; each
		// of its words counts once however the ID and title repeat it.
		lo = len(all)
		all = b.terms(b.terms(all, d.Server), d.ServerTitle)
		all = all[:lo+len(dedupeIDs(all[lo:]))]
		mark(fieldServer, lo)
		if i < tools { // instructions change no tool's field lengths
			for k := range numFields {
				ix.total[k] += float64(min(sp[k].len(), 1<<16-1))
			}
		}
	}
	field := func(i int, k field) []int32 { return all[spans[i][k].lo:spans[i][k].hi] }
	live := ix.n + len(docs)
	liveTools := live - ix.about - (len(docs) - tools)
	var avg [numFields]float64
	for k := range numFields {
		if liveTools > 0 {
			avg[k] = ix.total[k] / float64(liveTools)
		}
	}

	// Per document: each distinct term, in first-seen order, with its
	// frequency in each field.
	slices.Sort(ix.free)
	ids := make([]int, len(docs))
	// The new postings of all terms, and the terms of all documents, are
	// each one array cut into a slice per term and per document: grown
	// posting by posting, those slices were most of the allocations.
	// Counted first: how many documents have each local term (a
	// document's fields are one span of all, fieldName to fieldServer).
	perTerm := make([]int, len(b.terms_))
	seen := slices.Repeat([]int32{-1}, len(b.terms_))
	for i := range docs {
		for _, t := range all[spans[i][0].lo:spans[i][numFields-1].hi] {
			if seen[t] != int32(i) {
				seen[t] = int32(i)
				perTerm[t]++
			}
		}
	}
	local := make([][]posting, len(b.terms_)) // new postings by local term, in document order
	room := make([]posting, sumInts(perTerm))
	docTerms := make([]int32, 0, len(room)) // the terms of docs[0], then of docs[1]...
	for t, n := range perTerm {
		local[t], room = room[:0:n], room[n:]
	}
	slot := make([]int32, len(b.terms_))                // local term to its place in order, +1; 0 when not in this document
	global := slices.Repeat([]int32{-1}, len(b.terms_)) // local term to the index's ID, once it has one
	var order []int32
	var tf [][numFields]float64
	for i, d := range docs {
		id := ix.newSlot()
		ids[i] = int(id)
		s := &ix.slots[id]
		s.live, s.server = true, d.Server
		ix.byServer[d.Server] = append(ix.byServer[d.Server], id)
		for _, t := range order {
			slot[t] = 0
		}
		order, tf = order[:0], tf[:0]
		for k := range numFields {
			s.length[k] = uint16(min(spans[i][k].len(), 1<<16-1))
			for _, t := range field(i, k) {
				j := slot[t] - 1
				if j < 0 {
					j = int32(len(order))
					slot[t] = j + 1
					order = append(order, t)
					tf = append(tf, [numFields]float64{})
				}
				tf[j][k]++
			}
		}
		var norm [numFields]float64
		for k := range numFields {
			norm[k] = 1
			if avg[k] > 0 {
				norm[k] = 1 - cfg.b[k] + cfg.b[k]*float64(spans[i][k].len())/avg[k]
			}
		}
		names := 0
		start := len(docTerms)
		for j, t := range order {
			c := &tf[j]
			var w float64
			for k := range numFields {
				if c[k] > 0 {
					w += cfg.weight[k] * c[k] / norm[k]
				}
			}
			if w <= 0 {
				continue
			}
			p := posting{doc: id, sat: float32(w / (cfg.k1 + w))}
			if c[fieldName] > 0 && names < 32 {
				names++
				p.bit = uint8(names)
			}
			if global[t] < 0 {
				global[t] = ix.termID(b.terms_[t])
			}
			local[t] = append(local[t], p)
			docTerms = append(docTerms, global[t])
		}
		// Capped, so that appending to one never writes over the next.
		s.terms = docTerms[start:len(docTerms):len(docTerms)]
		ix.nameLen[id] = uint8(names)
	}
	ix.n = live
	if about := docs[tools:]; len(about) > 0 {
		ix.about += len(about)
		of := make(map[string]int32, len(about))
		for i, d := range about {
			id := int32(ids[tools+i])
			of[d.Server] = id + 1
			ix.prior[id] = -1
			for _, t := range ix.slots[id].terms {
				ix.aboutDF[t]++
			}
		}
		for i, d := range docs[:tools] {
			ix.prior[ids[i]] = of[d.Server]
		}
	}
	ids = ids[:tools]

	added := make(map[int32][]posting, len(local))
	for t, ps := range local {
		if len(ps) == 0 {
			continue
		}
		// Free IDs are taken lowest first and new ones are higher, so the
		// postings are in document order already; this keeps it so if
		// newSlot ever changes.
		if !slices.IsSortedFunc(ps, byDoc) {
			slices.SortFunc(ps, byDoc)
		}
		added[global[t]] = ps
	}
	return ids, added
}

func byDoc(a, b posting) int { return int(a.doc - b.doc) }

// withInstructions returns docs followed by a document for each server
// among them that gives instructions: the instructions as its description
// and nothing else. docs itself is not written to.
func withInstructions(docs []Doc) []Doc {
	var seen map[string]bool
	out := docs
	for _, d := range docs {
		if d.ServerInstructions == "" || seen[d.Server] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
			out = slices.Clip(docs)
		}
		seen[d.Server] = true
		out = append(out, Doc{Server: d.Server, Description: d.ServerInstructions})
	}
	return out
}

func sumInts(ns []int) int {
	sum := 0
	for _, n := range ns {
		sum += n
	}
	return sum
}

// builder numbers the terms of the documents one add reads.
type builder struct {
	ix     *Index
	run    map[string]span  // a run of letters and digits to the local numbers of its terms, in runs
	runs   []int32          // the local numbers of every run's terms
	term   map[string]int32 // a term to its local number
	terms_ []string         // local number to term
	buf    []string
}

// span is a part [lo, hi) of an array of term numbers.
type span struct{ lo, hi int32 }

func (s span) len() int { return int(s.hi - s.lo) }

// terms appends the local numbers of the terms of s to out. Runs of
// letters and digits repeat across a catalog ("the", "repository",
// "owner", a camelCase parameter), so each is split, checked and stemmed
// once.
func (b *builder) terms(out []int32, s string) []int32 {
	for {
		var run string
		if run, s = nextRun(s); run == "" {
			return out
		}
		sp, ok := b.run[run]
		if !ok {
			sp.lo = int32(len(b.runs))
			b.buf = splitIdent(run, b.buf[:0])
			for _, w := range b.buf {
				if meaningful(w) {
					b.runs = append(b.runs, b.number(b.ix.key(w)))
				}
			}
			sp.hi = int32(len(b.runs))
			b.run[strings.Clone(run)] = sp
		}
		out = append(out, b.runs[sp.lo:sp.hi]...)
	}
}

// number returns term's local number, giving it one if it has none.
func (b *builder) number(term string) int32 {
	if t, ok := b.term[term]; ok {
		return t
	}
	t := int32(len(b.terms_))
	term = strings.Clone(term)
	b.term[term] = t
	b.terms_ = append(b.terms_, term)
	return t
}

func dedupeIDs(ts []int32) []int32 {
	out := ts[:0]
	for _, t := range ts {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// addVocab adds the terms of added new to the index to the sorted vocabulary.
func (ix *Index) addVocab(added map[int32][]posting) {
	n := len(ix.vocab)
	for id := range added {
		if _, ok := slices.BinarySearch(ix.vocab[:n], ix.terms[id]); !ok {
			ix.vocab = append(ix.vocab, ix.terms[id])
		}
	}
	if len(ix.vocab) > n {
		sort.Strings(ix.vocab)
	}
}

// termID returns the ID of term t, giving it one if it has none.
func (ix *Index) termID(t string) int32 {
	if id, ok := ix.ids[t]; ok {
		return id
	}
	id := int32(len(ix.postings))
	ix.ids[t] = id
	ix.terms = append(ix.terms, t)
	ix.postings = append(ix.postings, nil)
	return id
}

// newSlot returns a free document ID: the lowest removed one (add sorts
// them), else a new one.
func (ix *Index) newSlot() int32 {
	if len(ix.free) > 0 {
		id := ix.free[0]
		ix.free = ix.free[1:]
		return id
	}
	ix.slots = append(ix.slots, slot{})
	ix.nameLen = append(ix.nameLen, 0)
	ix.prior = append(ix.prior, 0)
	return int32(len(ix.slots) - 1)
}

// mergePostings merges two lists in document order.
func mergePostings(a, b []posting) []posting {
	out := make([]posting, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].doc < b[0].doc {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// idf is the inverse document frequency of term id.
func (ix *Index) idf(id int32) float64 {
	return idf(float64(ix.n-ix.about), float64(ix.df(id)-int(ix.aboutDF[id])))
}
