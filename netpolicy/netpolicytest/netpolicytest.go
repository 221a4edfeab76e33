// Package netpolicytest is a fake internet for tests of code that sends
// requests through a [netpolicy.Transport]: host names resolve to the
// addresses a test chooses, public, private or worse, and the hosts
// behind those addresses are served on loopback with TLS certificates
// from the network's own certificate authority. Nothing leaves the
// machine: a dial to an address no host serves fails the test, so a test
// proves an address was refused by seeing it never dialled.
//
//	n := netpolicytest.New(t)
//	n.Serve("203.0.113.7", []string{"mcp.example.test"}, handler)
//	n.Resolve("rebind.example.test", "127.0.0.1")
//	tr, _ := netpolicy.New(n.Options(nil)) // trusts the network's CA
package netpolicytest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/netpolicy"
)

// Network is the fake internet of one test. Its methods are safe for
// concurrent use.
type Network struct {
	t      testing.TB
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string

	mu      sync.Mutex
	names   map[string][]netip.Addr
	hosts   map[netip.AddrPort]string // fake address → loopback listener
	dialled []string
	lookups []string
	served  []Served
}

// Served is one request a host of the network answered: the protocol it
// came over and the client's end of its connection, which requests sharing
// one connection have in common.
type Served struct {
	Host, Proto, RemoteAddr string
}

// New returns an empty network whose CA certificate is written to a file
// in the test's temporary directory.
func New(t testing.TB) *Network {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "netpolicytest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Network{t: t, ca: ca, caKey: key, caFile: file,
		names: make(map[string][]netip.Addr), hosts: make(map[netip.AddrPort]string)}
}

// CAFile is the PEM file of the network's certificate authority, for
// SSL_CERT_FILE.
func (n *Network) CAFile() string { return n.caFile }

// Options are transport options over this network: its resolver, its
// dialer, and an environment of env plus SSL_CERT_FILE naming its CA
// (unless env sets SSL_CERT_FILE itself, to "" for none).
func (n *Network) Options(env map[string]string) *netpolicy.Options {
	return &netpolicy.Options{Resolver: n, Dial: n.Dial, Getenv: func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "SSL_CERT_FILE" {
			return n.caFile
		}
		return ""
	}}
}

// Resolve makes name resolve to addrs.
func (n *Network) Resolve(name string, addrs ...string) {
	n.t.Helper()
	var ips []netip.Addr
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			n.t.Fatal(err)
		}
		ips = append(ips, ip)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[strings.ToLower(name)] = ips
}

// Serve serves h over TLS at addr, port 443, under a certificate for
// names and addr, and makes each name resolve to addr. It offers HTTP/2 and
// HTTP/1.1, as most servers on the internet do; [Network.Served] lists what
// each request came over. The server runs on loopback and closes when the
// test ends.
func (n *Network) Serve(addr string, names []string, h http.Handler) *httptest.Server {
	n.t.Helper()
	ip := netip.MustParseAddr(addr)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		n.served = append(n.served, Served{Host: r.Host, Proto: r.Proto, RemoteAddr: r.RemoteAddr})
		n.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	// A client that does not trust the CA is what some tests are about.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{n.leaf(names, ip)}}
	srv.StartTLS()
	n.t.Cleanup(srv.Close)
	n.mu.Lock()
	n.hosts[netip.AddrPortFrom(ip, 443)] = srv.Listener.Addr().String()
	n.mu.Unlock()
	for _, name := range names {
		n.Resolve(name, addr)
	}
	return srv
}

// Forward is Serve with a handler that passes every request on to the
// server at target (http://127.0.0.1:port), Host header included, and
// event streams as they come: a loopback test server reached under a
// public or private name.
func (n *Network) Forward(addr string, names []string, target string) *httptest.Server {
	n.t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		n.t.Fatal(err)
	}
	return n.Serve(addr, names, &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.Host = u.Host
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	})
}

func (n *Network) leaf(names []string, ip netip.Addr) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		n.t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		IPAddresses:  []net.IP{ip.AsSlice()},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, n.ca, &key.PublicKey, n.caKey)
	if err != nil {
		n.t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// LookupNetIP implements netpolicy.Resolver over the names the test gave.
func (n *Network) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lookups = append(n.lookups, host)
	var out []netip.Addr
	for _, ip := range n.names[strings.ToLower(host)] {
		if network == "ip" || (network == "ip4") == ip.Unmap().Is4() {
			out = append(out, ip)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// Dial is the transport's dialer: an address a host serves is dialled at
// its loopback listener, a loopback address as it is; anything else fails
// the test, since it would have left the machine.
func (n *Network) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dialled = append(n.dialled, address)
	target, ok := n.lookupHost(address)
	n.mu.Unlock()
	if !ok {
		n.t.Errorf("netpolicytest: dial of %s, which no test host serves", address)
		return nil, fmt.Errorf("netpolicytest: nothing at %s", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, target)
}

// lookupHost finds where address is served; n.mu is held.
func (n *Network) lookupHost(address string) (string, bool) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return "", false
	}
	if l, ok := n.hosts[ap]; ok {
		return l, true
	}
	if ap.Addr().Unmap().IsLoopback() {
		return address, true
	}
	return "", false
}

// Dialled lists the addresses dialled so far, in order.
func (n *Network) Dialled() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.dialled)
}

// Served lists the requests the network's hosts answered so far, in order.
func (n *Network) Served() []Served {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.served)
}

// Lookups lists the names resolved so far, in order.
func (n *Network) Lookups() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.lookups)
}

// Proxy is an HTTP CONNECT proxy on loopback that reaches the network's
// hosts: it resolves the names it is asked for itself, as a real proxy
// does.
type Proxy struct {
	// URL is the proxy's address, for HTTPS_PROXY.
	URL string

	n       *Network
	srv     *httptest.Server
	mu      sync.Mutex
	targets []string
	conns   []net.Conn
	wg      sync.WaitGroup
}

// StartProxy starts a Proxy, closed when the test ends.
func (n *Network) StartProxy() *Proxy {
	p := &Proxy{n: n}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	n.t.Cleanup(p.close)
	return p
}

// Targets lists the host:port each CONNECT asked for, in order.
func (p *Proxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.targets)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	p.mu.Unlock()
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "bad target", http.StatusBadRequest)
		return
	}
	p.n.mu.Lock()
	var target string
	ok := false
	for _, ip := range p.n.names[strings.ToLower(host)] {
		if target, ok = p.n.lookupHost(net.JoinHostPort(ip.String(), port)); ok {
			break
		}
	}
	p.n.mu.Unlock()
	if !ok {
		http.Error(w, "no such host", http.StatusBadGateway)
		return
	}
	upstream, err := net.Dial("tcp", target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	down, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		down.Close()
		upstream.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, down, upstream)
	p.mu.Unlock()
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		io.Copy(upstream, buf)
		upstream.Close()
	}()
	go func() {
		defer p.wg.Done()
		io.Copy(down, upstream)
		down.Close()
	}()
}

func (p *Proxy) close() {
	p.srv.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
