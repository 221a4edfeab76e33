package gateway

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/gateway/search"
	"github.com/mcpgate/mcpgate/manager"
)

// catalogIndex keeps a search index over the entries (tools, prompts,
// resources, templates) of every listed server. Each server's documents
// are kept with the catalog they were made from, so a change to one
// server's catalog (a new generation, a new session) makes only that
// server's documents again; the index is then assembled from every
// server's documents. Nothing changed, nothing is rebuilt.
type catalogIndex struct {
	mu      sync.Mutex
	key     string
	ix      *search.Index
	refs    []entry
	servers map[string]*serverDocs
	// whole says ix was built by search.New from every server's documents
	// and not changed since, as a kept index must be (IndexCache).
	whole bool
}

// serverDocs are one server's documents and the entries they stand for,
// made from the catalog key names.
type serverDocs struct {
	key  string
	docs []search.Doc
	refs []entry
}

type hit struct {
	entry
	score float64
}

func newCatalogIndex() *catalogIndex { return &catalogIndex{servers: make(map[string]*serverDocs)} }

// search ranks the entries of byServer for query, best first, keeping
// those keep accepts (all when nil).
func (c *catalogIndex) search(m *manager.Manager, byServer map[string][]entry, query string, limit int, keep func(entry) bool) []hit {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.update(m.Statuses(), byServer)
	n := limit
	if keep != nil {
		n = len(c.refs) // rank everything, then filter
	}
	var out []hit
	for _, h := range c.ix.Search(query, n) {
		r := c.refs[h.Doc]
		if keep != nil && !keep(r) {
			continue
		}
		out = append(out, hit{entry: r, score: h.Score})
		if len(out) == limit {
			break
		}
	}
	return out
}

// update makes again the documents of each server whose catalog changed
// and re-indexes only those servers (search.Index.Replace); the first
// time, or when the index is empty, it builds the index whole.
func (c *catalogIndex) update(statuses []manager.Status, byServer map[string][]entry) {
	var parts []string
	var changed []string
	for _, st := range statuses {
		es, ok := byServer[st.ID]
		if !ok {
			continue
		}
		key := serverKey(st, len(es))
		parts = append(parts, st.ID+"="+key)
		if sd := c.servers[st.ID]; sd == nil || sd.key != key {
			c.servers[st.ID] = serverDocuments(key, es, st.ServerTitle, st.ServerInstructions)
			changed = append(changed, st.ID)
		}
	}
	sort.Strings(parts)
	key := strings.Join(parts, ",")
	if key == c.key && c.ix != nil {
		return
	}
	var gone []string
	for id := range c.servers {
		if _, ok := byServer[id]; !ok {
			gone = append(gone, id)
			delete(c.servers, id)
		}
	}
	c.key = key
	if c.ix == nil {
		var docs []search.Doc
		c.refs = c.refs[:0]
		for _, id := range sortedKeys(byServer) {
			if sd := c.servers[id]; sd != nil {
				docs = append(docs, sd.docs...)
				c.refs = append(c.refs, sd.refs...)
			}
		}
		c.ix = search.New(docs)
		c.whole = true
		return
	}
	c.whole = false
	for _, id := range gone {
		c.ix.Replace(id, nil)
	}
	for _, id := range changed {
		sd := c.servers[id]
		for i, doc := range c.ix.Replace(id, sd.docs) {
			for doc >= len(c.refs) {
				c.refs = append(c.refs, entry{})
			}
			c.refs[doc] = sd.refs[i]
		}
	}
}

// serverKey identifies the catalog a server's documents are made from:
// its session (0 for a catalog held without one), the catalog's
// generation, its title and how many entries were listed. The server's
// instructions are the session's, as its title is.
func serverKey(st manager.Status, entries int) string {
	return strconv.FormatUint(st.ConnectionID, 10) + ":" + strconv.FormatUint(st.Generation, 10) + ":" +
		strconv.Itoa(entries) + ":" + st.ServerTitle
}

// serverDocuments makes the documents of one server's entries.
func serverDocuments(key string, es []entry, title, instructions string) *serverDocs {
	sd := &serverDocs{key: key}
	for _, e := range sortedEntries(map[string][]entry{"": es}) {
		d := search.Doc{Server: e.server, ServerTitle: title, ServerInstructions: instructions,
			Tool: e.name(), Title: e.title(), Description: e.description()}
		switch e.kind {
		case kindTool:
			d.Params = search.ParamsOf(e.tool.InputSchema)
			if d.Title == "" && e.tool.Annotations != nil {
				// Display name precedence: title, then annotations.title.
				d.Title = e.tool.Annotations.Title
			}
		case kindPrompt:
			for _, a := range e.prompt.Arguments {
				d.Params = append(d.Params, search.Param{Name: a.Name, Description: a.Description, Required: a.Required})
			}
		case kindResource:
			d.Tool = cmpOr(e.resource.Name, e.resource.URI)
			d.Description += " " + uriWords(e.resource.URI)
		case kindTemplate:
			d.Tool = cmpOr(e.template.Name, e.template.URITemplate)
			d.Description += " " + uriWords(e.template.URITemplate)
		}
		sd.docs = append(sd.docs, d)
		sd.refs = append(sd.refs, e)
	}
	return sd
}

// uriWords is what of a URI describes the resource: not its scheme, which
// a server's resources share (and which often is the server's own name).
func uriWords(uri string) string {
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		return rest
	}
	return uri
}
