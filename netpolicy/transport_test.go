package netpolicy_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/netpolicy/netpolicytest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	goleak.VerifyTestMain(m)
}

// Scopes of the servers the tests' requests are for.
var (
	publicServer   = netpolicy.Scope{Server: "docs"}
	privateServer  = netpolicy.Scope{Server: "intranet", PrivateNetwork: true}
	loopbackServer = netpolicy.Scope{Server: "dev", Loopback: true}
	// everything a config can allow at once
	permissive = netpolicy.Scope{Server: "all", Loopback: true, PrivateNetwork: true}
)

func newTransport(t *testing.T, opts *netpolicy.Options) *netpolicy.Transport {
	t.Helper()
	tr, err := netpolicy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// get sends a GET under scope (none when nil) and returns the status.
func get(t *testing.T, client *http.Client, scope *netpolicy.Scope, rawURL string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if scope != nil {
		ctx = netpolicy.WithScope(ctx, *scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }

// TestRefusedBeforeAnyDial: every address the policy refuses is refused
// with a clear error, and never dialled (the fake network fails the test
// on a dial it does not serve, and records every dial).
func TestRefusedBeforeAnyDial(t *testing.T) {
	n := netpolicytest.New(t)
	n.Resolve("imds.example.test", "169.254.169.254")
	n.Resolve("metadata.google.internal", "169.254.169.254")
	n.Resolve("internal.example.test", "10.1.2.3")
	n.Resolve("rebind.example.test", "127.0.0.1")
	n.Resolve("mixed.example.test", "203.0.113.7", "10.0.0.1")
	n.Resolve("mapped.example.test", "::ffff:169.254.169.254")
	client := &http.Client{Transport: newTransport(t, n.Options(nil))}

	for _, tc := range []struct {
		url   string
		scope *netpolicy.Scope
		want  []string // in the message
	}{
		{"http://169.254.169.254/latest/meta-data/", &permissive, []string{"169.254.169.254", "metadata", "never allowed"}},
		{"https://imds.example.test/", &permissive, []string{"imds.example.test (169.254.169.254)", "never allowed"}},
		{"https://metadata.google.internal/computeMetadata/v1/", &permissive, []string{"metadata.google.internal", "never allowed"}},
		{"https://mapped.example.test/", &permissive, []string{"never allowed"}},
		{"https://[fd00:ec2::254]/", &permissive, []string{"fd00:ec2::254", "metadata"}},
		{"https://100.100.100.200/", &permissive, []string{"metadata"}},
		{"https://[64:ff9b::a9fe:a9fe]/", &permissive, []string{"never allowed"}},
		{"https://169.254.10.1/", &permissive, []string{"link-local", "never allowed"}},
		{"https://[fe80::1]/", &permissive, []string{"link-local"}},
		{"http://0.0.0.0:8080/", &permissive, []string{"unspecified", "never allowed"}},
		{"https://224.0.0.1/", &permissive, []string{"multicast"}},
		{"https://internal.example.test/", &publicServer, []string{`internal.example.test (10.1.2.3) for server "docs"`, "private network", `"allowPrivateNetwork": true`}},
		{"https://10.1.2.3/", &loopbackServer, []string{"private network", "allowPrivateNetwork"}},
		{"https://192.168.1.10/", &publicServer, []string{"private network"}},
		{"https://172.16.0.1/", &publicServer, []string{"private network"}},
		{"https://100.64.0.1/", &publicServer, []string{"private network"}},
		{"https://[fd12:3456::1]/", &publicServer, []string{"private network"}},
		{"https://mixed.example.test/", &publicServer, []string{"10.0.0.1", "private network"}},
		{"https://rebind.example.test/", &publicServer, []string{"rebind.example.test (127.0.0.1)", "loopback", "servers configured on loopback"}},
		{"https://rebind.example.test/", &privateServer, []string{"loopback"}},
		{"http://127.0.0.1:9/", &publicServer, []string{"loopback"}},
		{"http://[::ffff:127.0.0.1]:9/", &publicServer, []string{"loopback"}},
		{"http://127.0.0.1:9/", nil, []string{"refused to connect to 127.0.0.1: a loopback"}},
		{"https://10.1.2.3/", nil, []string{"private network"}},
	} {
		_, err := get(t, client, tc.scope, tc.url)
		if !errors.Is(err, netpolicy.ErrRefused) {
			t.Errorf("GET %s: %v, want a refusal", tc.url, err)
			continue
		}
		var re *netpolicy.RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("GET %s: %T is no *RefusedError", tc.url, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(re.Error(), w) {
				t.Errorf("GET %s: %q does not say %q", tc.url, re.Error(), w)
			}
		}
	}
	if d := n.Dialled(); len(d) > 0 {
		t.Errorf("dialled %v; every address was refused", d)
	}
}

func TestPublicAndAllowedAddressesAreDialled(t *testing.T) {
	n := netpolicytest.New(t)
	n.Serve("203.0.113.7", []string{"mcp.example.test"}, http.HandlerFunc(ok))
	n.Serve("10.1.2.3", []string{"mcp.corp.test"}, http.HandlerFunc(ok))
	client := &http.Client{Transport: newTransport(t, n.Options(nil))}

	for _, tc := range []struct {
		url   string
		scope *netpolicy.Scope
	}{
		{"https://mcp.example.test/", nil},
		{"https://mcp.example.test/", &publicServer},
		{"https://203.0.113.7/", &publicServer},
		{"https://mcp.corp.test/", &privateServer},
		{"https://10.1.2.3/", &privateServer},
	} {
		if code, err := get(t, client, tc.scope, tc.url); err != nil || code != 200 {
			t.Errorf("GET %s: %d %v", tc.url, code, err)
		}
	}
	// The checked address is dialled, not the name.
	for _, d := range n.Dialled() {
		if _, err := netip.ParseAddrPort(d); err != nil {
			t.Errorf("dialled %q, not an address", d)
		}
	}
}

// TestLoopbackOnlyForLoopbackServers: loopback is reached by a server
// configured on loopback and by nothing else, not even over a connection
// the loopback server left idle in the pool.
func TestLoopbackOnlyForLoopbackServers(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	tr := newTransport(t, nil)
	client := &http.Client{Transport: tr}

	scope := netpolicy.ScopeOf(mcpgate.ServerConfig{ID: "dev", URL: srv.URL + "/mcp"})
	if !scope.Loopback || scope.PrivateNetwork {
		t.Fatalf("ScopeOf(%s) = %+v", srv.URL, scope)
	}
	if code, err := get(t, client, &scope, srv.URL); err != nil || code != 200 {
		t.Fatalf("loopback server: %d %v", code, err)
	}
	for _, s := range []*netpolicy.Scope{nil, &publicServer, &privateServer} {
		if _, err := get(t, client, s, srv.URL); !errors.Is(err, netpolicy.ErrRefused) {
			t.Errorf("scope %+v: %v, want a refusal", s, err)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("the loopback server saw %d requests, want 1", hits.Load())
	}
}

func TestScopeOf(t *testing.T) {
	for _, tc := range []struct {
		cfg  mcpgate.ServerConfig
		want netpolicy.Scope
	}{
		{mcpgate.ServerConfig{ID: "a", URL: "https://mcp.example.com/mcp"}, netpolicy.Scope{Server: "a"}},
		{mcpgate.ServerConfig{ID: "b", URL: "http://localhost:3000/mcp"}, netpolicy.Scope{Server: "b", Loopback: true}},
		{mcpgate.ServerConfig{ID: "c", URL: "http://[::1]:3000/mcp"}, netpolicy.Scope{Server: "c", Loopback: true}},
		// A private URL host is no permission by itself.
		{mcpgate.ServerConfig{ID: "d", URL: "https://10.1.2.3/mcp"}, netpolicy.Scope{Server: "d"}},
		{mcpgate.ServerConfig{ID: "e", URL: "https://10.1.2.3/mcp", AllowPrivateNetwork: true}, netpolicy.Scope{Server: "e", PrivateNetwork: true}},
	} {
		if got := netpolicy.ScopeOf(tc.cfg); got != tc.want {
			t.Errorf("ScopeOf(%s) = %+v, want %+v", tc.cfg.URL, got, tc.want)
		}
	}
}

// TestRedirectsAreCheckedToo: a public server's redirect to any refused
// address is refused, with nothing dialled there.
func TestRedirectsAreCheckedToo(t *testing.T) {
	var loopbackHits atomic.Int32
	lo := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { loopbackHits.Add(1) }))
	t.Cleanup(lo.Close)
	n := netpolicytest.New(t)
	n.Resolve("rebind.example.test", "127.0.0.1")
	n.Resolve("internal.example.test", "10.1.2.3")
	var target atomic.Value
	n.Serve("203.0.113.7", []string{"mcp.example.test"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.Load().(string), http.StatusTemporaryRedirect)
	}))
	// The default redirect policy follows anywhere: the dialer alone
	// stops these.
	client := &http.Client{Transport: newTransport(t, n.Options(nil))}
	for _, to := range []string{
		"http://169.254.169.254/latest/meta-data/iam/",
		"https://metadata.google.internal/",
		"https://internal.example.test/",
		"https://10.1.2.3/",
		"https://rebind.example.test/",
		lo.URL + "/admin",
	} {
		target.Store(to)
		_, err := get(t, client, &publicServer, "https://mcp.example.test/start")
		if !errors.Is(err, netpolicy.ErrRefused) {
			t.Errorf("redirect to %s: %v, want a refusal", to, err)
		}
	}
	for _, d := range n.Dialled() {
		if d != "203.0.113.7:443" {
			t.Errorf("dialled %s", d)
		}
	}
	if loopbackHits.Load() != 0 {
		t.Errorf("the loopback service was reached %d times", loopbackHits.Load())
	}
}

