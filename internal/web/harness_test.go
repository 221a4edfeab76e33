package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/web"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// env is a running settings page over a real manager, oauth client and
// config file, as `mcpgate ui` builds them.
type env struct {
	t       *testing.T
	m       *manager.Manager
	oc      *oauth.Client
	st      store.Store
	page    *web.Server
	base    string // http://127.0.0.1:PORT
	cfgPath string
	// client is the person's browser after opening the printed address:
	// it holds the page cookie.
	client *http.Client
	tr     *http.Transport
}

func newEnv(t *testing.T, servers ...mcpgate.ServerConfig) *env {
	t.Helper()
	return newEnvWith(t, nil, servers...)
}

// envOptions vary the env; nil means none.
type envOptions struct {
	// Catalogs gives the manager the store's catalogs, as mcpgate ui does.
	Catalogs bool
	// Stored runs on the store before the manager is made.
	Stored func(*sqlite.Store)
}

func newEnvWith(t *testing.T, o *envOptions, servers ...mcpgate.ServerConfig) *env {
	t.Helper()
	if o == nil {
		o = &envOptions{}
	}
	dir := t.TempDir()
	e := &env{t: t, cfgPath: filepath.Join(dir, "config.json")}
	f, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if err := f.Add(s, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "mcpgate.db"), sealer)
	if err != nil {
		t.Fatal(err)
	}
	e.st = st
	if o.Stored != nil {
		o.Stored(st)
	}
	e.oc = oauth.New(&oauth.Options{Store: st})
	var page atomic.Pointer[web.Server]
	mo := &manager.Options{
		Authorizer: e.oc,
		Elicit: func(ctx context.Context, r *manager.ElicitRequest) (*mcp.ElicitResult, error) {
			return page.Load().Elicit(ctx, r)
		},
		OnStateChange: func(s manager.Status) {
			if p := page.Load(); p != nil {
				p.StateChanged(s)
			}
		},
	}
	if o.Catalogs {
		mo.Catalogs, mo.RefreshCached = st, true
	}
	e.m, err = manager.New(f.Servers(), mo)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.page, err = web.New(&web.Options{
		Manager: e.m, OAuth: e.oc, Addr: ln.Addr().String(), Questions: st,
		Config:     func() (*config.File, error) { return config.Load(e.cfgPath) },
		ConfigPath: e.cfgPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	page.Store(e.page)
	e.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.page.Serve(ctx, ln) }()

	jar, _ := cookiejar.New(nil)
	e.tr = &http.Transport{}
	e.client = &http.Client{Transport: e.tr, Jar: jar, Timeout: time.Minute}
	t.Cleanup(func() {
		e.tr.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		e.m.Close()
		st.Close()
	})
	resp, err := e.client.Get(e.page.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("opening the printed address: %s", resp.Status)
	}
	return e
}

// do sends a request as the page would, and returns the status and body.
func (e *env) do(method, path string, body any) (int, string) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, e.base+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", e.base)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type serverJSON struct {
	ID       string   `json:"id"`
	State    string   `json:"state"`
	Tools    int      `json:"tools"`
	Cached   bool     `json:"cached"`
	Disabled []string `json:"disabled"`
	SignedIn bool     `json:"signedIn"`
	Error    *struct {
		Next   string `json:"next"`
		Action string `json:"action"`
	} `json:"error"`
	Login *struct {
		State   string `json:"state"`
		Message string `json:"message"`
	} `json:"login"`
}

// server reads one server as the page sees it.
func (e *env) server(id string) serverJSON {
	e.t.Helper()
	code, body := e.do("GET", "/api/servers", nil)
	if code != http.StatusOK {
		e.t.Fatalf("GET /api/servers: %d %s", code, body)
	}
	var out struct{ Servers []serverJSON }
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		e.t.Fatal(err)
	}
	for _, s := range out.Servers {
		if s.ID == id {
			return s
		}
	}
	e.t.Fatalf("server %s is not on the page: %s", id, body)
	return serverJSON{}
}

// waitState waits until the page shows the server in state.
func (e *env) waitState(id, state string) serverJSON {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := e.server(id)
		if s.State == state {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("server %s: want state %s, still %+v", id, state, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gatewayList is what the model sees from the gateway's list action.
func (e *env) gatewayList(server string) string {
	e.t.Helper()
	g := gateway.New(&gateway.Options{Manager: e.m})
	res := g.Handle(context.Background(), &gateway.Input{Action: "list", Server: server})
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func hostOf(base string) string {
	u, _ := url.Parse(base)
	return u.Host
}

func mustURL(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	return u
}
