package gateway

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/mcpgate/mcpgate/gateway/search"
)

// IndexCache keeps the search index of one process for the next, so that
// a process started for one search ranks with the index an earlier one
// built instead of decoding every stored catalog and indexing it again
// ([Options.IndexCache]). The gateway gives it a key that digests
// everything the index was made from; a cache holds what it was last
// given. Both methods must be safe for concurrent use.
//
// What is kept is read with the reading program's search model, so a
// cache must give data back only to the program that saved it (the
// command's cache file names the program's build).
type IndexCache interface {
	// Load returns the data last saved under key, or nil. The gateway
	// reads the index in place (search.Load): the cache must not change
	// what it returned.
	Load(key [sha256.Size]byte) []byte
	// Save keeps data under key, in place of what was kept before.
	// Failing is not an error: the next process builds the index anew.
	Save(key [sha256.Size]byte, data []byte)
}

// indexKey digests what the index of every enabled server is made from,
// when each of them answers from its stored catalog: server IDs, their
// titles and the manager's digest of their stored catalogs
// ([manager.Manager.StoredDigest]). ok is false when any of them has a
// live session or no stored catalog: its catalog is then the server's to
// say, not the cache's.
func (g *Gateway) indexKey() (key [sha256.Size]byte, ok bool) {
	ids := g.serverIDs()
	if len(ids) == 0 {
		return key, false
	}
	h := sha256.New()
	h.Write([]byte(cachedIndexMagic))
	for _, id := range ids {
		st, err := g.m.Status(id)
		if err != nil {
			return key, false
		}
		d, ok := g.m.StoredDigest(id)
		if !ok {
			return key, false
		}
		h.Write(binary.AppendUvarint(nil, uint64(len(id))))
		h.Write([]byte(id))
		h.Write(binary.AppendUvarint(nil, uint64(len(st.ServerTitle))))
		h.Write([]byte(st.ServerTitle))
		h.Write(binary.AppendUvarint(nil, uint64(len(st.ServerInstructions))))
		h.Write([]byte(st.ServerInstructions))
		h.Write(d[:])
	}
	h.Sum(key[:0])
	return key, true
}

// cachedIndexMagic starts a kept index; its last byte is the format's
// version.
const cachedIndexMagic = "mcpgate gateway index\x00\x03"

// searchCached answers Search from the kept index under key: it ranks
// with it and answers with the name and description each tool's document
// was kept with, reading no catalog. The key digests every stored
// catalog, title, instructions and setting the index was made from, so
// what was kept is what those catalogs say. ok is false when nothing
// usable is kept (the caller then searches as if nothing were kept).
func (g *Gateway) searchCached(key [sha256.Size]byte, query string, limit int) (hits []SearchHit, ok bool) {
	data := g.cache.Load(key)
	if data == nil {
		return nil, false
	}
	refs, rest, err := decodeRefs(data)
	if err != nil {
		return nil, false
	}
	ix, err := search.Load(rest)
	if err != nil || ix.Len() != refs.len() {
		return nil, false
	}
	// Enough hits that limit of them are tools, whatever the others are.
	for _, h := range ix.Search(query, limit+refs.len()-refs.tools) {
		if h.Doc >= refs.len() {
			return nil, false
		}
		r := refs.ref(h.Doc)
		if r.kind != kindTool {
			continue
		}
		hits = append(hits, SearchHit{Server: r.server, Tool: r.name, Score: h.Score, Description: r.description})
		if len(hits) == limit {
			break
		}
	}
	return hits, true
}

// saveIndex keeps the index the last search built, under key, if it was
// built whole from the catalogs key digests.
func (g *Gateway) saveIndex(key [sha256.Size]byte) {
	if again, ok := g.indexKey(); !ok || again != key {
		return // a server connected meanwhile, or failed to decode
	}
	data, ok := g.index.snapshot()
	if ok {
		g.cache.Save(key, data)
	}
}

// snapshot writes down the index with what each document stands for
// (server, kind, name, and a tool's description), if the index was built
// whole (by search.New) and has not changed since.
func (c *catalogIndex) snapshot() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.whole || c.ix == nil {
		return nil, false
	}
	b := []byte(cachedIndexMagic)
	// The documents are by server, in server order; each server's in the
	// order of its entries (sortedEntries).
	type run struct {
		server string
		n      int
	}
	var runs []run
	for _, r := range c.refs {
		if len(runs) == 0 || runs[len(runs)-1].server != r.server {
			runs = append(runs, run{server: r.server})
		}
		runs[len(runs)-1].n++
	}
	b = binary.AppendUvarint(b, uint64(len(runs)))
	for _, r := range runs {
		b = appendString(b, r.server)
		b = binary.AppendUvarint(b, uint64(r.n))
	}
	for _, r := range c.refs {
		b = append(b, codeOfKind(r.kind))
		b = appendString(b, r.name())
		if r.kind == kindTool {
			b = appendString(b, r.tool.Description)
		}
	}
	b, err := c.ix.AppendSnapshot(b)
	return b, err == nil
}