// TestRebindingIsCaughtAtTheDial: a name checked while it resolved to a
// public address is refused once it resolves to loopback, because the
// check is made on every dial, on the address dialled.
func TestRebindingIsCaughtAtTheDial(t *testing.T) {
	n := netpolicytest.New(t)
	n.Serve("203.0.113.8", []string{"flip.example.test"}, http.HandlerFunc(ok))
	tr := newTransport(t, n.Options(nil))
	client := &http.Client{Transport: tr}
	if code, err := get(t, client, &publicServer, "https://flip.example.test/"); err != nil || code != 200 {
		t.Fatalf("first: %d %v", code, err)
	}
	n.Resolve("flip.example.test", "127.0.0.1")
	tr.CloseIdleConnections()
	if _, err := get(t, client, &publicServer, "https://flip.example.test/"); !errors.Is(err, netpolicy.ErrRefused) {
		t.Fatalf("after rebinding: %v, want a refusal", err)
	}
	if d := n.Dialled(); !slices.Equal(d, []string{"203.0.113.8:443"}) {
		t.Errorf("dialled %v", d)
	}
}

// TestStrictIgnoresWhatConfigsAllow is the multi-tenant policy: one
// setting, and only the operator's ranges open loopback or private
// addresses.
func TestStrictIgnoresWhatConfigsAllow(t *testing.T) {
	n := netpolicytest.New(t)
	n.Serve("10.1.2.3", []string{"tools.corp.test"}, http.HandlerFunc(ok))
	n.Serve("10.9.9.9", []string{"other.corp.test"}, http.HandlerFunc(ok))
	lo := httptest.NewServer(http.HandlerFunc(ok))
	t.Cleanup(lo.Close)

	opts := n.Options(nil)
	opts.Strict = true
	opts.Allow = []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("169.254.0.0/16")}
	type who struct{}
	var mu sync.Mutex
	var told []string // who, the host and the server of every refusal
	opts.OnRefused = func(ctx context.Context, err *netpolicy.RefusedError) {
		mu.Lock()
		defer mu.Unlock()
		name, _ := ctx.Value(who{}).(string)
		told = append(told, name+" "+err.Host+" "+err.Server)
	}
	client := &http.Client{Transport: newTransport(t, opts)}
	opts.Allow[0] = netip.MustParsePrefix("10.9.0.0/16") // New copied the list

	refused := []string{lo.URL, "https://other.corp.test/", "http://169.254.169.254/"}
	for _, u := range refused {
		req, _ := http.NewRequestWithContext(context.WithValue(netpolicy.WithScope(t.Context(), permissive), who{}, "alice"), http.MethodGet, u, nil)
		_, err := client.Do(req)
		if !errors.Is(err, netpolicy.ErrRefused) {
			t.Errorf("strict GET %s: %v, want a refusal", u, err)
			continue
		}
		if u != "http://169.254.169.254/" && !strings.Contains(err.Error(), "strict") {
			t.Errorf("strict GET %s: %q does not say the policy is strict", u, err)
		}
	}
	if code, err := get(t, client, nil, "https://tools.corp.test/"); err != nil || code != 200 {
		t.Errorf("an allowed range: %d %v", code, err)
	}
	// OnRefused heard of each refusal, with the refused request's context.
	mu.Lock()
	defer mu.Unlock()
	loHost := strings.TrimPrefix(lo.URL, "http://")
	loHost = loHost[:strings.LastIndex(loHost, ":")]
	want := []string{"alice " + loHost + " all", "alice other.corp.test all", "alice 169.254.169.254 all"}
	if !slices.Equal(told, want) {
		t.Errorf("OnRefused was told %q, want %q", told, want)
	}
}

