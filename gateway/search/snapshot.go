package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// An index can be written down and read back, so that a process started
// for one search (`mcpgate search`) ranks with the index an earlier one
// built instead of building it again from every document. What is written
// is the built index itself: terms, postings and documents, each posting's
// weight to the bit, so an index read back ranks exactly as the one
// written did. The model (weights, thesaurus) is not written: it is the
// reading program's, which is why whoever keeps snapshots must give one
// only to the program that wrote it.

// snapshotMagic starts every snapshot; its last byte is the format's
// version.
const snapshotMagic = "mcpgate search index\x00\x03"

// ErrSnapshot is returned by [Load] for data that is not a snapshot of
// this format, or not a whole one.
var ErrSnapshot = errors.New("not a search index snapshot")

// AppendSnapshot appends a snapshot of ix to b. Only an index of the
// default model ([New]) can be written.
func (ix *Index) AppendSnapshot(b []byte) ([]byte, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.defaultModel {
		return nil, errors.New("writing a search index: only the default model's index can be written")
	}
	b = append(b, snapshotMagic...)
	b = binary.AppendUvarint(b, uint64(ix.n))
	for _, t := range ix.total {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t))
	}
	// The counts first, which the reader checks the lists against: the
	// terms, all their postings, the document slots and all their terms.
	var pbuf []posting
	var tbuf []int32
	postings, docTerms := 0, 0
	for id := range ix.terms {
		postings += ix.df(int32(id))
	}
	for d := range ix.slots {
		docTerms += len(ix.termsOf(int32(d), &tbuf))
	}
	b = binary.AppendUvarint(b, uint64(len(ix.terms)))
	b = binary.AppendUvarint(b, uint64(postings))
	b = binary.AppendUvarint(b, uint64(len(ix.slots)))
	b = binary.AppendUvarint(b, uint64(docTerms))
	for id, t := range ix.terms {
		b = appendString(b, t)
		ps := ix.postingsOf(int32(id), &pbuf)
		b = binary.AppendUvarint(b, uint64(len(ps)))
		prev := int32(-1)
		for _, p := range ps {
			b = binary.AppendUvarint(b, uint64(p.doc-prev)) // postings are in document order
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p.sat))
			b = append(b, p.bit)
			prev = p.doc
		}
	}
	// The vocabulary is the live terms, sorted: written as term IDs.
	b = binary.AppendUvarint(b, uint64(len(ix.vocab)))
	for i := range ix.vocab {
		b = binary.AppendUvarint(b, uint64(ix.vocabID(i)))
	}
	for d, s := range ix.slots {
		switch {
		case !s.live:
			b = append(b, 0)
			continue
		case ix.prior[d] < 0: // a server's instructions
			b = append(b, 2, ix.nameLen[d])
		default:
			b = append(b, 1, ix.nameLen[d])
			b = binary.AppendUvarint(b, uint64(ix.prior[d]))
		}
		b = appendString(b, s.server)
		for _, l := range s.length {
			b = binary.AppendUvarint(b, uint64(l))
		}
		terms := ix.termsOf(int32(d), &tbuf)
		b = binary.AppendUvarint(b, uint64(len(terms)))
		for _, t := range terms {
			b = binary.AppendUvarint(b, uint64(t))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(ix.free)))
	for _, d := range ix.free {
		b = binary.AppendUvarint(b, uint64(d))
	}
	return b, nil
}

