package netpolicy

import (
	"context"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Resolve resolves host the way a request under ctx's scope would be
// dialled, and checks every address against the policy, but dials
// nothing: the addresses, a [*RefusedError] for an address (or a name)
// the policy refuses, or the resolver's error. A literal address is only
// checked. For diagnostics (mcpgate doctor): requests resolve as they
// dial.
func (t *Transport) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	return t.resolve(ctx, t.rules(ctx), "ip", host)
}

// ProxyFor returns the proxy a request to u is sent through, nil for a
// direct connection.
func (t *Transport) ProxyFor(u *url.URL) (*url.URL, error) { return t.proxy.proxyFor(u) }

// ProxySetting is one proxy variable as a [Transport] read it.
type ProxySetting struct {
	// Variable is the variable the value came from: HTTPS_PROXY,
	// https_proxy, HTTP_PROXY or http_proxy.
	Variable string
	// URL is the proxy requests are sent to; nil when the value could
	// not be read as one (then requests go direct).
	URL *url.URL
	// Problem says why the value is not a usable proxy URL; empty when
	// it is one. It never quotes the value, which may hold a password.
	Problem string
}

// Settings are the proxy and certificate settings a [Transport] took from
// its environment, for diagnostics.
type Settings struct {
	// HTTPSProxy and HTTPProxy are nil when their variables are not set.
	HTTPSProxy, HTTPProxy *ProxySetting
	// NoProxyVariable is NO_PROXY or no_proxy, whichever was read, and
	// NoProxy its value; both empty when neither is set.
	NoProxyVariable, NoProxy string
	// CertFile and CertDir are SSL_CERT_FILE and SSL_CERT_DIR: extra
	// certificate authorities, trusted besides the system's.
	CertFile, CertDir string
}

// Settings returns what t took from its environment.
func (t *Transport) Settings() Settings {
	getenv := t.opts.Getenv
	var s Settings
	s.HTTPSProxy = proxySetting(getenv, t.proxy.https, "HTTPS_PROXY", "https_proxy")
	s.HTTPProxy = proxySetting(getenv, t.proxy.http, "HTTP_PROXY", "http_proxy")
	for _, v := range []string{"NO_PROXY", "no_proxy"} {
		if val := getenv(v); val != "" {
			s.NoProxyVariable, s.NoProxy = v, val
			break
		}
	}
	s.CertFile, s.CertDir = getenv("SSL_CERT_FILE"), getenv("SSL_CERT_DIR")
	return s
}

func proxySetting(getenv func(string) string, u *url.URL, names ...string) *ProxySetting {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return &ProxySetting{Variable: n, URL: u, Problem: proxyProblem(v, u)}
		}
	}
	return nil
}

// proxyProblem says why the proxy variable v, which parseProxy read as u,
// is not a proxy a request can be sent to.
func proxyProblem(v string, u *url.URL) string {
	if strings.Contains(v, "://") {
		if _, err := url.Parse(v); err != nil {
			if strings.Contains(err.Error(), "invalid port") {
				return "its port is not a number from 1 to 65535"
			}
			return "it is not a URL"
		}
	}
	if u == nil {
		return "it is not a URL"
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return "its scheme is not http, https, socks5 or socks5h"
	}
	if u.Hostname() == "" {
		return "it names no host"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "its port is not a number from 1 to 65535"
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "it has a path or query, where a proxy is only scheme://host:port"
	}
	return ""
}

// PrivateNetworkAllows reports whether allowPrivateNetwork in the
// server's config entry would have allowed what e refused: a private
// address, under a policy that is not strict.
func (e *RefusedError) PrivateNetworkAllows() bool { return e.class == private && !e.strict }
