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
const snapshotMagic = "mcpgate search index\x00\x02"

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
	// What the reader allocates, first: the terms, all their postings,
	// the document slots and all their terms.
	postings, docTerms := 0, 0
	for _, ps := range ix.postings {
		postings += len(ps)
	}
	for _, s := range ix.slots {
		docTerms += len(s.terms)
	}
	b = binary.AppendUvarint(b, uint64(len(ix.terms)))
	b = binary.AppendUvarint(b, uint64(postings))
	b = binary.AppendUvarint(b, uint64(len(ix.slots)))
	b = binary.AppendUvarint(b, uint64(docTerms))
	for id, t := range ix.terms {
		b = appendString(b, t)
		ps := ix.postings[id]
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
	for _, t := range ix.vocab {
		b = binary.AppendUvarint(b, uint64(ix.ids[t]))
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
		b = binary.AppendUvarint(b, uint64(len(s.terms)))
		for _, t := range s.terms {
			b = binary.AppendUvarint(b, uint64(t.id))
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(t.sat))
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
	// an allocation of its own nor a copy of the whole. A process started
	// for one search reads the snapshot once and touches no more memory
	// than it must (where a page fault is dear, each fresh page costs).
	r := &reader{s: unsafe.String(unsafe.SliceData(data), len(data))}
	if r.take(len(snapshotMagic)) != snapshotMagic {
		return nil, ErrSnapshot
	}
	size := len(data)
	ix := &Index{cfg: defaultConfig, defaultModel: true}
	ix.n = r.count(size)
	for k := range ix.total {
		ix.total[k] = math.Float64frombits(r.uint64())
	}
	nterms, npostings, nslots, ndocTerms := r.count(size), r.count(size), r.count(size), r.count(size)
	postings := make([]posting, npostings)
	docTerms := make([]docTerm, ndocTerms)
	ix.terms = make([]string, 0, nterms)
	ix.postings = make([][]posting, 0, nterms)
	ix.ids = make(map[string]int32, nterms)
	for range nterms {
		t := r.string()
		n := r.count(len(postings))
		ps := postings[:n:n]
		postings = postings[n:]
		doc := int64(-1)
		for i := range ps {
			step := r.uvarint()
			if step == 0 || step > uint64(size) {
				r.fail() // postings are in document order, each document once
			}
			doc += int64(step)
			ps[i] = posting{doc: int32(min(doc, math.MaxInt32)), sat: math.Float32frombits(r.uint32()), bit: r.byte()}
		}
		if r.err != nil {
			break
		}
		// A term no live document has any more keeps its ID, without
		// postings, but is no longer known by its text (Index.forget).
		if len(ps) > 0 {
			if _, dup := ix.ids[t]; dup {
				r.fail()
			}
			ix.ids[t] = int32(len(ix.terms))
		} else {
			ps = nil
		}
		ix.terms = append(ix.terms, t)
		ix.postings = append(ix.postings, ps)
	}
	nvocab := r.count(nterms)
	ix.vocab = make([]string, 0, nvocab)
	for range nvocab {
		id := r.index(len(ix.terms))
		if r.err != nil || ix.postings[id] == nil {
			r.fail()
			break
		}
		ix.vocab = append(ix.vocab, ix.terms[id])
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
		n := r.count(len(docTerms))
		s.terms = docTerms[:n:n]
		docTerms = docTerms[n:]
		for i := range s.terms {
			s.terms[i] = docTerm{id: int32(r.index(len(ix.terms))), sat: math.Float32frombits(r.uint32())}
		}
		if r.err != nil {
			break
		}
		if ix.prior[d] < 0 {
			for _, t := range s.terms {
				ix.aboutDF[t.id]++
			}
		}
		ix.byServer[s.server] = append(ix.byServer[s.server], int32(d))
	}
	nfree := r.count(nslots)
	for range nfree {
		ix.free = append(ix.free, int32(r.index(nslots)))
	}
	if r.err == nil && (len(r.s) != 0 || live != ix.n || len(postings) != 0 || len(docTerms) != 0 ||
		!slices.IsSorted(ix.vocab) || len(ix.vocab) != len(ix.ids)) {
		r.fail()
	}
	for _, ps := range ix.postings {
		for _, p := range ps {
			if r.err != nil || int(p.doc) >= nslots || !ix.slots[p.doc].live {
				r.fail()
				break
			}
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
	ix.thes = defaultThesaurus()
	ix.scratch.New = func() any { return &scratch{} }
	return ix, nil
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
