package netpolicy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate"
)

// Resolver resolves host names. *net.Resolver implements it. It must be
// safe for concurrent use.
type Resolver interface {
	// LookupNetIP returns the addresses of host; network is "ip", "ip4"
	// or "ip6".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a [Transport]. A nil *Options means defaults; the
// struct is copied by [New].
type Options struct {
	// Resolver resolves the names of servers; nil is net.DefaultResolver.
	// Tests give names the addresses they need here.
	Resolver Resolver
	// Getenv reads HTTPS_PROXY, HTTP_PROXY, NO_PROXY (and their lower-case
	// forms), REQUEST_METHOD, SSL_CERT_FILE and SSL_CERT_DIR, once, in
	// [New]; nil is os.Getenv.
	Getenv func(string) string
	// Strict is the policy of a gateway many tenants share (serve --http):
	// what a server's config allows (loopback for a server configured on
	// loopback, private ranges for one with allowPrivateNetwork) counts
	// for nothing, since tenants write those configs; only Allow opens
	// loopback or private addresses.
	Strict bool
	// Allow lists loopback or private ranges every request may reach
	// whatever its scope: an operator's own network. It never opens
	// link-local, metadata, unspecified, multicast or reserved addresses.
	Allow []netip.Prefix
	// Dial connects to an address the policy has checked (an IP and port)
	// or to a proxy (as configured); nil is a net.Dialer with a 10 s
	// timeout. A test seam: it sees exactly what would leave the process.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// OnRefused, when set, is told of every refusal with the context of
	// the request refused (an audit log reads who made it from there). It
	// must be quick.
	OnRefused func(ctx context.Context, err *RefusedError)
}

// Scope is what the policy knows of the server a request is for. Build it
// with [ScopeOf] and put it on the request's context with [WithScope].
type Scope struct {
	// Server is the server's ID, for refusals.
	Server string
	// Loopback is set when the server is configured on a loopback URL:
	// the person chose to reach this machine, so its requests (and its
	// sign-in's) may.
	Loopback bool
	// PrivateNetwork is set when the server's config allows private
	// ranges (allowPrivateNetwork).
	PrivateNetwork bool
}

// ScopeOf is the scope of cfg's requests: its MCP requests and the OAuth
// requests made for it. A server whose URL host is a private address is
// not thereby allowed private ranges: its authorization server could
// then send the sign-in anywhere in them; allowPrivateNetwork says so.
func ScopeOf(cfg mcpgate.ServerConfig) Scope {
	s := Scope{Server: cfg.ID, PrivateNetwork: cfg.AllowPrivateNetwork}
	if u, err := url.Parse(cfg.URL); err == nil {
		s.Loopback = mcpgate.IsLoopbackHost(u.Hostname())
	}
	return s
}

type scopeKey struct{}

// WithScope returns ctx carrying s: every request made with it is checked
// under s. A request without a scope gets the strictest rules: public
// addresses only.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom returns the scope on ctx.
func ScopeFrom(ctx context.Context) (Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	return s, ok
}

// Scoped returns a RoundTripper that sends every request through rt
// under s: the per-server layer of an HTTP stack whose requests, whatever
// context made them, are all that server's.
func Scoped(rt http.RoundTripper, s Scope) http.RoundTripper {
	return scoped{rt, s}
}

type scoped struct {
	rt http.RoundTripper
	s  Scope
}

func (t scoped) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.rt.RoundTrip(req.WithContext(WithScope(req.Context(), t.s)))
}

// rules are what one request may reach besides public addresses.
type rules struct {
	loopback, private bool
}

func (r rules) index() int {
	i := 0
	if r.loopback {
		i |= 1
	}
	if r.private {
		i |= 2
	}
	return i
}

// Transport is an http.RoundTripper that enforces the policy. It is safe
// for concurrent use; call CloseIdleConnections when done with it.
//
// It keeps one connection pool per set of rules, never one for all: a
// connection dialled for a server allowed a private address must not be
// reused by a request for a server that is not, which a single
// http.Transport would do without dialling (and so without checking)
// again.
type Transport struct {
	opts  Options
	proxy *proxyConfig
	pools [4]*http.Transport
}

// New returns a Transport over the environment opts.Getenv reads. It
// fails only when SSL_CERT_FILE is set and cannot be used.
func New(opts *Options) (*Transport, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Allow = slices.Clone(o.Allow)
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	certFile, certDirs := o.Getenv("SSL_CERT_FILE"), o.Getenv("SSL_CERT_DIR")
	if err := checkCertFile(certFile); err != nil {
		return nil, err
	}
	var tlsConfig *tls.Config
	if certFile != "" || certDirs != "" {
		tlsConfig = lazyRootsConfig(certFile, certDirs)
	}
	t := &Transport{opts: o, proxy: readProxyConfig(o.Getenv)}
	for i := range t.pools {
		r := rules{loopback: i&1 != 0, private: i&2 != 0}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = func(req *http.Request) (*url.URL, error) { return t.proxy.proxyFor(req.URL) }
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return t.dial(ctx, r, network, addr)
		}
		tr.TLSHandshakeTimeout = 10 * time.Second
		// HTTP/2 where a server offers it (a custom dialer would turn it
		// off): calls at once share one connection.
		tr.ForceAttemptHTTP2 = true
		// Many sessions (a shared gateway's many people) call the same
		// few servers at once: with the default two idle connections per
		// host, concurrent calls would dial anew each time.
		tr.MaxIdleConnsPerHost = maxIdlePerHost
		if tlsConfig != nil {
			tr.TLSClientConfig = tlsConfig.Clone()
		}
		t.pools[i] = tr
	}
	return t, nil
}

