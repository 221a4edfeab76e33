package gateway

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate/gateway/search"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogIndex keeps a search index over the enabled tools of every
// server, rebuilt only when a catalog or the set of servers changed.
type catalogIndex struct {
	mu   sync.Mutex
	key  string
	ix   *search.Index
	refs []hit
}

type hit struct {
	server string
	tool   *mcp.Tool
	score  float64
}

func newCatalogIndex() *catalogIndex { return &catalogIndex{} }

// search ranks the tools of byServer for query. The index covers every
// listed tool; hits are kept to the servers asked about.
func (c *catalogIndex) search(m *manager.Manager, byServer map[string][]*mcp.Tool, query string, limit int) []hit {
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
	var out []hit
	for _, h := range c.ix.Search(query, limit) {
		r := c.refs[h.Doc]
		r.score = h.Score
		out = append(out, r)
	}
	return out
}

func (c *catalogIndex) build(byServer map[string][]*mcp.Tool, titles map[string]string) {
	var docs []search.Doc
	c.refs = c.refs[:0]
	for _, id := range sortedKeys(byServer) {
		for _, t := range byServer[id] {
			docs = append(docs, search.Doc{
				Server:      id,
				ServerTitle: titles[id],
				Tool:        t.Name,
				Title:       t.Title,
				Description: t.Description,
				Params:      params(t.InputSchema),
			})
			c.refs = append(c.refs, hit{server: id, tool: t})
		}
	}
	c.ix = search.New(docs)
}

// fingerprint identifies the catalogs an index was built from.
func fingerprint(m *manager.Manager, byServer map[string][]*mcp.Tool) string {
	var parts []string
	for _, st := range m.Statuses() {
		if _, ok := byServer[st.ID]; ok {
			parts = append(parts, st.ID+":"+strconv.FormatUint(st.ConnectionID, 10)+":"+strconv.FormatUint(st.Generation, 10)+":"+strconv.Itoa(len(byServer[st.ID])))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// params reads the top-level parameters of an input schema.
func params(schema any) []search.Param {
	s, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		return nil
	}
	var out []search.Param
	for _, name := range sortedKeys(props) {
		p := search.Param{Name: name}
		if pm, ok := props[name].(map[string]any); ok {
			p.Description, _ = pm["description"].(string)
			// Tools that bundle actions behind one parameter name them only
			// in its enum; searching them needs those words.
			if enum, ok := pm["enum"].([]any); ok {
				var vals []string
				for _, v := range enum {
					if s, ok := v.(string); ok {
						vals = append(vals, s)
					}
				}
				if len(vals) > 0 {
					p.Description += " One of: " + strings.Join(vals, ", ") + "."
				}
			}
		}
		out = append(out, p)
	}
	return out
}
