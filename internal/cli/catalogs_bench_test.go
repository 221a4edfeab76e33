package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/testbin"
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
	app, ids := newSearchBenchApp(b)
	query := benchSearchQuery
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

// benchSearchQuery is the search the search benchmarks time.
var benchSearchQuery = []string{"search", "open a pull request on my repository", "--limit", "5"}

// newSearchBenchApp configures the 20 servers of the shared catalog, each a
// fake on loopback serving its tools, and returns their IDs; nothing is
// listed yet.
func newSearchBenchApp(b *testing.B) (*benchApp, []string) {
	app := newBenchApp(b)
	var ids []string
	for _, s := range benchFakes(b) {
		app.run("add", s.id, s.url, "--auth", "none")
		ids = append(ids, s.id)
	}
	return app, ids
}

type benchServer struct{ id, url string }

// benchFakes starts a fake on loopback for each server of the shared
// catalog, serving its tools.
func benchFakes(b *testing.B) []benchServer {
	var out []benchServer
	for _, s := range benchCatalog(b) {
		page, _ := json.Marshal(map[string]any{"tools": s.Tools})
		h := fake.StartHostile(b, fake.HostileOptions{ToolsList: func(string) json.RawMessage { return page }})
		out = append(out, benchServer{s.ID, h.URL})
	}
	return out
}

