package manager

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stored catalogs (Options.Catalogs): each server's last valid catalog,
// kept in the store so that the next process answers list, search and
// describe at once instead of connecting every server first.
//
// A stored catalog is loaded by New (and by Update for a server it adds)
// when it was listed from the server's configured URL and is younger than
// Options.CatalogMaxAge. While the server has no live session, reads of a
// kind the stored catalog holds answer from it without connecting, and the
// status says Cached with its counts; the state stays what it is
// (disconnected, or the error of the last attempt), never ready. With
// Options.RefreshCached such a read also connects the server in the
// background, at most maxBackgroundRefreshes servers at a time. Once a
// live session is installed, reads use its catalog as before.
//
// Every commit of a live catalog becomes the server's held copy, and is
// written back by one writer per server: commits made while it writes
// cost one more write, not one each, and a catalog whose content did not
// change (a 2026-07-28 server re-listed on every use) is not written
// again. A catalog bigger than store.MaxCatalogBytes is not stored, and
// the stored one is deleted, since it no longer says what the server
// offers. A change of the server's URL drops the held copy; the stored
// one, listed from the old URL, is then used by no one.

// DefaultCatalogMaxAge is how old a stored catalog may be and still be
// used, when Options.CatalogMaxAge is zero.
const DefaultCatalogMaxAge = 7 * 24 * time.Hour

// catalogWriteTimeout bounds one write of a catalog to the store; Close
// waits for a write in progress, so it outlives the manager's context.
const catalogWriteTimeout = 5 * time.Second

// maxBackgroundRefreshes bounds the servers Options.RefreshCached
// connects at once.
const maxBackgroundRefreshes = 8

// catalogLoadTimeout bounds reading the stored catalogs in New.
const catalogLoadTimeout = 5 * time.Second

// heldCatalog is the catalog a server answers from while it has no live
// session: the one the store held, or the last one a live session listed.
// One from the store is read whole and decoded when first needed (raw is
// then nil): New reads only what the store lists of each (URL, age,
// counts), so a process with many servers starts without reading or
// decoding their catalogs.
type heldCatalog struct {
	catalogs
	url       string
	fetchedAt time.Time
	// stored is the store's sum of the catalog it was read from
	// (store.Catalog.Sum), zero for a live session's copy or when the
	// store kept none: how TakeStoredCatalog tells the store's is another.
	stored [sha256.Size]byte
	// title and instructions are what the server said of itself to the
	// session that listed the catalog, sanitized (again, when read from
	// the store: it is shared).
	title, instructions string
	raw                 *store.Catalog
	// sum is catalogSum of the stored catalog it was read from, once
	// StoredDigest took it (nil before, and for a live session's copy).
	sum *[sha256.Size]byte
}

// heldCountsLocked fills a status's counts from the held catalog, from
// the counts stored with it while it is not decoded (unless tools are
// disabled, which only the names tell). It reports whether there is one.
func (s *server) heldCountsLocked(st *Status) bool {
	if h := s.held; h != nil && h.raw != nil && len(s.cfg.DisabledTools) == 0 {
		st.Tools, st.Prompts, st.Resources, st.Templates = h.raw.Counts[0], h.raw.Counts[1], h.raw.Counts[2], h.raw.Counts[3]
		st.Generation = h.generation
		return true
	}
	if !s.decodedLocked() {
		return false
	}
	s.held.fill(st, &s.cfg)
	return true
}

// decodedLocked decodes a stored catalog on first use; a catalog that does
// not decode is dropped. It reports whether s.held may be used.
func (s *server) decodedLocked() bool {
	h := s.held
	if h == nil {
		return false
	}
	if h.raw == nil {
		return true
	}
	c := s.storedListsLocked()
	if c == nil {
		return false
	}
	d, err := decodeCatalog(c, s.m.opts.Limits)
	if err != nil {
		s.m.logf(s.id, "ignoring the stored catalog: %v", err)
		s.held = nil
		return false
	}
	d.sum, d.generation = h.sum, h.generation
	s.held = d
	return true
}

// storedListsLocked returns the stored catalog of a held catalog not yet
// decoded, with its lists: read now if New listed it without them (a
// local read, which never waits for the store's write lock). A catalog
// that cannot be read is dropped, and nil returned.
func (s *server) storedListsLocked() *store.Catalog {
	h := s.held
	if h.raw.Tools != nil {
		return h.raw
	}
	ctx, cancel := context.WithTimeout(s.m.ctx, catalogLoadTimeout)
	full, err := s.m.opts.Catalogs.GetCatalog(ctx, s.m.opts.Tenant, s.id)
	cancel()
	if err == nil && full.URL != s.cfg.URL {
		err = errors.New("it was replaced by one of another URL")
	}
	if err != nil {
		s.m.logf(s.id, "ignoring the stored catalog: %v", err)
		s.held = nil
		return nil
	}
	if s.persist.loaded == h.raw {
		s.persist.loaded, s.persist.generation = full, full.Generation
	}
	h.raw = full
	return full
}

