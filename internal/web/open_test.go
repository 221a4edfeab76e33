package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// refusedURL is a loopback address where nothing listens.
const refusedURL = "http://127.0.0.1:1/mcp"

// TestOpenConnectsEveryEnabledServer: with nobody clicking anything, the
// page finds out each enabled server's real state (ready with its
// catalog, needs sign-in, error with its reason) and leaves a disabled
// one alone.
func TestOpenConnectsEveryEnabledServer(t *testing.T) {
	t.Parallel()
	docs := fake.Start(t, nil)
	off := fake.Start(t, nil)
	as := fake.StartAuth(t, nil)
	secure := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t,
		mcpgate.ServerConfig{ID: "docs", URL: docs.URL, Auth: mcpgate.AuthNone, Enabled: true},
		mcpgate.ServerConfig{ID: "down", URL: refusedURL, Auth: mcpgate.AuthNone, Enabled: true},
		mcpgate.ServerConfig{ID: "secure", URL: secure.URL, Auth: mcpgate.AuthOAuth, Enabled: true},
		mcpgate.ServerConfig{ID: "off", URL: off.URL, Auth: mcpgate.AuthNone, Enabled: false},
	)
	if st := e.waitState("docs", "ready"); st.Tools != 8 {
		t.Errorf("docs: ready with %d tools, want the fake's 8", st.Tools)
	}
	if st := e.waitState("down", "error"); st.Error == nil || st.Error.Action != "reconnect" {
		t.Errorf("down: error without its next step: %+v", st.Error)
	}
	if st := e.waitState("secure", "needs-auth"); st.Error == nil || st.Error.Action != "signin" {
		t.Errorf("secure: needs-auth without a sign-in: %+v", st.Error)
	}
	if st := e.server("off"); st.State != "disconnected" || off.Connects() != 0 {
		t.Errorf("the disabled server was connected: %+v, %d connects", st, off.Connects())
	}
	// Nothing was signed in on the person's behalf.
	if n := len(as.Secrets()); n != 0 {
		t.Errorf("the authorization server issued %d secrets without a person", n)
	}
}

// TestUnknownCountsAreNotZero: a server never connected has no known
// catalog, and the page says so (-1), never 0 tools.
func TestUnknownCountsAreNotZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mcpgate.ServerConfig{ID: "down", URL: refusedURL, Auth: mcpgate.AuthNone, Enabled: true})
	if st := e.waitState("down", "error"); st.Tools != -1 {
		t.Errorf("a server never listed shows %d tools, want -1 (unknown)", st.Tools)
	}
}

