package gateway_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// TestStoredCatalogsAnswerWithoutConnecting: a gateway over a manager
// whose catalogs another process stored answers search, list, describe
// and status at once, and says the catalog is cached, not ready.
func TestStoredCatalogsAnswerWithoutConnecting(t *testing.T) {
	srv := fake.Start(t, nil)
	st := sqliteStore(t)
	open := func() (*gateway.Gateway, *manager.Manager) {
		m, err := manager.New([]mcpgate.ServerConfig{cfg("demo", srv.URL)}, &manager.Options{Catalogs: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return gateway.New(&gateway.Options{Manager: m}), m
	}
	first, firstManager := open()
	if out, isErr := run(t, first, `{"action":"list","server":"demo"}`); isErr {
		t.Fatalf("list: %s", out)
	}
	out, _ := run(t, first, `{"action":"status"}`)
	if !strings.Contains(out, "demo: ready") {
		t.Fatalf("status of the live server: %s", out)
	}

	// The catalog is stored in the background; the process that listed
	// it has ended (and so written it) before the next one starts.
	firstManager.Close()
	connects, lists := srv.Connects(), srv.Requests("tools/list")
	g, _ := open()
	out, _ = run(t, g, `{"action":"status"}`)
	if !strings.Contains(out, "demo: disconnected") || !strings.Contains(out, "cached catalog: ") || strings.Contains(out, "ready") {
		t.Errorf("status from a stored catalog: %s", out)
	}
	if out, isErr := run(t, g, `{"action":"search","query":"repeat back the text I give you"}`); isErr || !strings.Contains(inside(t, out), "demo/echo") {
		t.Errorf("search: %s", out)
	}
	if out, isErr := run(t, g, `{"action":"list"}`); isErr || !strings.Contains(inside(t, out), "demo/add — ") {
		t.Errorf("list: %s", out)
	}
	if out, isErr := run(t, g, `{"action":"describe","server":"demo","tool":"echo"}`); isErr || !strings.Contains(inside(t, out), `"text"`) {
		t.Errorf("describe: %s", out)
	}
	if n, c := srv.Requests("tools/list")-lists, srv.Connects()-connects; n != 0 || c != 0 {
		t.Fatalf("a gateway over stored catalogs sent %d tools/list and made %d connects, want none", n, c)
	}
	if out, isErr := run(t, g, `{"action":"call","server":"demo","tool":"echo","arguments":{"text":"hello"}}`); isErr || inside(t, out) != "hello" {
		t.Errorf("call: %s", out)
	}
	if srv.Connects() == connects {
		t.Error("a call did not connect")
	}
}

// sqliteStore is a sealed SQLite store in the test's own directory, as a
// process's data directory has, closed when the test ends.
func sqliteStore(t *testing.T) *sqlite.Store {
	t.Helper()
	sl, err := seal.New(bytes.Repeat([]byte{1}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "mcpgate.db"), sl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
