package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/netpolicy/netpolicytest"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// doctorReport is doctor --json's output.
type doctorReport struct {
	OK     bool      `json:"ok"`
	Checks []finding `json:"checks"`
}

// find returns the check of group (and server) named name.
func (r doctorReport) find(group, server, name string) (finding, bool) {
	i := slices.IndexFunc(r.Checks, func(f finding) bool { return f.Group == group && f.Server == server && f.Name == name })
	if i < 0 {
		return finding{}, false
	}
	return r.Checks[i], true
}

// runDoctorOver runs mcpgate doctor in-process with h's config, data
// directory and environment, its network the fake one n: names resolve
// only as the test says, and nothing leaves loopback.
func runDoctorOver(h *harness, n *netpolicytest.Network, errOut syncWriter, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if errOut == nil {
		errOut = &lockedBuffer{}
	}
	app := &App{
		IO:         &IO{In: strings.NewReader(""), Out: &out, ErrOut: errOut, ErrTTY: h.errTTY},
		Getenv:     func(k string) string { return h.env[k] },
		netOptions: n.Options(nil),
	}
	code := runApp(ctx, app, append([]string{"--config", h.cfg, "--data-dir", h.dataDir, "doctor"}, args...))
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

type syncWriter interface {
	Write([]byte) (int, error)
	String() string
}

// lockedBuffer is a buffer the spinner's goroutine and the test may use
// at once; seen is closed when the text it waits for was written.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	await  string
	seen   chan struct{}
	closed bool
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	if l.seen != nil && !l.closed && strings.Contains(l.b.String(), l.await) {
		close(l.seen)
		l.closed = true
	}
	return n, err
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// doctorJSON runs doctor --json and decodes its report.
func doctorJSON(t *testing.T, h *harness, n *netpolicytest.Network) (doctorReport, result) {
	t.Helper()
	r := runDoctorOver(h, n, nil, "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json printed no JSON: %v\n%s", err, r)
	}
	return rep, r
}