// BenchmarkSearchProcess runs `mcpgate search` as a process, as a person
// does, over the 20 servers of the shared catalog whose catalogs an
// earlier search stored (and whatever else that search kept): a warm
// search, start to exit. With MCPGATE_BENCH_BASELINE naming another build
// of mcpgate, it alternates the two, each over a config and data
// directory it set up itself (add, a first search that connects, one
// more), and reports both, and fails if they answer otherwise:
//
//	go build -o /tmp/mcpgate-old ./cmd/mcpgate   # on the baseline commit
//	MCPGATE_BENCH_BASELINE=/tmp/mcpgate-old go test -run '^$' -bench SearchProcess -benchtime 30x ./internal/cli/
//
// MCPGATE_BENCH_KEEP=DIR leaves this build's config and data directory in
// DIR (a new directory) for profiling a process by hand.
//
// Reported: the median, fastest and slowest wall time of a process and its
// median CPU time (user + system), in milliseconds; "miss" is this build's
// search without the index an earlier one kept (deleted before each), as
// the first search after a catalog changed.
func BenchmarkSearchProcess(b *testing.B) {
	servers := benchFakes(b)
	type build struct {
		name, path, dir string
		env             []string
	}
	bins := []*build{{name: "this", path: testbin.Mcpgate(b)}}
	if p := os.Getenv("MCPGATE_BENCH_BASELINE"); p != "" {
		bins = append(bins, &build{name: "base", path: p})
	}
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	run := func(bin *build, args ...string) (string, time.Duration, time.Duration) {
		cmd := exec.Command(bin.path, append([]string{"--config", filepath.Join(bin.dir, "c.json"), "--data-dir", filepath.Join(bin.dir, "d")}, args...)...)
		cmd.Env = bin.env
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if err != nil {
			b.Fatalf("%s %s: %v\n%s", bin.path, strings.Join(args, " "), err, errOut.String())
		}
		return out.String(), wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var want string
	for _, bin := range bins {
		bin.dir = b.TempDir()
		bin.env = []string{"HOME=" + bin.dir, "MCPGATE_KEYRING=off", "MCPGATE_SECRET_KEY=" + key}
		for _, s := range servers {
			run(bin, "add", s.id, s.url, "--auth", "none")
		}
		cold, _, _ := run(bin, benchSearchQuery...) // connects and lists every server
		if want == "" {
			want = cold
		}
		if warm, _, _ := run(bin, benchSearchQuery...); cold != want || warm != want {
			b.Fatalf("%s answered otherwise:\ncold %s\nwarm %s\nwant %s", bin.name, cold, warm, want)
		}
	}
	if keep := os.Getenv("MCPGATE_BENCH_KEEP"); keep != "" {
		// For perf and friends: this build's config and data directory.
		if err := os.CopyFS(keep, os.DirFS(bins[0].dir)); err != nil {
			b.Fatal(err)
		}
		b.Logf("kept: MCPGATE_KEYRING=off MCPGATE_SECRET_KEY=%s mcpgate --config %s/c.json --data-dir %s/d %s",
			key, keep, keep, strings.Join(benchSearchQuery, " "))
	}
	// "miss" is this build without the index an earlier search kept (the
	// first search after a catalog changed): it builds and keeps it again.
	names := []string{}
	for _, bin := range bins {
		names = append(names, bin.name)
	}
	names = append(names, "miss")
	wall := make([][]time.Duration, len(names))
	cpu := make([][]time.Duration, len(names))
	for b.Loop() {
		for i, name := range names {
			bin := bins[min(i, len(bins)-1)]
			if name == "miss" {
				bin = bins[0]
				if err := os.Remove(filepath.Join(bin.dir, "d", searchIndexFileName)); err != nil {
					b.Fatal(err)
				}
			}
			out, w, c := run(bin, benchSearchQuery...)
			wall[i], cpu[i] = append(wall[i], w), append(cpu[i], c)
			if out != want {
				b.Fatalf("%s answered otherwise:\n%s\nwant\n%s", name, out, want)
			}
		}
	}
	reportProcessRuns(b, names, wall, cpu, len(bins) == 2)
}

// reportProcessRuns reports each build's median, fastest and slowest wall
// time and median CPU over its runs, and with a baseline (names[1]) the
// ratio of the medians.
func reportProcessRuns(b *testing.B, names []string, wall, cpu [][]time.Duration, baseline bool) {
	b.ReportMetric(0, "ns/op")
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for i, name := range names {
		slices.Sort(wall[i])
		slices.Sort(cpu[i])
		n := len(wall[i])
		b.ReportMetric(ms(wall[i][n/2]), name+"-median-ms")
		b.ReportMetric(ms(wall[i][0]), name+"-min-ms")
		b.ReportMetric(ms(wall[i][n-1]), name+"-max-ms")
		b.ReportMetric(ms(cpu[i][n/2]), name+"-cpu-ms")
	}
	if baseline {
		b.ReportMetric(float64(wall[0][len(wall[0])/2])/float64(wall[1][len(wall[1])/2]), "this/base")
	}
}

// BenchmarkProcessStart measures what every mcpgate command pays before
// it does anything: `mcpgate --version` as a process, this build and
// MCPGATE_BENCH_BASELINE (another build's binary) run in turn.
//
//	MCPGATE_BENCH_BASELINE=/path/to/old/mcpgate go test -run '^$' -bench ProcessStart -benchtime 200x ./internal/cli/
func BenchmarkProcessStart(b *testing.B) {
	paths, names := []string{testbin.Mcpgate(b)}, []string{"this"}
	if p := os.Getenv("MCPGATE_BENCH_BASELINE"); p != "" {
		paths, names = append(paths, p), append(names, "base")
	}
	wall := make([][]time.Duration, len(paths))
	cpu := make([][]time.Duration, len(paths))
	for b.Loop() {
		for i, path := range paths {
			cmd := exec.Command(path, "--version")
			start := time.Now()
			if out, err := cmd.Output(); err != nil || !strings.HasPrefix(string(out), "mcpgate ") {
				b.Fatalf("%s --version: %v %q", path, err, out)
			}
			wall[i] = append(wall[i], time.Since(start))
			cpu[i] = append(cpu[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	reportProcessRuns(b, names, wall, cpu, len(paths) == 2)
}

// BenchmarkServeStartStoredCatalogs measures `mcpgate serve` (in this
// process, over pipes) from start to the answer of the host's first
// tools/list, with 1,000 configured servers whose catalogs are stored
// (the shared catalog's 20 servers 50 times over: about 37,000 tools),
// none of them reachable: nothing on the way to the answer needs the
// network. --direct lists every stored tool; the gateway lists its one.
// Then the one-shot commands over the same store, in this process: list,
// status --cached, and a search after a first one that kept its index.
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
	for _, cmd := range [][]string{{"list"}, {"status", "--cached"}, {"search", "create an issue"}} {
		b.Run(strings.Join(cmd, " "), func(b *testing.B) {
			app.run(cmd...) // a first run keeps what the next ones find
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				app.run(cmd...)
				total += time.Since(start)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms")
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
