package netpolicy

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// proxyConfig is the proxy settings of the environment, read once, with
// the meaning net/http's ProxyFromEnvironment gives them (which reads the
// process's environment only, and only once, so it cannot be handed the
// environment of a test or of the CLI's Getenv):
//
//   - HTTPS_PROXY (or https_proxy) for https requests, HTTP_PROXY (or
//     http_proxy) for http ones; a value without a scheme is http://.
//   - NO_PROXY (or no_proxy): comma-separated; "*" for everything; an IP
//     address or CIDR; a domain name, matching itself and its subdomains,
//     or with a leading "." (or "*.") only its subdomains; any of them
//     with ":port".
//   - localhost and loopback addresses are never proxied.
//   - under CGI (REQUEST_METHOD set) HTTP_PROXY is refused: a client may
//     have sent it as a Proxy header (golang.org/s/cgihttpproxy).
type proxyConfig struct {
	http, https *url.URL
	cgi         bool
	all         bool // NO_PROXY=*
	prefixes    []netip.Prefix
	ips         []hostPort
	domains     []domainMatch
}

type hostPort struct {
	ip   netip.Addr
	port string
}

type domainMatch struct {
	suffix    string // with its leading "."
	port      string
	matchHost bool // the name itself matches, not only its subdomains
}

func getenvAny(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func readProxyConfig(getenv func(string) string) *proxyConfig {
	c := &proxyConfig{
		http:  parseProxy(getenvAny(getenv, "HTTP_PROXY", "http_proxy")),
		https: parseProxy(getenvAny(getenv, "HTTPS_PROXY", "https_proxy")),
		cgi:   getenv("REQUEST_METHOD") != "",
	}
	for _, p := range strings.Split(getenvAny(getenv, "NO_PROXY", "no_proxy"), ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		if p == "*" {
			c.all = true
			return c
		}
		if pfx, err := netip.ParsePrefix(p); err == nil {
			c.prefixes = append(c.prefixes, pfx.Masked())
			continue
		}
		host, port, err := net.SplitHostPort(p)
		if err != nil {
			host, port = p, ""
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if host == "" {
			continue // malformed; ignored, as Go does
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			c.ips = append(c.ips, hostPort{ip.Unmap(), port})
			continue
		}
		host = strings.TrimPrefix(host, "*")
		d := domainMatch{suffix: host, port: port}
		if !strings.HasPrefix(host, ".") {
			d.suffix, d.matchHost = "."+host, true
		}
		c.domains = append(c.domains, d)
	}
	return c
}

// parseProxy reads a proxy setting; nil when it is empty or unusable.
func parseProxy(v string) *url.URL {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" {
		// "proxy.corp:3128" parses with scheme "proxy.corp": try it as
		// the host it is meant to be.
		if u2, err2 := url.Parse("http://" + v); err2 == nil {
			return u2
		}
		return nil
	}
	return u
}

// errCGIProxy refuses HTTP_PROXY in a CGI environment, as net/http does.
var errCGIProxy = errors.New("refusing to use HTTP_PROXY value in CGI environment; see golang.org/s/cgihttpproxy")

// proxyFor returns the proxy for a request to u, nil for a direct
// connection.
func (c *proxyConfig) proxyFor(u *url.URL) (*url.URL, error) {
	var proxy *url.URL
	switch u.Scheme {
	case "https":
		proxy = c.https
	case "http":
		proxy = c.http
		if proxy != nil && c.cgi {
			return nil, errCGIProxy
		}
	}
	if proxy == nil || !c.useProxy(u) {
		return nil, nil
	}
	return proxy, nil
}

func (c *proxyConfig) useProxy(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if host == "localhost" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err == nil {
		ip = ip.WithZone("").Unmap()
		if ip.IsLoopback() {
			return false
		}
	}
	if c.all {
		return false
	}
	if ip.IsValid() {
		for _, p := range c.prefixes {
			if p.Contains(ip) {
				return false
			}
		}
		for _, m := range c.ips {
			if m.ip == ip && (m.port == "" || m.port == port) {
				return false
			}
		}
		return true // domain entries never match an address
	}
	for _, d := range c.domains {
		if (strings.HasSuffix(host, d.suffix) || (d.matchHost && host == d.suffix[1:])) && (d.port == "" || d.port == port) {
			return false
		}
	}
	return true
}

// proxyAddr is the address the transport dials to reach proxy, as
// net/http computes it.
func proxyAddr(proxy *url.URL) string {
	port := proxy.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[proxy.Scheme]
	}
	return net.JoinHostPort(proxy.Hostname(), port)
}