// writeServers writes a config of the given entries (server ID → JSON).
func writeServers(t *testing.T, h *harness, entries map[string]string) {
	t.Helper()
	var parts []string
	for id, e := range entries {
		parts = append(parts, fmt.Sprintf("%q: %s", id, e))
	}
	slices.Sort(parts)
	doc := `{"mcpServers": {` + strings.Join(parts, ",\n") + `}}`
	if err := os.WriteFile(h.cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A healthy setup: every check passes, for a server on loopback and one
// reached by name over TLS under the network's CA, and doctor exits 0. A
// disabled server is a warning with the command that enables it, which
// does not fail the run.
func TestDoctorAllHealthy(t *testing.T) {
	t.Parallel()
	local := fake.Start(t, nil)
	remote := fake.Start(t, nil)
	n := netpolicytest.New(t)
	n.Forward("203.0.113.30", []string{"mcp.example.test"}, remote.URL)
	h := newHarness(t)
	h.env["SSL_CERT_FILE"] = n.CAFile()
	writeServers(t, h, map[string]string{
		"local":  fmt.Sprintf(`{"url": %q, "auth": "none"}`, local.URL),
		"remote": `{"url": "https://mcp.example.test/mcp", "auth": "none"}`,
		"off":    `{"url": "https://off.example.test/mcp", "enabled": false}`,
	})

	rep, r := doctorJSON(t, h, n)
	if r.code != 0 || !rep.OK {
		t.Fatalf("a healthy setup: want exit 0 and ok:\n%s", r)
	}
	for _, c := range rep.Checks {
		if c.Status == checkFail || (c.Status == checkWarn && c.Server != "off") {
			t.Errorf("check %s/%s/%s: %s: %s", c.Group, c.Server, c.Name, c.Status, c.Detail)
		}
	}
	want := map[string][]string{
		"local":  {"dns", "http", "protocol", "auth"},
		"remote": {"dns", "tls", "http", "protocol", "auth"},
	}
	for server, names := range want {
		for _, name := range names {
			if _, ok := rep.find(groupServers, server, name); !ok {
				t.Errorf("no %s check for %s", name, server)
			}
		}
	}
	if c, _ := rep.find(groupServers, "remote", "dns"); !strings.Contains(c.Detail, "203.0.113.30") {
		t.Errorf("the DNS check does not show the address: %q", c.Detail)
	}
	if c, _ := rep.find(groupServers, "remote", "tls"); !strings.Contains(c.Detail, "netpolicytest CA") {
		t.Errorf("the TLS check does not name the issuer: %q", c.Detail)
	}
	if c, _ := rep.find(groupServers, "local", "protocol"); !strings.Contains(c.Detail, "MCP 20") {
		t.Errorf("the protocol check does not name the version: %q", c.Detail)
	}
	if c, ok := rep.find(groupServers, "off", "enabled"); !ok || c.Status != checkWarn || c.Fix != "mcpgate enable off" {
		t.Errorf("the disabled server: %+v", c)
	}
	if c, _ := rep.find(groupNetwork, "", "certificates"); !strings.Contains(c.Detail, n.CAFile()) || !strings.Contains(c.Detail, "SSL_CERT_FILE") {
		t.Errorf("the CA settings in effect are not shown: %q", c.Detail)
	}

	r = runDoctorOver(h, n, nil)
	if r.code != 0 {
		t.Fatalf("doctor (text):\n%s", r)
	}
	for _, want := range []string{"Config\n", "Secret key\n", "Store\n", "Network\n", "Servers\n", "  remote\n", "    ok    tls: handshake ok", "No problems found."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
}

// --json prints a stable structure: ok, and checks each with group, name,
// status (ok, warn or fail), detail, and fix only with a problem.
func TestDoctorJSONShape(t *testing.T) {
	t.Parallel()
	n := netpolicytest.New(t)
	h := newHarness(t)
	writeServers(t, h, map[string]string{"gone": fmt.Sprintf(`{"url": "http://%s/mcp"}`, closedPort(t))})
	r := runDoctorOver(h, n, nil, "--json")
	if r.code != exitFail {
		t.Fatalf("want exit 1:\n%s", r)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || string(raw["ok"]) != "false" || raw["checks"] == nil {
		t.Fatalf("top level: %s", r.stdout)
	}
	var checks []map[string]any
	if err := json.Unmarshal(raw["checks"], &checks); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"group": true, "server": true, "name": true, "status": true, "detail": true, "fix": true}
	for _, c := range checks {
		for k := range c {
			if !allowed[k] {
				t.Errorf("unexpected key %q in %v", k, c)
			}
		}
		for _, k := range []string{"group", "name", "status", "detail"} {
			if s, _ := c[k].(string); s == "" {
				t.Errorf("check without %s: %v", k, c)
			}
		}
		status := c["status"].(string)
		if !slices.Contains([]string{"ok", "warn", "fail"}, status) {
			t.Errorf("status %q", status)
		}
		if _, hasFix := c["fix"]; hasFix != (status == "fail") && status != "warn" {
			t.Errorf("a %s check with fix %v: %v", status, hasFix, c)
		}
	}
}

// Each problem doctor detects is reported as a failed check naming what
// is wrong and the command (or edit) that fixes it, and doctor exits 1.
func TestDoctorNamesEachProblemAndItsFix(t *testing.T) {
	t.Parallel()
	type want struct {
		group, server, name string
		detail, fix         string // substrings
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, h *harness, n *netpolicytest.Network)
		want  want
	}{
		{
			name: "config does not parse",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				os.WriteFile(h.cfg, []byte("{\n  \"mcpServers\": {\n    \"docs\": {\"url\": \"https://x\",}\n  }\n}\n"), 0o600)
			},
			want: want{group: groupConfig, name: "file", detail: "malformed JSON", fix: "line 3, column"},
		},
		{
			name: "config entry invalid",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				writeServers(t, h, map[string]string{"plain": `{"url": "http://mcp.example.test/mcp"}`})
			},
			want: want{group: groupConfig, server: "plain", name: "entry", detail: "use https", fix: `the entry "plain" in `},
		},
		{
			name: "key file readable by others",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				writeKeyFile(t, h, 0o644)
			},
			want: want{group: groupKey, name: "source", detail: "readable by its owner only", fix: "chmod 600 "},
		},
		{
			name: "key file holds no key",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				path := writeKeyFile(t, h, 0o600)
				os.WriteFile(path, []byte("not a key\n"), 0o600)
			},
			want: want{group: groupKey, name: "source", detail: "does not hold", fix: "mv "},
		},
		{
			name: "key in the environment malformed",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				h.env[seal.EnvKey] = "c2hvcnQ="
			},
			want: want{group: groupKey, name: "source", detail: seal.EnvKey, fix: "unset " + seal.EnvKey},
		},
		{
			name: "store is not a database",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				os.MkdirAll(h.dataDir, 0o700)
				os.WriteFile(filepath.Join(h.dataDir, storeFileName), bytes.Repeat([]byte("not sqlite "), 500), 0o600)
			},
			want: want{group: groupStore, name: "open", detail: "not an SQLite database", fix: "mv "},
		},
		{
			name: "store schema newer than this binary",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				newerStore(t, h)
			},
			want: want{group: groupStore, name: "schema", detail: "schema version 99", fix: "upgrade mcpgate"},
		},
		{
			name: "SSL_CERT_FILE unreadable",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				h.env["SSL_CERT_FILE"] = filepath.Join(t.TempDir(), "missing.pem")
			},
			want: want{group: groupNetwork, name: "certificates", detail: "SSL_CERT_FILE", fix: "SSL_CERT_FILE"},
		},
		{
			name: "proxy variable malformed",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				h.env["HTTPS_PROXY"] = "http://proxy.corp:port"
			},
			want: want{group: groupNetwork, name: "proxy", detail: "HTTPS_PROXY is set but is not a usable proxy URL: its port", fix: "export HTTPS_PROXY=http://PROXY-HOST:PORT"},
		},
		{
			name: "server name does not resolve",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				writeServers(t, h, map[string]string{"docs": `{"url": "https://nowhere.example.test/mcp", "auth": "none"}`})
			},
			want: want{group: groupServers, server: "docs", name: "dns", detail: "nowhere.example.test does not resolve", fix: "mcpgate add docs URL --replace"},
		},
		{
			name: "certificate not trusted",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				n.Forward("203.0.113.31", []string{"mcp.example.test"}, fake.Start(t, nil).URL)
				writeServers(t, h, map[string]string{"docs": `{"url": "https://mcp.example.test/mcp", "auth": "none"}`})
			},
			want: want{group: groupServers, server: "docs", name: "tls", detail: "signed by netpolicytest CA, which this machine does not trust", fix: "export SSL_CERT_FILE="},
		},
		{
			name: "certificate signed by another authority than SSL_CERT_FILE's",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				n.Forward("203.0.113.32", []string{"mcp.example.test"}, fake.Start(t, nil).URL)
				h.env["SSL_CERT_FILE"] = netpolicytest.New(t).CAFile()
				writeServers(t, h, map[string]string{"docs": `{"url": "https://mcp.example.test/mcp", "auth": "none"}`})
			},
			want: want{group: groupServers, server: "docs", name: "tls", detail: "which this machine does not trust", fix: "SSL_CERT_FILE"},
		},
		{
			name: "server unreachable",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				writeServers(t, h, map[string]string{"docs": fmt.Sprintf(`{"url": "http://%s/mcp", "auth": "none"}`, closedPort(t))})
			},
			want: want{group: groupServers, server: "docs", name: "http", detail: "refused the connection", fix: "start the server"},
		},
		{
			name: "server answers but is not MCP",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/html")
					fmt.Fprint(w, "<html><body>Welcome</body></html>")
				}))
				t.Cleanup(web.Close)
				writeServers(t, h, map[string]string{"docs": fmt.Sprintf(`{"url": %q, "auth": "none"}`, web.URL+"/")})
			},
			want: want{group: groupServers, server: "docs", name: "protocol", detail: "not as an MCP server", fix: "mcpgate add docs URL --replace"},
		},
		{
			name: "server needs sign-in",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				srv := fake.Start(t, &fake.Options{Auth: fake.StartAuth(t, nil)})
				writeServers(t, h, map[string]string{"secure": fmt.Sprintf(`{"url": %q, "auth": "oauth"}`, srv.URL)})
			},
			want: want{group: groupServers, server: "secure", name: "auth", detail: "not signed in", fix: "mcpgate auth secure"},
		},
		{
			name: "server refused by the network policy",
			setup: func(t *testing.T, h *harness, n *netpolicytest.Network) {
				n.Resolve("wiki.corp.test", "10.0.0.5")
				writeServers(t, h, map[string]string{"wiki": `{"url": "https://wiki.corp.test/mcp", "auth": "none"}`})
			},
			want: want{group: groupServers, server: "wiki", name: "network-policy", detail: "10.0.0.5", fix: `"allowPrivateNetwork": true`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := netpolicytest.New(t)
			h := newHarness(t)
			tt.setup(t, h, n)
			rep, r := doctorJSON(t, h, n)
			if r.code != exitFail || rep.OK {
				t.Errorf("want exit 1 and ok false:\n%s", r)
			}
			c, ok := rep.find(tt.want.group, tt.want.server, tt.want.name)
			if !ok {
				t.Fatalf("no %s check %q for %q:\n%s", tt.want.group, tt.want.name, tt.want.server, r.stdout)
			}
			if c.Status != checkFail || !strings.Contains(c.Detail, tt.want.detail) || !strings.Contains(c.Fix, tt.want.fix) {
				t.Errorf("want a failure saying %q, fixed by %q; got %+v", tt.want.detail, tt.want.fix, c)
			}
			if h.env[seal.EnvKey] != "" && strings.Contains(r.stdout+r.stderr, h.env[seal.EnvKey]) {
				t.Errorf("doctor printed the secret key")
			}
			if d := n.Dialled(); tt.want.name == "network-policy" && len(d) > 0 {
				t.Errorf("a refused server was dialled: %v", d)
			}

			// The text report says the same, with the fix under it.
			r = runDoctorOver(h, n, nil)
			if r.code != exitFail || !strings.Contains(r.stdout, "fail  "+tt.want.name) || !strings.Contains(r.stdout, "fix: "+c.Fix) {
				t.Errorf("text report:\n%s", r)
			}
		})
	}
}

