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
// resources, templates) of every listed server, rebuilt only when a
// catalog or the set of servers changed.
type catalogIndex struct {
	mu   sync.Mutex
	key  string
	ix   *search.Index
	refs []entry
}

type hit struct {
	entry
	score float64
}

func newCatalogIndex() *catalogIndex { return &catalogIndex{} }

// search ranks the entries of byServer for query, best first, keeping
// those keep accepts (all when nil).
func (c *catalogIndex) search(m *manager.Manager, byServer map[string][]entry, query string, limit int, keep func(entry) bool) []hit {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := fingerprint(m, byServer)
	if key != c.key || c.ix == nil {
		titles := make(map[string]string)
		for _, st := range m.Statuses() {
			titles[st.ID] = st.ServerTitle
		}
		c.build(byServer, titles)
		c.key = key
	}
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

func (c *catalogIndex) build(byServer map[string][]entry, titles map[string]string) {
	var docs []search.Doc
	c.refs = c.refs[:0]
	for _, e := range sortedEntries(byServer) {
		d := search.Doc{Server: e.server, ServerTitle: titles[e.server], Tool: e.name(), Title: e.title(), Description: e.description()}
		switch e.kind {
		case kindTool:
			d.Params = search.ParamsOf(e.tool.InputSchema)
			if d.Title == "" && e.tool.Annotations != nil {
				// Display name precedence: title, then annotations.title.
				d.Title = e.tool.Annotations.Title
			}
		case kindPrompt:
			for _, a := range e.prompt.Arguments {
				d.Params = append(d.Params, search.Param{Name: a.Name, Description: a.Description})
			}
		case kindResource:
			d.Tool = cmpOr(e.resource.Name, e.resource.URI)
			d.Description += " " + uriWords(e.resource.URI)
		case kindTemplate:
			d.Tool = cmpOr(e.template.Name, e.template.URITemplate)
			d.Description += " " + uriWords(e.template.URITemplate)
		}
		docs = append(docs, d)
		c.refs = append(c.refs, e)
	}
	c.ix = search.New(docs)
}

// uriWords is what of a URI describes the resource: not its scheme, which
// a server's resources share (and which often is the server's own name).
func uriWords(uri string) string {
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		return rest
	}
	return uri
}

// fingerprint identifies the catalogs an index was built from.
func fingerprint(m *manager.Manager, byServer map[string][]entry) string {
	var parts []string
	for _, st := range m.Statuses() {
		if es, ok := byServer[st.ID]; ok {
			parts = append(parts, st.ID+":"+strconv.FormatUint(st.ConnectionID, 10)+":"+strconv.FormatUint(st.Generation, 10)+":"+strconv.Itoa(len(es)))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
