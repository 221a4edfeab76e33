package gateway

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"

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
	if err != nil || ix.Len() != len(refs) {
		return nil, false
	}
	for _, h := range ix.Search(query, len(refs)) { // rank everything, then keep the tools
		if h.Doc >= len(refs) {
			return nil, false
		}
		r := refs[h.Doc]
		if r.kind != kindTool {
			continue
		}
		hits = append(hits, SearchHit{Server: r.server, Tool: r.name, Score: h.Score, Description: string(r.description)})
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
		b = append(b, kindCodes[r.kind])
		b = appendString(b, r.name())
		if r.kind == kindTool {
			b = appendString(b, r.tool.Description)
		}
	}
	b, err := c.ix.AppendSnapshot(b)
	return b, err == nil
}

// cachedRef is what a kept index's document stands for: an entry of
// server, of kind, named name, and a tool's description (left in the
// kept bytes until a search answers with it).
type cachedRef struct {
	server      string
	kind        kind
	name        string
	description []byte
}

var kindCodes = map[kind]byte{kindTool: 1, kindPrompt: 2, kindResource: 3, kindTemplate: 4}

var errCachedIndex = errors.New("not a kept gateway index")

// decodeRefs reads what snapshot wrote before the index, and returns the
// index's bytes.
func decodeRefs(b []byte) ([]cachedRef, []byte, error) {
	if len(b) < len(cachedIndexMagic) || string(b[:len(cachedIndexMagic)]) != cachedIndexMagic {
		return nil, nil, errCachedIndex
	}
	b = b[len(cachedIndexMagic):]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	str := func() (string, bool) {
		n, ok := next()
		if !ok || n > uint64(len(b)) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	nruns, ok := next()
	if !ok || nruns > uint64(len(b)) {
		return nil, nil, errCachedIndex
	}
	var refs []cachedRef
	for range nruns {
		server, ok1 := str()
		n, ok2 := next()
		// Each document takes two bytes at least further on.
		if !ok1 || !ok2 || n > uint64(len(b)) || uint64(len(refs))+n > uint64(len(b)) {
			return nil, nil, errCachedIndex
		}
		for range n {
			refs = append(refs, cachedRef{server: server})
		}
	}
	codes := map[byte]kind{}
	for k, c := range kindCodes {
		codes[c] = k
	}
	for i := range refs {
		if len(b) == 0 {
			return nil, nil, errCachedIndex
		}
		k, known := codes[b[0]]
		b = b[1:]
		name, ok := str()
		if !known || !ok {
			return nil, nil, errCachedIndex
		}
		refs[i].kind, refs[i].name = k, name
		if k == kindTool {
			n, ok := next()
			if !ok || n > uint64(len(b)) {
				return nil, nil, errCachedIndex
			}
			refs[i].description = b[:n:n]
			b = b[n:]
		}
	}
	return refs, b, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
