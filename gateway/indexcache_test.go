package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store"
)

// memIndexCache is an IndexCache in memory that counts what it is asked.
type memIndexCache struct {
	mu           sync.Mutex
	key          [sha256.Size]byte
	data         []byte
	loads, saves int
	hits         int // loads that found data
}

func (c *memIndexCache) Load(key [sha256.Size]byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	if c.data == nil || key != c.key {
		return nil
	}
	c.hits++
	return c.data
}

func (c *memIndexCache) Save(key [sha256.Size]byte, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saves++
	c.key, c.data = key, bytes.Clone(data)
}

// countedCatalogs counts the stored catalogs read whole.
type countedCatalogs struct {
	store.CatalogStore
	mu   sync.Mutex
	gets int
}

func (c *countedCatalogs) GetCatalog(ctx context.Context, tenant, server string) (*store.Catalog, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.CatalogStore.GetCatalog(ctx, tenant, server)
}

func (c *countedCatalogs) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets
}

// toolsPage is a tools/list result of tools named and described so.
func toolsPage(tools ...[2]string) func(string) json.RawMessage {
	var list []map[string]any
	for _, t := range tools {
		list = append(list, map[string]any{"name": t[0], "description": t[1], "inputSchema": map[string]any{"type": "object",
			"properties": map[string]any{"repo": map[string]any{"type": "string", "description": "Repository name"}}}})
	}
	page, _ := json.Marshal(map[string]any{"tools": list})
	return func(string) json.RawMessage { return page }
}

var keptQueries = []string{"open a pull request on my repository", "send a message to the team channel",
	"repeat back the text I give you", "list the issues of a repository", "add two numbers", "nothing matches zzzz",
	// Prompts rank first here, and the tools after them are still found.
	"greet someone by name or summarize the conversation"}

// TestKeptIndexAnswersAsTheLiveCatalogs: with an IndexCache, a search
// over stored catalogs answers exactly as one over the live catalogs
// (same hits, order and scores); the next process ranks with the index
// the first kept, without building it or reading any stored catalog; and
// a changed stored catalog or a tool disabled since is never answered
// from the kept index.
func TestKeptIndexAnswersAsTheLiveCatalogs(t *testing.T) {
	demo := fake.Start(t, nil)
	gh := fake.StartHostile(t, fake.HostileOptions{ToolsList: toolsPage(
		[2]string{"create_pull_request", "Create a new pull request in a repository"},
		[2]string{"list_issues", "List the issues of a repository"},
		[2]string{"merge_pull_request", "Merge a pull request"})})
	chat := fake.StartHostile(t, fake.HostileOptions{ToolsList: toolsPage(
		[2]string{"post_message", "Post a message to a channel"},
		[2]string{"list_channels", "List the channels of the team"})})
	servers := []mcpgate.ServerConfig{cfg("chat", chat.URL), cfg("demo", demo.URL), cfg("gh", gh.URL)}
	st := &countedCatalogs{CatalogStore: sqliteStore(t)}
	// A process: a manager and its gateway, closed (its catalogs written)
	// once it has answered.
	answers := func(servers []mcpgate.ServerConfig, cache gateway.IndexCache) map[string][]gateway.SearchHit {
		t.Helper()
		m, err := manager.New(servers, &manager.Options{Catalogs: st})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		g := gateway.New(&gateway.Options{Manager: m, IndexCache: cache})
		out := map[string][]gateway.SearchHit{}
		for _, q := range keptQueries {
			hits, failed, err := g.Search(context.Background(), q, "", 5)
			if err != nil || len(failed) > 0 {
				t.Fatalf("search %q: %v, failed %v", q, err, failed)
			}
			out[q] = hits
		}
		return out
	}
	connects := func() int { return demo.Connects() + gh.Requests("tools/list") + chat.Requests("tools/list") }

	cache := &memIndexCache{}
	live := answers(servers, cache) // connects every server, and stores the catalogs
	if cache.saves != 0 {
		t.Errorf("an index over live sessions was kept (%d saves)", cache.saves)
	}
	if len(live[keptQueries[0]]) == 0 || live[keptQueries[0]][0].Tool != "create_pull_request" {
		t.Fatalf("live search: %v", live[keptQueries[0]])
	}
	before := connects()
	if got := answers(servers, cache); !cmp.Equal(got, live) {
		t.Errorf("over stored catalogs, keeping the index:\n%v\nwant, as live:\n%v", got, live)
	}
	if cache.saves != 1 {
		t.Fatalf("the index over stored catalogs was kept %d times, want once", cache.saves)
	}
	hits, gets := cache.hits, st.count()
	if got := answers(servers, cache); !cmp.Equal(got, live) {
		t.Errorf("from the kept index:\n%v\nwant, as live:\n%v", got, live)
	}
	if cache.hits-hits != len(keptQueries) || cache.saves != 1 {
		t.Errorf("the next process found the kept index %d times of %d and kept it again %d times, want every time and never",
			cache.hits-hits, len(keptQueries), cache.saves-1)
	}
	if n := connects() - before; n != 0 {
		t.Errorf("searches over stored catalogs connected or listed %d times", n)
	}
	if n := st.count() - gets; n != 0 {
		t.Errorf("searches from the kept index read %d stored catalogs, want none", n)
	}

	// Another stored catalog for chat: a message tool that now talks of
	// pull requests.
	c, err := st.GetCatalog(t.Context(), "", "chat")
	if err != nil {
		t.Fatal(err)
	}
	c.Tools = json.RawMessage(strings.Replace(string(c.Tools), "Post a message to a channel", "Post a message about a pull request on my repository", 1))
	c.Generation++
	if err := st.PutCatalog(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	fresh := answers(servers, nil)
	if cmp.Equal(fresh, live) {
		t.Fatal("the changed catalog changed no answer; the test shows nothing")
	}
	if got := answers(servers, cache); !cmp.Equal(got, fresh) {
		t.Errorf("after the stored catalog changed:\n%v\nwant, without a kept index:\n%v", got, fresh)
	}

	disabled := append([]mcpgate.ServerConfig(nil), servers...)
	disabled[2].DisabledTools = []string{"create_pull_request"}
	want := answers(disabled, nil)
	if got := answers(disabled, cache); !cmp.Equal(got, want) {
		t.Errorf("with a tool disabled:\n%v\nwant, without a kept index:\n%v", got, want)
	}
	for _, h := range want[keptQueries[0]] {
		if h.Tool == "create_pull_request" {
			t.Error("a disabled tool was found")
		}
	}

	// What the cache gives back is not trusted to be an index.
	cache.mu.Lock()
	cache.data = append(cache.data[:len(cache.data)/2:len(cache.data)/2], "garbage"...)
	cache.mu.Unlock()
	if got := answers(disabled, cache); !cmp.Equal(got, want) {
		t.Errorf("from a damaged kept index:\n%v\nwant:\n%v", got, want)
	}
}