// TestProxyFromTheEnvironment: HTTPS_PROXY carries the request through a
// CONNECT proxy on loopback (the operator's choice, dialled though the
// scope allows no loopback), which resolves the name itself.
func TestProxyFromTheEnvironment(t *testing.T) {
	n := netpolicytest.New(t)
	n.Serve("203.0.113.9", []string{"mcp.example.test"}, http.HandlerFunc(ok))
	proxy := n.StartProxy()
	proxyAddr := strings.TrimPrefix(proxy.URL, "http://")
	client := &http.Client{Transport: newTransport(t, n.Options(map[string]string{"HTTPS_PROXY": proxy.URL}))}

	if code, err := get(t, client, &publicServer, "https://mcp.example.test/mcp"); err != nil || code != 200 {
		t.Fatalf("through the proxy: %d %v", code, err)
	}
	if got := proxy.Targets(); !slices.Equal(got, []string{"mcp.example.test:443"}) {
		t.Errorf("the proxy was asked for %v", got)
	}
	if l := n.Lookups(); len(l) > 0 {
		t.Errorf("mcpgate resolved %v itself; the proxy resolves", l)
	}
	if d := n.Dialled(); !slices.Equal(d, []string{proxyAddr}) {
		t.Errorf("dialled %v, want only the proxy %s", d, proxyAddr)
	}

	// What the URL says by itself is still checked, before the proxy is
	// asked.
	for _, u := range []string{"https://169.254.169.254/", "https://metadata.google.internal/", "https://10.1.2.3/"} {
		if _, err := get(t, client, &publicServer, u); !errors.Is(err, netpolicy.ErrRefused) {
			t.Errorf("GET %s through the proxy: %v, want a refusal", u, err)
		}
	}
	if got := proxy.Targets(); len(got) != 1 {
		t.Errorf("the proxy was asked for %v", got)
	}
}