// Load reads a snapshot [Index.AppendSnapshot] wrote into an index of the
// default model. Data that is not a whole snapshot, or whose parts do not
// fit together, is refused with an error wrapping [ErrSnapshot]; it never
// yields a partial index.
//
// The index keeps data: its terms and server IDs are parts of it, not
// copies, so data must not change while the index is in use.
func Load(data []byte) (*Index, error) {
	// Read in place: every term and server ID is a part of data, neither
	// an allocation of its own nor a copy of the whole, and the postings
	// and the documents' terms are left in data (lazy) until a search
	// reads them or the index changes. A process started for one search
	// reads the snapshot once and touches no more memory than it must
	// (where a page fault is dear, each fresh page costs).
	r := &reader{s: unsafe.String(unsafe.SliceData(data), len(data))}
	whole := r.s
	at := func() uint32 { return uint32(len(whole) - len(r.s)) }
	if r.take(len(snapshotMagic)) != snapshotMagic || uint64(len(data)) > math.MaxUint32 {
		return nil, ErrSnapshot
	}
	size := len(data)
	ix := &Index{cfg: defaultConfig, defaultModel: true}
	ix.n = r.count(size)
	for k := range ix.total {
		ix.total[k] = math.Float64frombits(r.uint64())
	}
	nterms, npostings, nslots, ndocTerms := r.count(size), r.count(size), r.count(size), r.count(size)
	lz := &lazy{data: whole, postingsAt: make([]uint32, nterms), postingsLen: make([]int32, nterms), termsAt: make([]uint32, nslots)}
	cited := make([]bool, nslots) // documents some posting names
	ix.terms = make([]string, 0, nterms)
	known := 0 // terms with postings
	for range nterms {
		t := r.string()
		n := r.count(npostings)
		npostings -= n
		id := len(ix.terms)
		lz.postingsAt[id], lz.postingsLen[id] = at(), int32(n)
		doc := -1
		for range n {
			step := r.uvarint()
			if step == 0 || step >= uint64(nslots-doc) {
				r.fail() // postings are in document order, each document once
				break
			}
			doc += int(step)
			cited[doc] = true
			r.take(5) // the weight and the name bit
		}
		if r.err != nil {
			break
		}
		// A term no live document has any more keeps its ID, without
		// postings, but is no longer known by its text (Index.forget).
		if n > 0 {
			known++
		}
		ix.terms = append(ix.terms, t)
	}
	// The vocabulary is every term with postings, in strict order: so no
	// two have the same text, and a term is found by its text in it.
	nvocab := r.count(nterms)
	ix.vocab = make([]string, 0, nvocab)
	lz.vocabIDs = make([]int32, 0, nvocab)
	for i := range nvocab {
		id := r.index(len(ix.terms))
		if r.err != nil || lz.postingsLen[id] == 0 || i > 0 && ix.vocab[i-1] >= ix.terms[id] {
			r.fail()
			break
		}
		ix.vocab = append(ix.vocab, ix.terms[id])
		lz.vocabIDs = append(lz.vocabIDs, int32(id))
	}
	ix.slots = make([]slot, nslots)
	ix.nameLen = make([]uint8, nslots)
	ix.prior = make([]int32, nslots)
	ix.byServer = map[string][]int32{}
	ix.aboutDF = map[int32]int32{}
	live := 0
	for d := range ix.slots {
		kind := r.byte()
		if kind == 0 {
			continue
		}
		s := &ix.slots[d]
		s.live = true
		live++
		ix.nameLen[d] = r.byte()
		switch kind {
		case 1:
			ix.prior[d] = int32(r.index(nslots + 1))
		case 2:
			ix.prior[d] = -1
			ix.about++
		default:
			r.fail()
		}
		s.server = r.string()
		for k := range s.length {
			s.length[k] = uint16(min(r.uvarint(), math.MaxUint16))
		}
		lz.termsAt[d] = at()
		n := r.count(ndocTerms)
		ndocTerms -= n
		for range n {
			id := int32(r.index(len(ix.terms)))
			if ix.prior[d] < 0 {
				ix.aboutDF[id]++
			}
		}
		if r.err != nil {
			break
		}
		ix.byServer[s.server] = append(ix.byServer[s.server], int32(d))
	}
	nfree := r.count(nslots)
	for range nfree {
		ix.free = append(ix.free, int32(r.index(nslots)))
	}
	if r.err == nil && (len(r.s) != 0 || live != ix.n || npostings != 0 || ndocTerms != 0 ||
		len(ix.vocab) != known) {
		r.fail()
	}
	for d, c := range cited {
		if r.err == nil && c && !ix.slots[d].live {
			r.fail()
		}
	}
	for _, d := range ix.free {
		if r.err == nil && ix.slots[d].live {
			r.fail()
		}
	}
	// A tool's instructions are a live instructions document of its own
	// server.
	for d, p := range ix.prior {
		if r.err == nil && p > 0 && (ix.prior[p-1] >= 0 || ix.slots[p-1].server != ix.slots[d].server) {
			r.fail()
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	ix.lazy = lz
	ix.thes = defaultThesaurus()
	ix.scratch.New = func() any { return &scratch{} }
	return ix, nil
}

// lazy is what a loaded index reads from its snapshot where it lies: the
// postings of each term and the terms of each document, which Load
// checked. They are decoded where they are read (Index.postingsOf,
// Index.termsOf), into the reader's buffer, until the index changes
// (Index.own).
type lazy struct {
	data        string
	postingsAt  []uint32 // by term ID: where its postings start in data
	postingsLen []int32  // by term ID: how many it has
	termsAt     []uint32 // by document ID: where the count of its terms is in data
	vocabIDs    []int32  // by place in Index.vocab: the term's ID
}

func (lz *lazy) postings(id int32, buf []posting) []posting {
	r := reader{s: lz.data[lz.postingsAt[id]:]}
	buf = buf[:0]
	doc := int32(-1)
	for range lz.postingsLen[id] {
		doc += int32(r.uvarint())
		buf = append(buf, posting{doc: doc, sat: math.Float32frombits(r.uint32()), bit: r.byte()})
	}
	return buf
}

func (lz *lazy) terms(d int32, buf []int32) []int32 {
	r := reader{s: lz.data[lz.termsAt[d]:]}
	buf = buf[:0]
	for range r.uvarint() {
		buf = append(buf, int32(r.uvarint()))
	}
	return buf
}

// postingsOf returns the postings of term id: the index's own, or those
// of a loaded index decoded into *buf, which they are valid until its
// next use.
func (ix *Index) postingsOf(id int32, buf *[]posting) []posting {
	if ix.lazy == nil {
		return ix.postings[id]
	}
	*buf = ix.lazy.postings(id, *buf)
	return *buf
}

// lookup returns the ID of term t, if a document has it. A loaded index
// finds it in the vocabulary, so that Load makes no map of every term.
func (ix *Index) lookup(t string) (int32, bool) {
	if ix.lazy == nil {
		id, ok := ix.ids[t]
		return id, ok
	}
	i, ok := slices.BinarySearch(ix.vocab, t)
	if !ok {
		return 0, false
	}
	return ix.lazy.vocabIDs[i], true
}

// vocabID is the ID of the term at place i of the vocabulary.
func (ix *Index) vocabID(i int) int32 {
	if ix.lazy == nil {
		return ix.ids[ix.vocab[i]]
	}
	return ix.lazy.vocabIDs[i]
}

// df is how many documents have term id.
func (ix *Index) df(id int32) int {
	if ix.lazy == nil {
		return len(ix.postings[id])
	}
	return int(ix.lazy.postingsLen[id])
}

// termsOf returns the terms of document d, as postingsOf its postings.
func (ix *Index) termsOf(d int32, buf *[]int32) []int32 {
	if ix.lazy == nil || !ix.slots[d].live {
		return ix.slots[d].terms
	}
	*buf = ix.lazy.terms(d, *buf)
	return *buf
}

// own decodes what a loaded index left in its snapshot, so that the index
// can change (Replace); every other index owns its postings already.
func (ix *Index) own() {
	lz := ix.lazy
	if lz == nil {
		return
	}
	total := 0
	for _, n := range lz.postingsLen {
		total += int(n)
	}
	flat := make([]posting, total)
	ix.postings = make([][]posting, len(ix.terms))
	for id, n := range lz.postingsLen {
		if n > 0 {
			ix.postings[id] = lz.postings(int32(id), flat[:0:n])
			flat = flat[n:]
		}
	}
	var buf []int32
	for d := range ix.slots {
		if ix.slots[d].live {
			buf = lz.terms(int32(d), buf)
			ix.slots[d].terms = slices.Clone(buf)
		}
	}
	ix.ids = make(map[string]int32, len(lz.vocabIDs))
	for i, id := range lz.vocabIDs {
		ix.ids[ix.vocab[i]] = id
	}
	ix.lazy = nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// reader reads a snapshot; the first thing that does not fit sets err,
// and from then on every read yields zero.
type reader struct {
	s   string
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: it is cut short or does not fit together", ErrSnapshot)
	}
	r.s = ""
}

func (r *reader) take(n int) string {
	if r.err != nil || n < 0 || n > len(r.s) {
		r.fail()
		return ""
	}
	out := r.s[:n]
	r.s = r.s[n:]
	return out
}

func (r *reader) byte() byte {
	if b := r.take(1); b != "" {
		return b[0]
	}
	return 0
}

func (r *reader) uint32() uint32 {
	b := r.take(4)
	if b == "" {
		return 0
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func (r *reader) uint64() uint64 {
	b := r.take(8)
	if b == "" {
		return 0
	}
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// uvarint reads what binary.AppendUvarint wrote.
func (r *reader) uvarint() uint64 {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64 && i < len(r.s); i++ {
		c := r.s[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.s = r.s[i+1:]
			return v
		}
	}
	r.fail()
	return 0
}

// count reads a length, which is at most max (the bytes there are, or
// the things it counts).
func (r *reader) count(max int) int {
	v := r.uvarint()
	if v > uint64(max) {
		r.fail()
		return 0
	}
	return int(v)
}

// index reads an index below n.
func (r *reader) index(n int) int {
	v := r.uvarint()
	if v >= uint64(n) {
		r.fail()
		return 0
	}
	return int(v)
}

func (r *reader) string() string {
	return r.take(r.count(len(r.s)))
}