// TakeStoredCatalog has server id answer from the catalog the store holds
// now, when it answers from a stored catalog and the store's is another:
// another process listed the server since (a replica of the hosted
// gateway, which the store's change notices tell). A server with a live
// session keeps its own catalog, and one the store holds of another URL,
// or older than Options.CatalogMaxAge, is not taken. The status's
// Generation changes, and OnStateChange is called, when it is taken.
func (m *Manager) TakeStoredCatalog(ctx context.Context, id string) error {
	s, err := m.server(id)
	if err != nil || m.opts.Catalogs == nil {
		return err
	}
	s.mu.Lock()
	live := s.sess != nil
	s.mu.Unlock()
	if live {
		return nil
	}
	c, err := m.opts.Catalogs.GetCatalog(ctx, m.opts.Tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	h := s.held
	if s.sess != nil || c.URL != s.cfg.URL || m.now().Sub(c.FetchedAt) > m.opts.CatalogMaxAge ||
		(h != nil && h.stored != [sha256.Size]byte{} && h.stored == c.Sum) {
		s.mu.Unlock()
		return nil
	}
	next := &heldCatalog{url: c.URL, fetchedAt: c.FetchedAt, raw: c}
	next.about(c)
	if h != nil {
		next.generation = h.generation + 1
	}
	s.held = next
	s.persist.loaded, s.persist.generation = c, c.Generation
	s.mu.Unlock()
	s.notify()
	return nil
}

// StoredDigest returns, while server id answers reads from a stored
// catalog ([Status.Cached]: enabled, no live session), a digest of
// everything those reads answer from: the stored lists (by the sum the
// store keeps of them, store.Catalog.Sum, or for a catalog stored without
// one by the lists themselves), the tools its configuration disables and
// the limits the lists are read with. Equal digests mean equal answers,
// so whoever makes something of a catalog (the gateway's search index)
// can keep it under the digest for the next process. It decodes nothing.
//
// ok is false while the server has a live session or is disabled, when
// it holds no stored catalog, or one a process decoded before asking, or
// one seen to miss a list (a read of that kind connects). Whether a list
// is missing is seen once the lists are read: whoever keeps something
// should ask again after reading, and keep it only if the digest is the
// same.
func (m *Manager) StoredDigest(id string) (digest [sha256.Size]byte, ok bool) {
	s, err := m.server(id)
	if err != nil {
		return digest, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held
	if s.sess != nil || !s.cfg.Enabled || h == nil {
		return digest, false
	}
	switch {
	case h.raw == nil:
		for k := range numKinds {
			if !h.m[k].loaded {
				return digest, false
			}
		}
	case h.raw.Tools != nil && (h.raw.Prompts == nil || h.raw.Resources == nil || h.raw.Templates == nil):
		return digest, false
	}
	if h.sum == nil && h.raw != nil {
		// The store's sum of the catalog listed, else the lists' own.
		sum := h.raw.Sum
		if sum == ([sha256.Size]byte{}) {
			c := s.storedListsLocked()
			if c == nil {
				return digest, false
			}
			sum = catalogSum(c)
		}
		h.sum = &sum
	}
	if h.sum == nil {
		return digest, false
	}
	d := sha256.New()
	d.Write(h.sum[:])
	fmt.Fprintf(d, "\x00max entries %d\x00disabled", s.m.opts.Limits.MaxEntries)
	disabled := slices.Clone(s.cfg.DisabledTools)
	slices.Sort(disabled)
	for _, t := range disabled {
		fmt.Fprintf(d, " %q", t)
	}
	d.Sum(digest[:0])
	return digest, true
}

// persistState is a server's catalog writer: at most one write in flight,
// and one more queued however many commits came meanwhile.
type persistState struct {
	dirty   bool
	running bool
	// sum is the content of the catalog last written, and generation its
	// stored generation; loaded is the stored catalog read at start, whose
	// sum is taken only when a write must be compared with it.
	sum        [sha256.Size]byte
	generation uint64
	loaded     *store.Catalog
}

// loadStored reads the stored catalogs of the given servers (all
// configured ones when ids is nil) and holds those that may be used.
// Failures are logged: a catalog store is a cache.
func (m *Manager) loadStored(ctx context.Context, ids []string) {
	cs := m.opts.Catalogs
	if cs == nil {
		return
	}
	var list []*store.Catalog
	if ids == nil {
		var err error
		if list, err = cs.Catalogs(ctx, m.opts.Tenant); err != nil {
			m.logf("", "reading stored catalogs: %v", err)
			return
		}
	} else {
		for _, id := range ids {
			c, err := cs.GetCatalog(ctx, m.opts.Tenant, id)
			if err != nil {
				if !errors.Is(err, store.ErrNotFound) {
					m.logf(id, "reading the stored catalog: %v", err)
				}
				continue
			}
			list = append(list, c)
		}
	}
	now := m.now()
	for _, c := range list {
		m.mu.Lock()
		s := m.servers[c.Server]
		m.mu.Unlock()
		if s == nil {
			continue
		}
		s.mu.Lock()
		url := s.cfg.URL
		s.mu.Unlock()
		if c.URL != url || now.Sub(c.FetchedAt) > m.opts.CatalogMaxAge {
			continue
		}
		s.mu.Lock()
		if s.cfg.URL == c.URL && s.sess == nil && s.held == nil {
			s.held = &heldCatalog{url: c.URL, fetchedAt: c.FetchedAt, raw: c}
			s.held.about(c)
			s.persist.loaded, s.persist.generation = c, c.Generation
		}
		s.mu.Unlock()
	}
}

// decodeCatalog turns a stored catalog into a held one, validating every
// entry again as a fresh list would: the store is shared, and its content
// came from a remote server.
func decodeCatalog(c *store.Catalog, lim Limits) (*heldCatalog, error) {
	h := &heldCatalog{url: c.URL, fetchedAt: c.FetchedAt}
	h.about(c)
	var err error
	if h.tools, err = decodeList(c.Tools, lim, validTool); err != nil {
		return nil, err
	}
	if h.prompts, err = decodeList(c.Prompts, lim, validPrompt); err != nil {
		return nil, err
	}
	if h.resources, err = decodeList(c.Resources, lim, validResource); err != nil {
		return nil, err
	}
	if h.templates, err = decodeList(c.Templates, lim, validTemplate); err != nil {
		return nil, err
	}
	if c.Tools == nil {
		return nil, errors.New("it has no tools list")
	}
	for k, raw := range [numKinds]json.RawMessage{c.Tools, c.Prompts, c.Resources, c.Templates} {
		h.m[k].loaded = raw != nil
		h.m[k].fetched = c.FetchedAt
	}
	return h, nil
}

// about takes what the server said of itself from a stored catalog.
func (h *heldCatalog) about(c *store.Catalog) {
	h.stored = c.Sum
	h.title = mcpgate.Sanitize(c.Title, 80)
	h.instructions = mcpgate.Sanitize(c.Instructions, maxInstructions)
}

func decodeList[T any](raw json.RawMessage, lim Limits, valid func(*T) error) ([]*T, error) {
	if raw == nil {
		return nil, nil
	}
	var all []*T
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	out := all[:0]
	for _, it := range all {
		if it != nil && valid(it) == nil && len(out) < lim.MaxEntries {
			out = append(out, it)
		}
	}
	return out, nil
}

// heldFor returns the held catalog reads of k may answer from: the server
// is enabled, has no live session, and the held catalog has k.
func (s *server) heldForLocked(k kind) *heldCatalog {
	if s.sess != nil || !s.cfg.Enabled || !s.decodedLocked() || !s.held.m[k].loaded {
		return nil
	}
	return s.held
}

// fromHeld answers a read from the held catalog, and with
// Options.RefreshCached connects the server in the background.
func fromHeld[T any](s *server, k kind, pick func(*catalogs, *mcpgate.ServerConfig) []T) ([]T, bool) {
	s.mu.Lock()
	h := s.heldForLocked(k)
	if h == nil {
		s.mu.Unlock()
		return nil, false
	}
	out := pick(&h.catalogs, &s.cfg)
	refresh := s.m.opts.RefreshCached && !s.refreshing && s.attempt == nil && s.state == mcpgate.StateDisconnected
	if refresh {
		s.refreshing = true
		s.m.wg.Add(1) // under mu, as drop counts its close
	}
	s.mu.Unlock()
	if refresh {
		go func() {
			defer s.m.wg.Done()
			s.refreshHeld()
		}()
	}
	return out, true
}

// refreshHeld connects the server in the background, in one of the
// manager's refresh slots, so the held catalog is replaced by a live one.
// A connect that fails leaves the state saying why; reads go on answering
// from the held catalog and start no new connect until the state is
// disconnected again.
func (s *server) refreshHeld() {
	defer func() {
		s.mu.Lock()
		s.refreshing = false
		s.mu.Unlock()
	}()
	select {
	case s.m.refreshSlots <- struct{}{}:
	case <-s.m.ctx.Done():
		return
	}
	defer func() { <-s.m.refreshSlots }()
	s.ensure(s.m.ctx)
}

// catalogCommittedLocked is called after a live catalog changed (a list
// committed, a session installed): the catalog becomes the held copy and
// is written back. A session still loading its catalogs waits until it is
// installed, so a connect costs one write.
func (s *server) catalogCommittedLocked() {
	if s.m.opts.Catalogs == nil || s.sess == nil || s.installing != nil {
		return
	}
	h := &heldCatalog{catalogs: s.catalog, url: s.cfg.URL, title: s.sess.title, instructions: s.sess.instructions}
	for k := range numKinds {
		mi := &h.m[k]
		mi.stale, mi.invalid, mi.failed, mi.diags = false, false, nil, nil
		if !mi.loaded && !s.sess.supports(k) {
			mi.loaded = true // the server offers none
		}
		if mi.loaded && !mi.fetched.IsZero() && (h.fetchedAt.IsZero() || mi.fetched.Before(h.fetchedAt)) {
			h.fetchedAt = mi.fetched
		}
	}
	if !h.m[kindTools].loaded {
		return
	}
	s.held = h
	s.persist.dirty = true
	if s.persist.running {
		return
	}
	s.persist.running = true
	protocol := s.sess.protocol
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		s.writeCatalogs(protocol)
	}()
}

// writeCatalogs is the server's one catalog writer: it writes the held
// catalog until no commit is left unwritten.
func (s *server) writeCatalogs(protocol string) {
	for {
		s.mu.Lock()
		h := s.held
		if !s.persist.dirty || h == nil {
			s.persist.running = false
			s.mu.Unlock()
			return
		}
		s.persist.dirty = false
		ttl := time.Duration(0)
		for k := range numKinds {
			if mi := h.m[k]; mi.expires && (ttl == 0 || mi.ttl < ttl) {
				ttl = mi.ttl
			}
		}
		rec := &store.Catalog{Tenant: s.m.opts.Tenant, Server: s.id, URL: h.url, Protocol: protocol,
			Title: h.title, Instructions: h.instructions, FetchedAt: h.fetchedAt, TTL: ttl,
			Counts: [4]int{len(h.tools), len(h.prompts), len(h.resources), len(h.templates)}}
		if l := s.persist.loaded; l != nil && l.Tools != nil {
			s.persist.sum, s.persist.loaded = catalogSum(l), nil
		}
		last := s.persist.sum
		s.mu.Unlock()

		err := encodeCatalog(rec, &h.catalogs)
		sum := catalogSum(rec)
		if err == nil && sum == last {
			continue // nothing new to say
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.m.ctx), catalogWriteTimeout)
		switch {
		case err != nil:
			s.m.logf(s.id, "not storing the catalog: %v", err)
		case rec.Size() > store.MaxCatalogBytes:
			s.m.logf(s.id, "not storing the catalog: %d bytes exceeds the %d-byte bound", rec.Size(), store.MaxCatalogBytes)
			err = s.m.opts.Catalogs.DeleteCatalog(ctx, rec.Tenant, rec.Server)
			sum = [sha256.Size]byte{}
		default:
			s.mu.Lock()
			s.persist.generation++
			rec.Generation = s.persist.generation
			s.mu.Unlock()
			err = s.m.opts.Catalogs.PutCatalog(ctx, rec)
		}
		cancel()
		s.mu.Lock()
		if err != nil {
			s.m.logf(s.id, "storing the catalog: %v", err)
		} else {
			s.persist.sum = sum
		}
		s.mu.Unlock()
	}
}