// storedCatalog stores, as an earlier process would have, a catalog of
// three tools listed an hour ago from url.
func storedCatalog(t *testing.T, id, url string) func(*sqlite.Store) {
	return func(st *sqlite.Store) {
		tools, _ := json.Marshal([]map[string]any{
			{"name": "a", "inputSchema": map[string]any{"type": "object"}},
			{"name": "b", "inputSchema": map[string]any{"type": "object"}},
			{"name": "c", "inputSchema": map[string]any{"type": "object"}},
		})
		err := st.PutCatalog(context.Background(), &store.Catalog{
			Server: id, URL: url, Tools: tools, Prompts: json.RawMessage(`[]`),
			Resources: json.RawMessage(`[]`), Templates: json.RawMessage(`[]`),
			Counts: [4]int{3, 0, 0, 0}, FetchedAt: time.Now().Add(-time.Hour),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCachedCatalogIsNeverReady: a catalog another process stored is
// shown with its counts, marked cached, while the server itself is in
// error; the page never calls it ready.
func TestCachedCatalogIsNeverReady(t *testing.T) {
	t.Parallel()
	stored := storedCatalog(t, "down", refusedURL)
	e := newEnvWith(t, &envOptions{Catalogs: true, Stored: stored},
		mcpgate.ServerConfig{ID: "down", URL: refusedURL, Auth: mcpgate.AuthNone, Enabled: true})
	st := e.waitState("down", "error")
	if !st.Cached || st.Tools != 3 {
		t.Errorf("want the stored 3 tools marked cached, have %+v", st)
	}
	_, body := e.do("GET", "/api/servers", nil)
	if !strings.Contains(body, `"cachedAt":"`) {
		t.Errorf("the page is not told when the cached catalog was listed: %s", body)
	}
}

// TestConfigChangedElsewhereAppears: a server another process adds to
// the config file is on the page within a second, and connected; one it
// removes is gone; a tool switched off there does not reconnect a server
// the person disconnected.
func TestConfigChangedElsewhereAppears(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	e := newEnv(t)
	edit := func(f func(*config.File) error) time.Time {
		t.Helper()
		cfg, err := config.Load(e.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := f(cfg); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Save(); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	saved := edit(func(f *config.File) error {
		return f.Add(mcpgate.ServerConfig{ID: "docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true}, false)
	})
	e.waitFor("docs on the page", saved.Add(time.Second), func(servers map[string]serverJSON) bool {
		_, ok := servers["docs"]
		return ok
	})
	e.waitState("docs", "ready")

	if code, body := e.do("POST", "/api/servers/docs/disconnect", struct{}{}); code != http.StatusAccepted {
		t.Fatalf("disconnect: %d %s", code, body)
	}
	connects := srv.Connects()
	saved = edit(func(f *config.File) error { return f.SetToolEnabled("docs", "echo", false) })
	e.waitFor("echo disabled on the page", saved.Add(time.Second), func(servers map[string]serverJSON) bool {
		return len(servers["docs"].Disabled) == 1
	})
	if st := e.server("docs"); st.State != "disconnected" || srv.Connects() != connects {
		t.Errorf("switching a tool off elsewhere reconnected a server the person disconnected: %s", st.State)
	}

	saved = edit(func(f *config.File) error { return f.Remove("docs") })
	e.waitFor("docs gone from the page", saved.Add(time.Second), func(servers map[string]serverJSON) bool {
		_, ok := servers["docs"]
		return !ok
	})
}

// waitFor polls the page's servers until ok, failing at deadline.
func (e *env) waitFor(what string, deadline time.Time, ok func(map[string]serverJSON) bool) {
	e.t.Helper()
	for {
		code, body := e.do("GET", "/api/servers", nil)
		var out struct{ Servers []serverJSON }
		if code == http.StatusOK && json.Unmarshal([]byte(body), &out) == nil {
			byID := map[string]serverJSON{}
			for _, s := range out.Servers {
				byID[s.ID] = s
			}
			if ok(byID) {
				return
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not by the deadline; the page has %s", what, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOpenConnectsAFewAtATime: with six servers that do not answer yet,
// the page dials at most four at once, and the others follow as those
// finish.
func TestOpenConnectsAFewAtATime(t *testing.T) {
	t.Parallel()
	backend := fake.Start(t, nil)
	var (
		mu             sync.Mutex
		inFlight, most int
		changed        = make(chan struct{}, 100)
		open           = make(chan struct{})
		release        sync.Once
	)
	proxy := fake.StartFaultProxy(t, backend.URL, &fake.FaultOptions{Plan: func(*fake.FaultRequest) fake.Fault {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default: // the test has stopped counting
		}
		<-open
		mu.Lock()
		inFlight--
		mu.Unlock()
		return fake.FaultNone
	}})
	t.Cleanup(func() { release.Do(func() { close(open) }) }) // before the proxy closes
	var servers []mcpgate.ServerConfig
	for i := range 6 {
		servers = append(servers, mcpgate.ServerConfig{ID: fmt.Sprintf("s%d", i), URL: proxy.URL, Auth: mcpgate.AuthNone, Enabled: true})
	}
	e := newEnv(t, servers...)
	deadline := time.After(10 * time.Second)
	for n := 0; n < 4; {
		select {
		case <-changed:
			mu.Lock()
			n = inFlight
			mu.Unlock()
		case <-deadline:
			t.Fatal("the page did not start connecting")
		}
	}
	// No signal says a fifth will never come; a short look is the best
	// there is, and a page without the bound dials all six at once.
	select {
	case <-changed:
	case <-time.After(300 * time.Millisecond):
	}
	mu.Lock()
	if most > 4 {
		t.Errorf("%d servers were dialled at once, want at most 4", most)
	}
	mu.Unlock()
	release.Do(func() { close(open) })
	for _, s := range servers {
		e.waitState(s.ID, "ready")
	}
}
