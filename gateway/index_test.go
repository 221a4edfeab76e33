package gateway

import (
	"testing"

	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func toolEntries(server string, names ...string) []entry {
	var es []entry
	for _, n := range names {
		es = append(es, entry{server: server, kind: kindTool, tool: &mcp.Tool{Name: n, Description: "does " + n, InputSchema: map[string]any{"type": "object"}}})
	}
	return es
}

// TestIndexRemakesOnlyTheChangedServer: a new catalog generation of one
// server makes that server's documents again and no other's; nothing
// changed, nothing is rebuilt.
func TestIndexRemakesOnlyTheChangedServer(t *testing.T) {
	c := newCatalogIndex()
	byServer := map[string][]entry{"a": toolEntries("a", "open_issue"), "b": toolEntries("b", "send_mail")}
	sts := []manager.Status{{ID: "a", ConnectionID: 1, Generation: 1}, {ID: "b", ConnectionID: 2, Generation: 1}}
	c.update(sts, byServer)
	a, b, ix := c.servers["a"], c.servers["b"], c.ix
	c.update(sts, byServer)
	if c.ix != ix || c.servers["a"] != a || c.servers["b"] != b {
		t.Fatal("an unchanged catalog rebuilt the index")
	}

	byServer["b"] = toolEntries("b", "send_mail", "read_mail")
	sts[1].Generation = 2
	c.update(sts, byServer)
	if c.servers["a"] != a {
		t.Error("server a's documents were made again though its catalog did not change")
	}
	if c.servers["b"] == b || len(c.servers["b"].docs) != 2 {
		t.Error("server b's new catalog was not indexed")
	}
	if c.ix != ix {
		t.Error("one server's new catalog rebuilt the whole index instead of replacing its documents")
	}
	if hits := c.ix.Search("read mail", 1); len(hits) != 1 || c.refs[hits[0].Doc].tool.Name != "read_mail" {
		t.Errorf("search after the update: %v", hits)
	}

	// A server no longer listed leaves the index.
	delete(byServer, "a")
	c.update(sts[1:], byServer)
	if _, ok := c.servers["a"]; ok {
		t.Error("a removed server's documents are kept")
	}
	for _, h := range c.ix.Search("open issue", 5) {
		if c.refs[h.Doc].server == "a" {
			t.Errorf("a removed server is still found: %+v", c.refs[h.Doc])
		}
	}
}