// maxIdlePerHost is how many idle connections to one server are kept.
const maxIdlePerHost = 64

// dialTimeout bounds one dial, and the name's resolution before it.
const dialTimeout = 10 * time.Second

func (t *Transport) rules(ctx context.Context) rules {
	s, _ := ScopeFrom(ctx)
	if t.opts.Strict {
		return rules{}
	}
	return rules{loopback: s.Loopback, private: s.PrivateNetwork}
}

// RoundTrip checks what it can before the request leaves (the literal
// address or the name of a request sent through a proxy), then hands it
// to the pool of its rules, whose dialer checks every address it dials.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	r := t.rules(ctx)
	proxy, err := t.proxy.proxyFor(req.URL)
	if err != nil {
		return nil, err
	}
	if proxy != nil {
		// The proxy resolves the name, so only what the URL says by
		// itself can be checked here.
		host := req.URL.Hostname()
		if ip, err := netip.ParseAddr(host); err == nil {
			if err := t.check(ctx, r, host, ip); err != nil {
				return nil, err
			}
		} else if c, ok := nameClass(host); ok {
			if err := t.refuse(ctx, r, host, netip.Addr{}, c); err != nil {
				return nil, err
			}
		}
		req = req.WithContext(context.WithValue(ctx, proxyKey{}, proxyAddr(proxy)))
	}
	return t.pools[r.index()].RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of every pool.
func (t *Transport) CloseIdleConnections() {
	for _, p := range t.pools {
		p.CloseIdleConnections()
	}
}

// proxyKey marks a request sent through a proxy with the proxy's address:
// the one dial such a request makes is to the proxy, which the operator
// chose, and is not checked.
type proxyKey struct{}

// dial is the pools' DialContext: it resolves the name itself, checks
// every address, and dials the checked addresses, never the name again,
// so a DNS answer that changes between check and dial (rebinding) cannot
// smuggle another address in.
func (t *Transport) dial(ctx context.Context, r rules, network, addr string) (net.Conn, error) {
	if via, ok := ctx.Value(proxyKey{}).(string); ok && via == addr {
		return t.opts.Dial(ctx, network, addr)
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort(network, portText)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(dialTimeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ipNet := map[string]string{"tcp4": "ip4", "tcp6": "ip6"}[network]
	if ipNet == "" {
		ipNet = "ip"
	}
	ips, err := t.resolve(ctx, r, ipNet, host)
	if err != nil {
		return nil, err
	}
	// Then one after the other, each with its share of the time left (at
	// least 2 s), as net.Dialer does for a name with several addresses.
	var first error
	for i, ip := range ips {
		share := time.Until(deadline) / time.Duration(len(ips)-i)
		actx, acancel := context.WithTimeout(ctx, max(share, 2*time.Second))
		c, err := t.opts.Dial(actx, network, netip.AddrPortFrom(ip.Unmap(), uint16(port)).String())
		acancel()
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// resolve resolves host (a literal address stands for itself) and checks
// every address before any is dialled: a name that resolves to a public
// and a private address is refused, not dialled at whichever comes first.
func (t *Transport) resolve(ctx context.Context, r rules, ipNet, host string) ([]netip.Addr, error) {
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		if c, ok := nameClass(host); ok && c != loopback {
			return nil, t.refuse(ctx, r, host, netip.Addr{}, c)
		}
		if ips, err = t.opts.Resolver.LookupNetIP(ctx, ipNet, host); err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
	}
	for _, ip := range ips {
		if err := t.check(ctx, r, host, ip); err != nil {
			return nil, err
		}
	}
	return ips, nil
}

// check returns a *RefusedError when the rules do not allow ip.
func (t *Transport) check(ctx context.Context, r rules, host string, ip netip.Addr) error {
	return t.refuse(ctx, r, host, ip, classify(ip))
}

// refuse returns a *RefusedError when the rules do not allow an address
// of class c (ip, when valid, is the address), else nil.
func (t *Transport) refuse(ctx context.Context, r rules, host string, ip netip.Addr, c class) error {
	if c == public {
		return nil
	}
	if !c.never() {
		if ip.IsValid() {
			plain := ip.WithZone("").Unmap()
			for _, p := range t.opts.Allow {
				if p.Contains(plain) {
					return nil
				}
			}
		}
		if (c == loopback && r.loopback) || (c == private && r.private) {
			return nil
		}
	}
	s, _ := ScopeFrom(ctx)
	err := &RefusedError{Host: host, Addr: ip, Server: s.Server, class: c, strict: t.opts.Strict}
	if t.opts.OnRefused != nil {
		t.opts.OnRefused(ctx, err)
	}
	return err
}