func encodeCatalog(rec *store.Catalog, c *catalogs) error {
	lists := [numKinds]*json.RawMessage{&rec.Tools, &rec.Prompts, &rec.Resources, &rec.Templates}
	vals := [numKinds]any{c.tools, c.prompts, c.resources, c.templates}
	for k := range numKinds {
		if !c.m[k].loaded {
			continue
		}
		b, err := marshalList(vals[k])
		if err != nil {
			return err
		}
		*lists[k] = b
	}
	return nil
}

// marshalList encodes a list, an empty one as [].
func marshalList(v any) (json.RawMessage, error) {
	switch l := v.(type) {
	case []*mcp.Tool:
		if l == nil {
			return json.RawMessage("[]"), nil
		}
	case []*mcp.Prompt:
		if l == nil {
			return json.RawMessage("[]"), nil
		}
	case []*mcp.Resource:
		if l == nil {
			return json.RawMessage("[]"), nil
		}
	case []*mcp.ResourceTemplate:
		if l == nil {
			return json.RawMessage("[]"), nil
		}
	}
	return json.Marshal(v)
}

// catalogSum identifies a stored catalog's content: its URL and lists.
func catalogSum(c *store.Catalog) [sha256.Size]byte { return c.ContentSum() }

// dropHeldLocked forgets the held catalog, when the server's URL changed:
// it describes another server. The stored one is left for the next live
// list to replace; until then its URL keeps anyone from using it.
func (s *server) dropHeldLocked() {
	s.held = nil
	s.persist = persistState{running: s.persist.running}
}