// writeKeyFile writes a valid key file with mode.
func writeKeyFile(t *testing.T, h *harness, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(h.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.dataDir, seal.KeyFileName)
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(randomKey(t))+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

func randomKey(t *testing.T) []byte {
	t.Helper()
	key := make([]byte, seal.KeySize)
	rand.Read(key)
	return key
}

// newerStore leaves a store in the data directory that a newer mcpgate
// wrote: its schema version above this one's.
func newerStore(t *testing.T, h *harness) {
	t.Helper()
	sl, err := seal.New(randomKey(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.dataDir, storeFileName)
	st, err := sqlite.Open(path, sl)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
}

// Checking creates nothing without a server to check: no key, no store.
func TestDoctorCreatesNothingWithoutServers(t *testing.T) {
	t.Parallel()
	n := netpolicytest.New(t)
	h := newHarness(t)
	rep, r := doctorJSON(t, h, n)
	if r.code != 0 {
		t.Fatalf("an empty setup:\n%s", r)
	}
	if c, _ := rep.find(groupConfig, "", "file"); c.Status != checkWarn || c.Fix != "mcpgate add NAME URL" {
		t.Errorf("no servers configured: %+v", c)
	}
	if _, err := os.Stat(h.dataDir); !os.IsNotExist(err) {
		t.Errorf("doctor created the data directory: %v", err)
	}
}

// On a terminal, a wait over a second shows progress; a quick run draws
// nothing.
func TestDoctorShowsProgressOnLongWaits(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(slow.Close)
	n := netpolicytest.New(t)
	h := newHarness(t)
	h.errTTY = true
	writeServers(t, h, map[string]string{"slow": fmt.Sprintf(`{"url": %q, "auth": "none"}`, slow.URL+"/mcp")})

	errOut := &lockedBuffer{await: "Checking 1 server", seen: make(chan struct{})}
	done := make(chan result, 1)
	go func() { done <- runDoctorOver(h, n, errOut) }()
	select {
	case <-errOut.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("no progress shown while a server takes its time")
	}
	close(release)
	<-done

	writeServers(t, h, map[string]string{})
	if r := runDoctorOver(h, n, nil); strings.Contains(r.stderr, "Checking") {
		t.Errorf("a quick run drew progress:\n%s", r)
	}
}
