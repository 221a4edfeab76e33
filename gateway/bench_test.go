package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sharedCatalog finds ../shared/data/tool-catalog.json beside the
// repository (the evaluation data is never copied into it).
func sharedCatalog(b testing.TB) []byte {
	dir, _ := os.Getwd()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		p := filepath.Join(filepath.Dir(d), "shared", "data", "tool-catalog.json")
		if data, err := os.ReadFile(p); err == nil {
			return data
		}
	}
	b.Skipf("../shared/data/tool-catalog.json not found above %s", dir)
	return nil
}

// BenchmarkDefinitionSize compares what a model's context pays up front:
// the one gateway tool with every catalog server configured, against
// registering every tool of the same catalog directly.
func BenchmarkDefinitionSize(b *testing.B) {
	var cat struct {
		Servers []struct {
			ID    string            `json:"id"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(sharedCatalog(b), &cat); err != nil {
		b.Fatal(err)
	}
	var servers []mcpgate.ServerConfig
	direct, tools := 0, 0
	for _, s := range cat.Servers {
		servers = append(servers, mcpgate.ServerConfig{ID: s.ID, URL: "https://" + s.ID + ".example.com/mcp", Auth: mcpgate.AuthNone, Enabled: true})
		for _, t := range s.Tools {
			var def mcp.Tool
			if err := json.Unmarshal(t, &def); err != nil {
				b.Fatal(err)
			}
			def.Name = "mcp__" + s.ID + "__" + def.Name
			raw, _ := json.Marshal(&def)
			direct += len(raw)
			tools++
		}
	}
	m, err := manager.New(servers, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	g := gateway.New(&gateway.Options{Manager: m})
	var size int
	for b.Loop() {
		raw, _ := json.Marshal(g.Tool())
		size = len(raw)
	}
	b.ReportMetric(float64(size), "gateway-bytes")
	b.ReportMetric(float64(direct), "direct-bytes")
	b.ReportMetric(float64(tools), "tools")
	b.ReportMetric(float64(direct)/float64(size), "direct/gateway")
}