func TestNoProxyGoesDirect(t *testing.T) {
	n := netpolicytest.New(t)
	n.Serve("203.0.113.9", []string{"mcp.example.test"}, http.HandlerFunc(ok))
	proxy := n.StartProxy()
	client := &http.Client{Transport: newTransport(t, n.Options(map[string]string{
		"https_proxy": proxy.URL, "no_proxy": "other.test,.example.test"}))}
	if code, err := get(t, client, &publicServer, "https://mcp.example.test/"); err != nil || code != 200 {
		t.Fatalf("direct: %d %v", code, err)
	}
	if got := proxy.Targets(); len(got) > 0 {
		t.Errorf("the proxy was asked for %v", got)
	}
	if d := n.Dialled(); !slices.Equal(d, []string{"203.0.113.9:443"}) {
		t.Errorf("dialled %v", d)
	}
}

// TestCertificateAuthoritiesFromTheEnvironment: a CA named by
// SSL_CERT_FILE (or in SSL_CERT_DIR) is trusted; without it the same
// server is not.
func TestCertificateAuthoritiesFromTheEnvironment(t *testing.T) {
	n := netpolicytest.New(t)
	n.Serve("203.0.113.10", []string{"corp-tls.example.test"}, http.HandlerFunc(ok))
	const u = "https://corp-tls.example.test/"

	without := &http.Client{Transport: newTransport(t, n.Options(map[string]string{"SSL_CERT_FILE": ""}))}
	_, err := get(t, without, &publicServer, u)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("without the CA: %v, want an unknown authority", err)
	}

	with := &http.Client{Transport: newTransport(t, n.Options(nil))}
	if code, err := get(t, with, &publicServer, u); err != nil || code != 200 {
		t.Fatalf("with SSL_CERT_FILE: %d %v", code, err)
	}

	dir := t.TempDir()
	pem, err := os.ReadFile(n.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "corp.pem"), pem, 0o600); err != nil {
		t.Fatal(err)
	}
	inDir := &http.Client{Transport: newTransport(t, n.Options(map[string]string{"SSL_CERT_FILE": "", "SSL_CERT_DIR": "/nonexistent:" + dir}))}
	if code, err := get(t, inDir, &publicServer, u); err != nil || code != 200 {
		t.Fatalf("with SSL_CERT_DIR: %d %v", code, err)
	}
}

