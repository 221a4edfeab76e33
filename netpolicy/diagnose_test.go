package netpolicy_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/netpolicy/netpolicytest"
)

// Resolve answers as the dialer would decide, without dialling: the
// addresses of a public name, a refusal for a private one unless the
// scope allows private ranges, the resolver's error for an unknown name.
func TestResolveChecksWithoutDialling(t *testing.T) {
	n := netpolicytest.New(t)
	n.Resolve("public.example.test", "203.0.113.5", "2001:db8::5")
	n.Resolve("intranet.example.test", "203.0.113.6", "10.1.2.3")
	tr := newTransport(t, n.Options(nil))
	ctx := context.Background()

	ips, err := tr.Resolve(netpolicy.WithScope(ctx, publicServer), "public.example.test")
	if err != nil || len(ips) != 2 {
		t.Errorf("public name: %v, %v", ips, err)
	}
	_, err = tr.Resolve(netpolicy.WithScope(ctx, publicServer), "intranet.example.test")
	var re *netpolicy.RefusedError
	if !errors.As(err, &re) || re.Addr.String() != "10.1.2.3" || !re.PrivateNetworkAllows() {
		t.Errorf("a name with a private address under a public scope: %v", err)
	}
	if ips, err := tr.Resolve(netpolicy.WithScope(ctx, privateServer), "intranet.example.test"); err != nil || len(ips) != 2 {
		t.Errorf("the same name allowed private ranges: %v, %v", ips, err)
	}
	var dns *net.DNSError
	if _, err := tr.Resolve(ctx, "nowhere.example.test"); !errors.As(err, &dns) {
		t.Errorf("an unknown name: %v", err)
	}
	if _, err := tr.Resolve(ctx, "169.254.169.254"); !errors.As(err, &re) || re.PrivateNetworkAllows() {
		t.Errorf("the metadata address: %v", err)
	}
	if d := n.Dialled(); len(d) > 0 {
		t.Errorf("Resolve dialled %v", d)
	}
}

// Settings say which variable each proxy came from, and why a proxy
// value is unusable without quoting it (it may hold a password).
func TestSettingsNameTheirVariables(t *testing.T) {
	n := netpolicytest.New(t)
	tr := newTransport(t, n.Options(map[string]string{
		"https_proxy":  "http://user:hunter2@proxy.corp:3128",
		"NO_PROXY":     ".corp",
		"SSL_CERT_DIR": "/etc/corp-ca",
	}))
	s := tr.Settings()
	if s.HTTPSProxy == nil || s.HTTPSProxy.Variable != "https_proxy" || s.HTTPSProxy.Problem != "" || s.HTTPSProxy.URL.Host != "proxy.corp:3128" {
		t.Errorf("HTTPS proxy %+v", s.HTTPSProxy)
	}
	if s.HTTPProxy != nil {
		t.Errorf("HTTP proxy %+v, none set", s.HTTPProxy)
	}
	if s.NoProxyVariable != "NO_PROXY" || s.NoProxy != ".corp" || s.CertFile != n.CAFile() || s.CertDir != "/etc/corp-ca" {
		t.Errorf("settings %+v", s)
	}
	if p, _ := tr.ProxyFor(&url.URL{Scheme: "https", Host: "mcp.example.test"}); p == nil || p.Host != "proxy.corp:3128" {
		t.Errorf("ProxyFor = %v", p)
	}
	if p, _ := tr.ProxyFor(&url.URL{Scheme: "https", Host: "wiki.corp"}); p != nil {
		t.Errorf("ProxyFor a NO_PROXY host = %v", p)
	}

	for bad, want := range map[string]string{
		"http://proxy.corp:port":      "port",
		"ftp://proxy.corp:21":         "scheme",
		"http://proxy.corp:3128/path": "path",
		"http://:3128":                "host",
		"http://[::1":                 "URL",
	} {
		tr := newTransport(t, n.Options(map[string]string{"HTTPS_PROXY": bad}))
		p := tr.Settings().HTTPSProxy
		if p == nil || !strings.Contains(p.Problem, want) {
			t.Errorf("HTTPS_PROXY=%s: want a problem naming its %s: %+v", bad, want, p)
			continue
		}
		if strings.Contains(p.Problem, "proxy.corp") {
			t.Errorf("HTTPS_PROXY=%s: the problem quotes the value: %q", bad, p.Problem)
		}
	}
}
