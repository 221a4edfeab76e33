package netpolicy

import (
	"net/netip"
	"net/url"
	"slices"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want class
	}{
		{"8.8.8.8", public},
		{"203.0.113.7", public},
		{"2606:4700::1111", public},
		{"127.0.0.1", loopback},
		{"127.255.0.9", loopback},
		{"::1", loopback},
		{"::ffff:127.0.0.1", loopback},
		{"10.1.2.3", private},
		{"172.16.0.1", private},
		{"172.31.255.255", private},
		{"192.168.1.10", private},
		{"100.64.0.1", private},
		{"100.127.255.254", private},
		{"fd12:3456::1", private},
		{"fec0::1", private},
		{"172.32.0.1", public},
		{"169.254.169.254", metadata},
		{"169.254.170.2", metadata},
		{"::ffff:169.254.169.254", metadata},
		{"64:ff9b::a9fe:a9fe", metadata},
		{"fd00:ec2::254", metadata},
		{"100.100.100.200", metadata},
		{"169.254.1.1", linkLocal},
		{"fe80::1", linkLocal},
		{"fe80::1%eth0", linkLocal},
		{"64:ff9b::7f00:1", loopback},
		{"0.0.0.0", unspecified},
		{"0.1.2.3", unspecified},
		{"::", unspecified},
		{"224.0.0.1", special},
		{"ff02::1", special},
		{"255.255.255.255", special},
		{"240.0.0.1", special},
		{"::7f00:1", special}, // IPv4-compatible 127.0.0.1
	} {
		if got := classify(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("classify(%s) = %s, want %s", tc.addr, got.reason(), tc.want.reason())
		}
	}
}

func TestNameClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		want class
		ok   bool
	}{
		{"localhost", loopback, true},
		{"LOCALHOST.", loopback, true},
		{"app.localhost", loopback, true},
		{"metadata.google.internal", metadata, true},
		{"Metadata.Google.Internal.", metadata, true},
		{"metadata.goog", metadata, true},
		{"mcp.example.com", public, false},
		{"notlocalhost", public, false},
	} {
		got, ok := nameClass(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("nameClass(%q) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestProxyFromEnvironment holds proxyConfig to what net/http's
// ProxyFromEnvironment does with the same variables.
func TestProxyFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		url  string
		want string // "" for a direct connection
	}{
		{map[string]string{}, "https://mcp.example.com/", ""},
		{map[string]string{"HTTPS_PROXY": "http://proxy.corp:3128"}, "https://mcp.example.com/", "http://proxy.corp:3128"},
		{map[string]string{"https_proxy": "proxy.corp:3128"}, "https://mcp.example.com/", "http://proxy.corp:3128"},
		{map[string]string{"HTTPS_PROXY": "http://a:1", "https_proxy": "http://b:2"}, "https://x.test/", "http://a:1"},
		{map[string]string{"HTTPS_PROXY": "http://proxy:1"}, "http://plain.example.com/", ""},
		{map[string]string{"HTTP_PROXY": "http://proxy:1"}, "http://plain.example.com/", "http://proxy:1"},
		{map[string]string{"HTTP_PROXY": "http://proxy:1"}, "https://mcp.example.com/", ""},
		// Loopback is never proxied.
		{map[string]string{"HTTP_PROXY": "http://proxy:1"}, "http://localhost:8080/", ""},
		{map[string]string{"HTTP_PROXY": "http://proxy:1"}, "http://127.0.0.1:8080/", ""},
		{map[string]string{"HTTP_PROXY": "http://proxy:1"}, "http://[::1]:8080/", ""},
		// NO_PROXY.
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, "https://mcp.example.com/", ""},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "https://example.com/", ""},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "https://mcp.example.com/", ""},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "https://notexample.com/", "http://p:1"},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example.com"}, "https://example.com/", "http://p:1"},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*.example.com"}, "https://a.example.com/", ""},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "no_proxy": "other.test, example.com:8443"}, "https://example.com:8443/", ""},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com:8443"}, "https://example.com/", "http://p:1"},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, "https://10.1.2.3/", ""},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, "https://mcp.example.com/", "http://p:1"},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "203.0.113.7"}, "https://203.0.113.7/", ""},
		{map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "[2001:db8::1]:443"}, "https://[2001:db8::1]/", ""},
		// Under CGI, HTTP_PROXY may come from a client's Proxy header.
		{map[string]string{"HTTPS_PROXY": "http://p:1", "REQUEST_METHOD": "GET"}, "https://mcp.example.com/", "http://p:1"},
	} {
		c := readProxyConfig(func(k string) string { return tc.env[k] })
		u, _ := url.Parse(tc.url)
		got, err := c.proxyFor(u)
		if err != nil {
			t.Errorf("%v %s: %v", tc.env, tc.url, err)
			continue
		}
		gotS := ""
		if got != nil {
			gotS = got.String()
		}
		if gotS != tc.want {
			t.Errorf("%v %s: proxy %q, want %q", tc.env, tc.url, gotS, tc.want)
		}
	}
	c := readProxyConfig(func(k string) string {
		return map[string]string{"HTTP_PROXY": "http://p:1", "REQUEST_METHOD": "GET"}[k]
	})
	if _, err := c.proxyFor(&url.URL{Scheme: "http", Host: "plain.example.com"}); err == nil {
		t.Error("HTTP_PROXY was used under CGI")
	}
}

// TestPrivateRangesAreWhatClassifyCallsPrivate: the ranges an operator
// opens with network.allowPrivate hold exactly the private class's
// addresses, so allowing them opens nothing else.
func TestPrivateRangesAreWhatClassifyCallsPrivate(t *testing.T) {
	for _, p := range PrivateRanges() {
		for _, a := range []netip.Addr{p.Addr(), lastOf(p)} {
			if c := classify(a); c != private {
				t.Errorf("%s in %s is %s, not private", a, p, c.reason())
			}
		}
	}
	for _, s := range []string{"10.1.2.3", "172.31.255.1", "192.168.0.1", "100.64.0.1", "fd12::1", "fec0::1"} {
		a := netip.MustParseAddr(s)
		if !slices.ContainsFunc(PrivateRanges(), func(p netip.Prefix) bool { return p.Contains(a) }) {
			t.Errorf("%s is private but in no range", a)
		}
	}
}

// lastOf is the last address of p.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