// TestCertificatesFromTheEnvironmentAreStillVerified: with SSL_CERT_FILE
// set, certificates are checked on the first handshake rather than by the
// standard verification (the roots are built then), and that check still
// refuses a certificate for another name and one from another authority.
func TestCertificatesFromTheEnvironmentAreStillVerified(t *testing.T) {
	n := netpolicytest.New(t)
	n.Serve("203.0.113.11", []string{"corp-tls.example.test"}, http.HandlerFunc(ok))
	n.Resolve("other.example.test", "203.0.113.11")
	trusted := &http.Client{Transport: newTransport(t, n.Options(nil))}
	if code, err := get(t, trusted, &publicServer, "https://corp-tls.example.test/"); err != nil || code != 200 {
		t.Fatalf("the right name: %d %v", code, err)
	}
	_, err := get(t, trusted, &publicServer, "https://other.example.test/")
	var wrongName x509.HostnameError
	if !errors.As(err, &wrongName) {
		t.Errorf("a certificate for another name: %v, want a hostname error", err)
	}

	other := netpolicytest.New(t)
	untrusted := &http.Client{Transport: newTransport(t, n.Options(map[string]string{"SSL_CERT_FILE": other.CAFile()}))}
	_, err = get(t, untrusted, &publicServer, "https://corp-tls.example.test/")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("another authority's certificate: %v, want an unknown authority", err)
	}
}

func TestUnusableCertFileIsAnError(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{filepath.Join(t.TempDir(), "missing.pem"), notPEM} {
		_, err := netpolicy.New(&netpolicy.Options{Getenv: func(k string) string {
			if k == "SSL_CERT_FILE" {
				return file
			}
			return ""
		}})
		if err == nil || !strings.Contains(err.Error(), "SSL_CERT_FILE") {
			t.Errorf("SSL_CERT_FILE=%s: %v, want an error naming the variable", file, err)
		}
	}
}

// TestScopedSetsTheScopeOfEveryRequest: a request made with a context
// of its own (a stream reopened in the background) still carries its
// server's scope.
func TestScopedSetsTheScopeOfEveryRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(ok))
	t.Cleanup(srv.Close)
	tr := newTransport(t, nil)
	client := &http.Client{Transport: netpolicy.Scoped(tr, loopbackServer)}
	if code, err := get(t, client, nil, srv.URL); err != nil || code != 200 {
		t.Fatalf("scoped: %d %v", code, err)
	}
	client = &http.Client{Transport: netpolicy.Scoped(tr, publicServer)}
	if _, err := get(t, client, &loopbackServer, srv.URL); !errors.Is(err, netpolicy.ErrRefused) {
		t.Fatalf("another server's scope: %v, want a refusal", err)
	}
}