// cachedRef is what a kept index's document stands for: an entry of
// server, of kind, named name, and a tool's description.
type cachedRef struct {
	server      string
	kind        kind
	name        string
	description string
}

// cachedRefs are the documents of a kept index, left in the kept bytes:
// a search reads the few entries it answers with, not every one.
type cachedRefs struct {
	data  []byte
	at    []uint32    // by document: where its entry starts in data
	runs  []cachedRun // the servers, in document order
	tools int         // how many documents are tools
}

// cachedRun is a server and the first of its documents, which run on to
// the next run's first.
type cachedRun struct {
	first  int
	server string
}

func (r *cachedRefs) len() int { return len(r.at) }

// ref reads the entry of doc, which decodeRefs checked. Its strings are
// copies: the kept bytes are the cache's, and a hit may outlive them.
func (r *cachedRefs) ref(doc int) cachedRef {
	i, _ := slices.BinarySearchFunc(r.runs, doc, func(run cachedRun, doc int) int { return cmp.Compare(run.first, doc+1) })
	e := cachedEntry{b: r.data[r.at[doc]:]}
	k, name, desc, _ := e.next()
	return cachedRef{server: r.runs[i-1].server, kind: k, name: string(name), description: string(desc)}
}

// kindByCode is each kind by the byte a kept index writes it as.
var kindByCode = [...]kind{1: kindTool, 2: kindPrompt, 3: kindResource, 4: kindTemplate}

func codeOfKind(k kind) byte {
	return byte(slices.Index(kindByCode[:], k))
}

func kindOfCode(c byte) (kind, bool) {
	if int(c) >= len(kindByCode) || kindByCode[c] == "" {
		return "", false
	}
	return kindByCode[c], true
}

var errCachedIndex = errors.New("not a kept gateway index")

// cachedEntry reads the bytes of kept documents, one entry at a time.
type cachedEntry struct{ b []byte }

func (e *cachedEntry) uvarint() (uint64, bool) {
	v, n := binary.Uvarint(e.b)
	if n <= 0 {
		return 0, false
	}
	e.b = e.b[n:]
	return v, true
}

func (e *cachedEntry) bytes() ([]byte, bool) {
	n, ok := e.uvarint()
	if !ok || n > uint64(len(e.b)) {
		return nil, false
	}
	s := e.b[:n:n]
	e.b = e.b[n:]
	return s, true
}

// next reads one document's entry: its kind, name and, for a tool, its
// description.
func (e *cachedEntry) next() (k kind, name, desc []byte, ok bool) {
	if len(e.b) == 0 {
		return "", nil, nil, false
	}
	k, known := kindOfCode(e.b[0])
	e.b = e.b[1:]
	name, ok = e.bytes()
	if !known || !ok {
		return "", nil, nil, false
	}
	if k == kindTool {
		if desc, ok = e.bytes(); !ok {
			return "", nil, nil, false
		}
	}
	return k, name, desc, true
}

// decodeRefs reads what snapshot wrote before the index, checking every
// entry, and returns the index's bytes.
func decodeRefs(b []byte) (*cachedRefs, []byte, error) {
	if len(b) < len(cachedIndexMagic) || string(b[:len(cachedIndexMagic)]) != cachedIndexMagic || uint64(len(b)) > math.MaxUint32 {
		return nil, nil, errCachedIndex
	}
	e := cachedEntry{b: b[len(cachedIndexMagic):]}
	nruns, ok := e.uvarint()
	if !ok || nruns > uint64(len(e.b)) {
		return nil, nil, errCachedIndex
	}
	refs := &cachedRefs{data: b, runs: make([]cachedRun, 0, nruns)}
	docs := 0
	for range nruns {
		server, ok1 := e.bytes()
		n, ok2 := e.uvarint()
		// Each document takes two bytes at least further on.
		if !ok1 || !ok2 || n > uint64(len(e.b)) || uint64(docs)+n > uint64(len(e.b)) {
			return nil, nil, errCachedIndex
		}
		if n > 0 {
			refs.runs = append(refs.runs, cachedRun{first: docs, server: string(server)})
		}
		docs += int(n)
	}
	refs.at = make([]uint32, docs)
	for d := range refs.at {
		refs.at[d] = uint32(len(b) - len(e.b))
		k, _, _, ok := e.next()
		if !ok {
			return nil, nil, errCachedIndex
		}
		if k == kindTool {
			refs.tools++
		}
	}
	return refs, e.b, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
