package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchCatalog is ../shared/data/tool-catalog.json beside the repository
// (never copied into it): 20 real servers' tools.
func benchCatalog(b *testing.B) []struct {
	ID    string            `json:"id"`
	Tools []json.RawMessage `json:"tools"`
} {
	dir, _ := os.Getwd()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(d), "shared", "data", "tool-catalog.json"))
		if err != nil {
			continue
		}
		var cat struct {
			Servers []struct {
				ID    string            `json:"id"`
				Tools []json.RawMessage `json:"tools"`
			} `json:"servers"`
		}
		if err := json.Unmarshal(data, &cat); err != nil {
			b.Fatal(err)
		}
		return cat.Servers
	}
	b.Skipf("../shared/data/tool-catalog.json not found above %s", dir)
	return nil
}

// benchApp is a config and data directory that `run` invocations share,
// as a person's shell does.
type benchApp struct {
	b         *testing.B
	cfg, data string
	getenv    func(string) string
}

func newBenchApp(b *testing.B) *benchApp {
	dir := b.TempDir()
	env := map[string]string{"HOME": dir, "MCPGATE_KEYRING": "off", "MCPGATE_SECRET_KEY": base64.StdEncoding.EncodeToString(make([]byte, 32))}
	return &benchApp{b: b, cfg: filepath.Join(dir, "c.json"), data: filepath.Join(dir, "d"), getenv: func(k string) string { return env[k] }}
}

func (a *benchApp) run(args ...string) string {
	var out strings.Builder
	if code := run(context.Background(), append([]string{"--config", a.cfg, "--data-dir", a.data}, args...), &IO{In: strings.NewReader(""), Out: &out, ErrOut: &out}, a.getenv); code != 0 {
		a.b.Fatalf("mcpgate %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
	}
	return out.String()
}

// store opens the app's store as another process would.
func (a *benchApp) store() *sqlite.Store {
	sl, _, err := seal.Load(seal.LoadOptions{DataDir: a.data, Getenv: a.getenv})
	if err != nil {
		a.b.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(a.data, storeFileName), sl)
	if err != nil {
		a.b.Fatal(err)
	}
	return st
}

// BenchmarkSearchStoredCatalogs runs `mcpgate search` in this process over
// the 20 servers of the shared catalog (749 tools, each server a fake on
// loopback), alternating a cold run (no stored catalogs: every server is
// connected and listed, as before catalogs were stored) with a warm one
// (the catalogs the previous run stored), and reports both and their ratio:
//
//	go test -run '^$' -bench SearchStoredCatalogs ./internal/cli/
func BenchmarkSearchStoredCatalogs(b *testing.B) {
	servers := benchCatalog(b)
	app := newBenchApp(b)
	var ids []string
	for _, s := range servers {
		page, _ := json.Marshal(map[string]any{"tools": s.Tools})
		h := fake.StartHostile(b, fake.HostileOptions{ToolsList: func(string) json.RawMessage { return page }})
		app.run("add", s.ID, h.URL, "--auth", "none")
		ids = append(ids, s.ID)
	}
	query := []string{"search", "open a pull request on my repository", "--limit", "5"}
	app.run(query...)
	st := app.store()
	defer st.Close()
	var cold, warm time.Duration
	for b.Loop() {
		for _, id := range ids {
			if err := st.DeleteCatalog(context.Background(), "", id); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		coldOut := app.run(query...)
		cold += time.Since(start)
		start = time.Now()
		warmOut := app.run(query...)
		warm += time.Since(start)
		if coldOut != warmOut {
			b.Fatalf("warm search answered otherwise:\ncold %s\nwarm %s", coldOut, warmOut)
		}
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(cold.Microseconds())/1000/n, "cold-ms")
	b.ReportMetric(float64(warm.Microseconds())/1000/n, "warm-ms")
	b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
}

// BenchmarkServeStartStoredCatalogs measures `mcpgate serve` (in this
// process, over pipes) from start to the answer of the host's first
// tools/list, with 1,000 configured servers whose catalogs are stored
// (the shared catalog's 20 servers 50 times over: about 37,000 tools),
// none of them reachable: nothing on the way to the answer needs the
// network. --direct lists every stored tool; the gateway lists its one.
//
//	go test -run '^$' -bench ServeStartStoredCatalogs ./internal/cli/
func BenchmarkServeStartStoredCatalogs(b *testing.B) {
	servers := benchCatalog(b)
	const n = 1000
	app := newBenchApp(b)
	conf := map[string]any{}
	st := app.store()
	tools := 0
	for i := range n {
		s := servers[i%len(servers)]
		id := fmt.Sprintf("%s-%d", strings.ReplaceAll(s.ID, "_", "-"), i)
		if len(id) > 32 {
			id = id[len(id)-32:]
		}
		id = strings.TrimLeft(id, "-_")
		// Port 9 (discard) on loopback: nothing listens, a connect fails.
		url := fmt.Sprintf("http://127.0.0.1:9/mcp/%d", i)
		conf[id] = map[string]any{"url": url, "auth": "none"}
		list, _ := json.Marshal(s.Tools)
		tools += len(s.Tools)
		err := st.PutCatalog(context.Background(), &store.Catalog{Server: id, URL: url, Protocol: "2025-11-25",
			Tools: list, Prompts: json.RawMessage("[]"), Resources: json.RawMessage("[]"), Templates: json.RawMessage("[]"),
			Counts: [4]int{len(s.Tools)}, FetchedAt: time.Now(), Generation: 1})
		if err != nil {
			b.Fatal(err)
		}
	}
	st.Close()
	raw, _ := json.Marshal(map[string]any{"mcpServers": conf})
	if err := os.WriteFile(app.cfg, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"gateway", "direct"} {
		b.Run(mode, func(b *testing.B) {
			var listed int
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				listed = app.serveFirstList(b, mode == "direct")
				total += time.Since(start)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "start-to-list-ms")
			b.ReportMetric(float64(listed), "tools-listed")
		})
	}
	b.ReportMetric(float64(tools), "tools-stored")
}

// serveFirstList starts serve, lists its tools once and stops it.
func (a *benchApp) serveFirstList(b *testing.B, direct bool) int {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	args := []string{"--config", a.cfg, "--data-dir", a.data, "serve"}
	if direct {
		args = append(args, "--direct")
	}
	go func() {
		defer close(done)
		run(ctx, args, &IO{In: inR, Out: outW, ErrOut: io.Discard}, a.getenv)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cs.Close()
	inW.Close()
	cancel()
	<-done
	b.StartTimer()
	return len(res.Tools)
}
