package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"github.com/spf13/cobra"
)

const (
	// doctorServerTimeout bounds all the checks of one server.
	doctorServerTimeout = 20 * time.Second
	// doctorParallel is how many servers are checked at once.
	doctorParallel = 4
	// doctorProgressDelay is how long doctor waits quietly before it
	// shows progress on a terminal.
	doctorProgressDelay = time.Second
)

type doctorOptions struct {
	JSON bool
}

func newDoctorCmd(app *App) *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the config, the key, the store, the network and every server, and say how to fix what is wrong",
		Long: strings.TrimSpace(`
Check everything mcpgate depends on, one line per check:

  Config      the config file parses; every entry is valid
  Secret key  where the key sealing credentials comes from, and that it is readable
  Store       the credential store opens and its schema is current
  Network     the proxy and certificate authorities in effect, and the variables they come from
  Servers     each enabled server: DNS (through the network policy), TLS,
              whether it answers, the MCP version negotiated, its sign-in
  Hosts       each agent host whose config is on this machine: whether it
              runs this mcpgate, another one, or one that is gone

Each problem comes with the command (or the edit) that fixes it. Secrets
are never printed. Checking a server connects to it, as status does.

Exits 1 if any check fails; warnings do not fail.`),
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDoctor(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print JSON: {"ok":bool,"checks":[{"group","server","name","status":"ok|warn|fail","detail","fix"}]}`)
	return cmd
}

// checkStatus is the outcome of one check.
type checkStatus string

const (
	checkOK   checkStatus = "ok"
	checkWarn checkStatus = "warn" // worth knowing; does not fail doctor
	checkFail checkStatus = "fail"
)

// Groups of checks, in the order they are shown.
const (
	groupConfig  = "config"
	groupKey     = "secret-key"
	groupStore   = "store"
	groupNetwork = "network"
	groupServers = "servers"
	groupHosts   = "hosts"
)

var groupTitles = map[string]string{
	groupConfig: "Config", groupKey: "Secret key", groupStore: "Store",
	groupNetwork: "Network", groupServers: "Servers", groupHosts: "Hosts",
}

// finding is one check's outcome: one line of the report, one element of
// --json's checks. Detail and Fix never hold a secret.
type finding struct {
	Group  string      `json:"group"`
	Server string      `json:"server,omitempty"`
	Name   string      `json:"name"`
	Status checkStatus `json:"status"`
	Detail string      `json:"detail"`
	Fix    string      `json:"fix,omitempty"`
}

// doctor is one run of the checks.
type doctor struct {
	app      *App
	cfgPath  string
	findings []finding
}

func (d *doctor) add(f finding) { d.findings = append(d.findings, f) }

func runDoctor(ctx context.Context, app *App, opts *doctorOptions) error {
	d := &doctor{app: app}
	cfg := d.checkConfig()
	keyOK := d.checkKey()
	// The store is opened (and so created, with its key, if need be, as
	// any command that connects would) only when a server is checked.
	needStore := false
	if cfg != nil {
		for _, s := range cfg.Servers() {
			needStore = needStore || s.Enabled
		}
	}
	storeOK := d.checkStore(ctx, keyOK, needStore)
	tr := d.checkNetwork()
	if cfg != nil {
		d.checkServers(ctx, cfg, tr, storeOK)
	}
	d.checkHosts()
	if err := ctx.Err(); err != nil {
		return err
	}

	failed := 0
	for _, f := range d.findings {
		if f.Status == checkFail {
			failed++
		}
	}
	if opts.JSON {
		if err := writeJSON(app.IO.Out, map[string]any{"ok": failed == 0, "checks": d.findings}); err != nil {
			return err
		}
	} else {
		writeFindings(app.IO.Out, d.findings)
		switch failed {
		case 0:
			fmt.Fprintln(app.IO.Out, "No problems found.")
		case 1:
			fmt.Fprintln(app.IO.Out, "1 problem found.")
		default:
			fmt.Fprintf(app.IO.Out, "%d problems found.\n", failed)
		}
	}
	if failed > 0 {
		return &reportedError{Err: errors.New("doctor found problems")}
	}
	return nil
}

// checkConfig checks that the config file loads, reporting every invalid
// entry, and returns it; nil when it does not load.
func (d *doctor) checkConfig() *config.File {
	path, err := d.app.ConfigPath()
	if err != nil {
		d.add(finding{Group: groupConfig, Name: "file", Status: checkFail, Detail: sanitize(err.Error()),
			Fix: "name the config file with --config FILE or MCPGATE_CONFIG"})
		return nil
	}
	d.cfgPath = path
	problems, err := config.Check(path)
	if err != nil {
		d.add(finding{Group: groupConfig, Name: "file", Status: checkFail, Detail: sanitize(err.Error()),
			Fix: fmt.Sprintf("make %s readable by you (ls -l %s)", path, path)})
		return nil
	}
	for _, p := range problems {
		f := finding{Group: groupConfig, Name: "file", Status: checkFail, Detail: sanitize(p.Err.Error())}
		switch {
		case p.Server != "":
			f.Name, f.Server = "entry", p.Server
			f.Fix = fmt.Sprintf("edit (or delete) the entry %q in %s: no server is used until the file loads", p.Server, path)
		case p.Line > 0:
			f.Fix = fmt.Sprintf("edit %s at line %d, column %d", path, p.Line, p.Column)
		default:
			f.Fix = fmt.Sprintf(`edit %s: it must be a JSON object whose "mcpServers" maps server names to entries`, path)
		}
		d.add(f)
	}
	if len(problems) > 0 {
		return nil
	}
	cfg, err := d.app.Config()
	if err != nil { // only if the file changed since Check read it
		d.add(finding{Group: groupConfig, Name: "file", Status: checkFail, Detail: sanitize(err.Error()), Fix: "edit " + path})
		return nil
	}
	n := len(cfg.Servers())
	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		d.add(finding{Group: groupConfig, Name: "file", Status: checkWarn,
			Detail: path + " does not exist yet: no servers are configured", Fix: "mcpgate add NAME URL"})
	case n == 0:
		d.add(finding{Group: groupConfig, Name: "file", Status: checkWarn,
			Detail: path + " parses, and configures no server", Fix: "mcpgate add NAME URL"})
	default:
		d.add(finding{Group: groupConfig, Name: "file", Status: checkOK,
			Detail: fmt.Sprintf("%s parses: %d %s", path, n, plural(n, "server", "servers"))})
	}
	return cfg
}

// checkKey reports where the store's key comes from and whether it is
// readable, creating nothing; it returns false when the store cannot be
// opened for want of a usable key.
func (d *doctor) checkKey() bool {
	dir, err := d.app.DataDir()
	if err != nil {
		d.add(finding{Group: groupKey, Name: "source", Status: checkFail, Detail: sanitize(err.Error()),
			Fix: "name the data directory with --data-dir DIR or MCPGATE_DATA_DIR"})
		return false
	}
	keyFile := filepath.Join(dir, seal.KeyFileName)
	src, err := seal.Find(seal.LoadOptions{DataDir: dir, Getenv: d.app.Getenv})
	f := finding{Group: groupKey, Name: "source", Status: checkFail}
	if err != nil {
		f.Detail = sanitize(err.Error()) // seal's errors never hold a key
	}
	switch {
	case err == nil:
		f.Status, f.Detail = checkOK, "the key comes from "+keySourceName(src, dir)+", and is readable"
	case errors.Is(err, seal.ErrNoKey):
		f.Status, f.Detail = checkOK, "no key yet: the first command that stores a credential creates one in "+keySourceName(src, dir)
	case errors.Is(err, seal.ErrKeyFileMode):
		f.Fix = "chmod 600 " + keyFile
	case src == seal.SourceEnv:
		f.Fix = "unset " + seal.EnvKey + " (the keyring or the key file is then used), or set it to the base64 of 32 random bytes: openssl rand -base64 32"
	case src == seal.SourceFile:
		f.Fix = fmt.Sprintf("mv %s %s.broken (a new key is made; then sign in again with mcpgate auth NAME)", keyFile, keyFile)
	}
	d.add(f)
	return f.Status == checkOK
}

// keyCreated amends the key's finding once opening the store made the
// key that did not exist.
func (d *doctor) keyCreated() {
	for i, f := range d.findings {
		if f.Group == groupKey && f.Name == "source" && f.Status == checkOK && d.app.keySource != "" {
			dir, _ := d.app.DataDir()
			d.findings[i].Detail = "the key comes from " + keySourceName(d.app.keySource, dir) + ", created to open the new store"
		}
	}
}

// keySourceName says in words where a key comes from.
func keySourceName(src seal.Source, dataDir string) string {
	switch src {
	case seal.SourceEnv:
		return "$" + seal.EnvKey
	case seal.SourceKeyring:
		return "the OS keyring"
	case seal.SourceFile:
		return "the key file " + filepath.Join(dataDir, seal.KeyFileName)
	}
	return "nowhere yet"
}

// checkStore reports whether the credential store opens and what schema
// it has, and opens it when it can (as any command would, migrating an
// older schema). It returns whether the store is open.
func (d *doctor) checkStore(ctx context.Context, keyOK, needed bool) bool {
	path := d.app.storePath()
	f := finding{Group: groupStore, Name: "open", Status: checkFail}
	var version, current int
	_, statErr := os.Stat(path)
	exists := statErr == nil
	if exists {
		var err error
		version, current, err = sqlite.SchemaVersion(ctx, path)
		switch {
		case err != nil:
			f.Detail = fmt.Sprintf("%s cannot be read as a store: %s", path, storeReason(err))
			f.Fix = fmt.Sprintf("mv %s %s.broken (a new store is made; then sign in again with mcpgate auth NAME)", path, path)
			d.add(f)
			return false
		case version > current:
			f.Name = "schema"
			f.Detail = fmt.Sprintf("%s has schema version %d, newer than this mcpgate knows (%d): a newer mcpgate wrote it", path, version, current)
			f.Fix = "upgrade mcpgate to the version that wrote the store (go install ./cmd/mcpgate from its source)"
			d.add(f)
			return false
		}
	}
	if !keyOK {
		f.Status, f.Detail = checkWarn, fmt.Sprintf("%s not opened: its key is not readable (see Secret key)", path)
		d.add(f)
		return false
	}
	if !exists && !needed {
		f.Status, f.Detail = checkOK, fmt.Sprintf("%s does not exist yet: the first command that connects a server creates it", path)
		d.add(f)
		return false
	}
	if _, err := d.app.Store(); err != nil {
		f.Detail = sanitize(err.Error())
		f.Fix = fmt.Sprintf("check that the data directory %s is writable by you (ls -ld %s)", filepath.Dir(path), filepath.Dir(path))
		d.add(f)
		return false
	}
	f.Status = checkOK
	switch {
	case !exists:
		f.Detail = path + " created to check the servers (it did not exist yet)"
		d.keyCreated()
	case version < current:
		f.Detail = fmt.Sprintf("%s opens; its schema was migrated from version %d to %d", path, version, current)
	default:
		f.Detail = fmt.Sprintf("%s opens; schema version %d is current", path, version)
	}
	d.add(f)
	return true
}

// storeReason is a store error for a person: SQLite's own words are a
// library's, so only the kinds people can act on are named.
func storeReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case strings.Contains(err.Error(), "not a database"), strings.Contains(err.Error(), "malformed"):
		return "it is not an SQLite database, or is damaged"
	}
	return "it does not open"
}

// checkNetwork reports the proxy and certificate settings in effect and
// returns the network, nil when it cannot be set up.
func (d *doctor) checkNetwork() *netpolicy.Transport {
	tr, err := d.app.Network()
	if err != nil {
		d.add(finding{Group: groupNetwork, Name: "certificates", Status: checkFail, Detail: sanitize(err.Error()),
			Fix: "point SSL_CERT_FILE at a readable PEM file of your certificate authorities, or unset SSL_CERT_FILE"})
		return nil
	}
	s := tr.Settings()
	proxies := []struct {
		scheme string
		p      *netpolicy.ProxySetting
	}{{"https", s.HTTPSProxy}, {"http", s.HTTPProxy}}
	if s.HTTPSProxy == nil && s.HTTPProxy == nil {
		d.add(finding{Group: groupNetwork, Name: "proxy", Status: checkOK,
			Detail: "no proxy (HTTPS_PROXY and HTTP_PROXY are not set): requests go direct"})
	}
	for _, px := range proxies {
		switch p := px.p; {
		case p == nil:
		case p.Problem != "":
			what := "requests go direct"
			if p.URL != nil {
				what = px.scheme + " requests fail"
			}
			d.add(finding{Group: groupNetwork, Name: "proxy", Status: checkFail,
				Detail: fmt.Sprintf("%s is set but is not a usable proxy URL: %s; %s", p.Variable, p.Problem, what),
				Fix:    fmt.Sprintf("export %s=http://PROXY-HOST:PORT (or unset %s)", p.Variable, p.Variable)})
		default:
			d.add(finding{Group: groupNetwork, Name: "proxy", Status: checkOK,
				Detail: fmt.Sprintf("%s requests go through %s (from %s)", px.scheme, mcpgate.RedactURL(p.URL), p.Variable)})
		}
	}
	if s.NoProxy != "" {
		d.add(finding{Group: groupNetwork, Name: "no-proxy", Status: checkOK,
			Detail: fmt.Sprintf("not proxied: %s (from %s)", firstLine(s.NoProxy, 200), s.NoProxyVariable)})
	}
	ca := "the system's certificate authorities"
	if s.CertFile != "" {
		ca += ", and those in " + s.CertFile + " (from SSL_CERT_FILE)"
	}
	if s.CertDir != "" {
		ca += ", and those in " + s.CertDir + " (from SSL_CERT_DIR)"
	}
	d.add(finding{Group: groupNetwork, Name: "certificates", Status: checkOK, Detail: "trusted: " + ca})
	return tr
}

// checkServers checks every enabled server, doctorParallel at a time,
// each within doctorServerTimeout, showing progress on a terminal when
// that takes more than doctorProgressDelay.
func (d *doctor) checkServers(ctx context.Context, cfg *config.File, tr *netpolicy.Transport, storeOK bool) {
	var m *manager.Manager
	var mgrErr error
	if storeOK {
		m, mgrErr = d.app.Manager()
	} else {
		mgrErr = errors.New("the credential store is not open (see Store)")
	}
	servers := cfg.Servers()
	results := make([][]finding, len(servers))
	enabled := 0
	for _, s := range servers {
		if s.Enabled {
			enabled++
		}
	}
	var done atomic.Int32
	stop := startProgressAfter(doctorProgressDelay, d.app.IO.ErrOut, d.app.IO.ErrTTY, func() string {
		return fmt.Sprintf("Checking %d %s (%d done)…", enabled, plural(enabled, "server", "servers"), done.Load())
	})
	sem := make(chan struct{}, doctorParallel)
	var wg sync.WaitGroup
	for i, s := range servers {
		if !s.Enabled {
			results[i] = []finding{{Group: groupServers, Server: s.ID, Name: "enabled", Status: checkWarn,
				Detail: "disabled: not checked, and hidden from agents", Fix: "mcpgate enable " + s.ID}}
			continue
		}
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			sctx, cancel := context.WithTimeout(ctx, doctorServerTimeout)
			defer cancel()
			sc := &serverCheck{d: d, s: s, tr: tr, m: m, mgrErr: mgrErr}
			sc.run(sctx)
			results[i] = sc.findings
			done.Add(1)
		})
	}
	wg.Wait()
	stop()
	for _, r := range results {
		d.findings = append(d.findings, r...)
	}
}

// serverCheck is the checks of one server, in order: DNS, TLS, an HTTP
// answer, then a connect (protocol version, sign-in).
type serverCheck struct {
	d        *doctor
	s        mcpgate.ServerConfig
	tr       *netpolicy.Transport
	m        *manager.Manager
	mgrErr   error
	findings []finding
}

func (c *serverCheck) add(name string, status checkStatus, detail, fix string) {
	c.findings = append(c.findings, finding{Group: groupServers, Server: c.s.ID, Name: name, Status: status, Detail: detail, Fix: fix})
}

// fixURL is how a person changes a server's URL.
func (c *serverCheck) fixURL() string {
	return fmt.Sprintf("check %s's URL (to change it: mcpgate add %s URL --replace)", c.s.ID, c.s.ID)
}

func (c *serverCheck) run(ctx context.Context) {
	if c.tr == nil {
		c.add("dns", checkWarn, "not checked: the network is not set up (see Network)", "")
		return
	}
	u, err := url.Parse(c.s.URL)
	if err != nil { // the config validated it
		c.add("url", checkFail, "the URL does not parse", c.fixURL())
		return
	}
	ctx = netpolicy.WithScope(ctx, netpolicy.ScopeOf(c.s))
	if !c.resolve(ctx, u) || !c.answer(ctx, u) {
		return
	}
	c.connect(ctx)
}

// resolve checks the server's name the way its requests are dialled:
// through the network policy, which may refuse an address.
func (c *serverCheck) resolve(ctx context.Context, u *url.URL) bool {
	host := u.Hostname()
	proxy, err := c.tr.ProxyFor(u)
	if err != nil {
		c.add("dns", checkFail, sanitize(err.Error()), "unset HTTP_PROXY: it is not used under CGI")
		return false
	}
	if proxy != nil {
		c.add("dns", checkOK, fmt.Sprintf("%s is resolved by the proxy %s", host, proxy.Host), "")
		return true
	}
	addrs, err := c.tr.Resolve(ctx, host)
	var refused *netpolicy.RefusedError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &refused):
		c.refused(refused)
		return false
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		c.add("dns", checkFail, fmt.Sprintf("%s does not resolve: no such host", host),
			c.fixURL()+", or join the network (VPN) whose DNS knows the name")
		return false
	case err != nil:
		c.add("dns", checkFail, fmt.Sprintf("%s could not be resolved: %s", host, lookupReason(ctx, err)),
			"check this machine's DNS (and VPN); then run mcpgate doctor again")
		return false
	}
	var shown []string
	for _, a := range addrs {
		shown = append(shown, a.String())
	}
	if len(addrs) == 1 && shown[0] == strings.Trim(host, "[]") {
		c.add("dns", checkOK, host+" is an address, which the network policy allows", "")
		return true
	}
	c.add("dns", checkOK, fmt.Sprintf("%s → %s, which the network policy allows", host, strings.Join(shown, ", ")), "")
	return true
}

func lookupReason(ctx context.Context, err error) string {
	var ne net.Error
	if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return "the lookup timed out"
	}
	return "the lookup failed"
}

// refused reports a refusal of the network policy, with the setting that
// would allow it when one does.
func (c *serverCheck) refused(e *netpolicy.RefusedError) {
	fix := "use a URL whose host has a public address; this one is not allowed"
	if e.PrivateNetworkAllows() {
		fix = fmt.Sprintf(`if %s is meant to be on a private network, add "allowPrivateNetwork": true to its entry in %s`, c.s.ID, c.d.cfgPath)
	} else if e.Addr.IsLoopback() {
		fix = fmt.Sprintf("a server on this machine must be configured on loopback: mcpgate add %s http://127.0.0.1:PORT/PATH --replace", c.s.ID)
	}
	c.add("network-policy", checkFail, mcpgate.Sanitize(e.Error(), 400), fix)
}

// answer sends one plain GET to the server's URL, through the network
// policy and any proxy, and reports the TLS handshake (for https) and
// whether an HTTP answer came back. Nothing of the server's config
// (headers, tokens) is sent.
func (c *serverCheck) answer(ctx context.Context, u *url.URL) bool {
	client := &http.Client{
		Transport:     c.tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.s.URL, nil)
	if err != nil {
		c.add("http", checkFail, "the URL cannot be requested", c.fixURL())
		return false
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		c.failure(ctx, u, err)
		return false
	}
	resp.Body.Close()
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		cert := resp.TLS.PeerCertificates[0]
		c.add("tls", checkOK, fmt.Sprintf("handshake ok: %s, certificate for %s issued by %s, valid until %s",
			tls.VersionName(resp.TLS.Version), firstLine(certName(cert), 100), firstLine(cert.Issuer.CommonName, 100), cert.NotAfter.UTC().Format(time.DateOnly)), "")
	}
	c.add("http", checkOK, fmt.Sprintf("answers: HTTP %d %s to a plain GET", resp.StatusCode, http.StatusText(resp.StatusCode)), "")
	return true
}

func certName(cert *x509.Certificate) string {
	if len(cert.DNSNames) > 0 {
		return strings.Join(cert.DNSNames, ", ")
	}
	return cert.Subject.CommonName
}

// failure reports why the GET got no answer: the TLS handshake, the
// network policy (checked again before a proxied request), or the
// connection.
func (c *serverCheck) failure(ctx context.Context, u *url.URL, err error) {
	host := u.Host
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	var refused *netpolicy.RefusedError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &refused):
		c.refused(refused)
	case errors.As(err, &unknownCA):
		issuer := "an unnamed authority"
		if unknownCA.Cert != nil && unknownCA.Cert.Issuer.CommonName != "" {
			issuer = firstLine(unknownCA.Cert.Issuer.CommonName, 100)
		}
		c.add("tls", checkFail, fmt.Sprintf("the certificate of %s is signed by %s, which this machine does not trust", host, issuer),
			"export SSL_CERT_FILE=/path/to/ca.pem, the PEM file of the authority that signed it (your company's, behind a TLS-inspecting proxy)")
	case errors.As(err, &hostname):
		names := "other names"
		if hostname.Certificate != nil {
			names = firstLine(certName(hostname.Certificate), 200)
		}
		c.add("tls", checkFail, fmt.Sprintf("the certificate of %s is for %s, not for %s", host, names, u.Hostname()),
			fmt.Sprintf("use a host name the certificate names: mcpgate add %s URL --replace", c.s.ID))
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		c.add("tls", checkFail, fmt.Sprintf("the certificate of %s has expired or is not valid yet", host),
			"check this machine's clock (date); otherwise the server's operator must renew its certificate")
	case errors.As(err, &verify) || errors.As(err, &invalid):
		c.add("tls", checkFail, fmt.Sprintf("the certificate of %s is not valid for this connection", host),
			"the server's operator must fix its certificate; a company CA goes in SSL_CERT_FILE")
	case errors.As(err, &record):
		c.add("tls", checkFail, fmt.Sprintf("%s does not speak TLS", host), c.fixURL()+" (http or https, and the port)")
	case errors.Is(err, syscall.ECONNREFUSED):
		c.add("http", checkFail, fmt.Sprintf("%s refused the connection: nothing listens there", host),
			"start the server, or "+c.fixURL())
	case ctx.Err() != nil || isTimeout(err):
		c.add("http", checkFail, fmt.Sprintf("%s did not answer within %s", host, doctorServerTimeout),
			"check that the server is up and this machine can reach it (a firewall? a proxy: HTTPS_PROXY)")
	default:
		c.add("http", checkFail, fmt.Sprintf("%s could not be reached: the connection failed or dropped before an answer", host),
			"check that the server is up and this machine can reach it (a firewall? a proxy: HTTPS_PROXY)")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connect connects the server through the manager, as any command does,
// and reports the protocol version it negotiated and its sign-in.
func (c *serverCheck) connect(ctx context.Context) {
	if c.m == nil {
		c.add("protocol", checkWarn, "not checked: "+sanitize(c.mgrErr.Error()), "")
		return
	}
	_ = c.m.Connect(ctx, c.s.ID) // the outcome is in the status
	st, err := c.m.Status(c.s.ID)
	if err != nil {
		c.add("protocol", checkFail, sanitize(err.Error()), "")
		return
	}
	switch {
	case st.State == mcpgate.StateReady:
		c.add("protocol", checkOK, fmt.Sprintf("MCP %s: %s tools, %s prompts, %s resources",
			st.ProtocolVersion, count(st.Tools), count(st.Prompts), count(st.Resources)), "")
		c.auth(ctx, st)
	case st.State == mcpgate.StateNeedsAuth:
		c.add("auth", checkFail, describe(st), c.signInFix())
	case st.Error != nil && st.Error.Category == mcpgate.CategoryPolicy:
		c.add("network-policy", checkFail, describeError(st.Error),
			fmt.Sprintf(`if its sign-in is meant to reach a private network, add "allowPrivateNetwork": true to %s's entry in %s`, c.s.ID, c.d.cfgPath))
	default:
		// It answered the GET a moment ago, so a connect that fails now
		// (a closed stream, an HTML page, a 404) is most likely a URL that
		// is not an MCP endpoint.
		c.add("protocol", checkFail, "it answers HTTP, but not as an MCP server: "+describe(st),
			c.fixURL()+"; the MCP endpoint often ends in /mcp")
	}
}

func describe(st manager.Status) string {
	if st.Error == nil {
		return string(st.State)
	}
	return describeError(st.Error)
}

// signInFix is what gives a server that asks for authorization what it
// needs, by its auth kind. It never shows a token.
func (c *serverCheck) signInFix() string {
	switch {
	case c.s.Auth == mcpgate.AuthOAuth:
		return "mcpgate auth " + c.s.ID
	case c.s.Auth == mcpgate.AuthBearer && c.s.BearerTokenEnv != "":
		return fmt.Sprintf("export %s=<the server's token> before running mcpgate", c.s.BearerTokenEnv)
	case c.s.Auth == mcpgate.AuthBearer:
		return fmt.Sprintf("mcpgate add %s %s --auth bearer --replace (reads the token from stdin)", c.s.ID, mcpgate.ShowURL(c.s.URL))
	}
	return fmt.Sprintf("mcpgate add %s %s --auth oauth --replace, then mcpgate auth %s", c.s.ID, mcpgate.ShowURL(c.s.URL), c.s.ID)
}

// auth describes the credential of a ready server.
func (c *serverCheck) auth(ctx context.Context, st manager.Status) {
	if c.s.Auth == mcpgate.AuthNone {
		c.add("auth", checkOK, "none configured, none asked for", "")
		return
	}
	if c.s.Auth == mcpgate.AuthBearer && c.s.BearerTokenEnv != "" {
		c.add("auth", checkOK, "bearer token from $"+c.s.BearerTokenEnv+", accepted", "")
		return
	}
	client, err := c.d.app.OAuth()
	if err != nil {
		c.add("auth", checkWarn, "not checked: "+sanitize(err.Error()), "")
		return
	}
	info, err := client.Credential(ctx, c.s)
	switch {
	case errors.Is(err, store.ErrSealed):
		c.add("auth", checkFail, "the stored credential does not open with this key (did MCPGATE_SECRET_KEY or the key file change?)", c.signInFix())
		return
	case mcpgate.CategoryOf(err) == mcpgate.CategoryNotFound:
		c.add("auth", checkOK, "not signed in, and the server did not ask", "")
		return
	case err != nil:
		c.add("auth", checkWarn, "not checked: "+sanitize(err.Error()), "")
		return
	}
	if info.Kind == store.KindBearer {
		c.add("auth", checkOK, "stored bearer token, accepted", "")
		return
	}
	detail := "signed in"
	if info.Issuer != "" {
		detail += " at " + firstLine(info.Issuer, 200)
	}
	if !info.Expiry.IsZero() {
		detail += "; the access token expires " + info.Expiry.Local().Format(time.DateTime)
	}
	if info.Refreshable {
		detail += " and renews itself"
	} else {
		detail += "; it cannot renew itself: sign in again when it expires (mcpgate auth " + c.s.ID + ")"
	}
	c.add("auth", checkOK, detail, "")
}

// writeFindings prints the report: a title per group, a line per check,
// the fix under each problem; a server's checks under its name.
func writeFindings(w io.Writer, findings []finding) {
	group, server := "", ""
	for _, f := range findings {
		if f.Group != group {
			group, server = f.Group, ""
			fmt.Fprintln(w, groupTitles[group])
		}
		indent := "  "
		if f.Server != "" && f.Group == groupServers {
			if f.Server != server {
				server = f.Server
				fmt.Fprintf(w, "  %s\n", server)
			}
			indent = "    "
		}
		name := f.Name
		if f.Server != "" && f.Group != groupServers {
			name += " " + f.Server
		}
		fmt.Fprintf(w, "%s%-4s  %s: %s\n", indent, f.Status, name, f.Detail)
		if f.Fix != "" {
			fmt.Fprintf(w, "%s      fix: %s\n", indent, f.Fix)
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// startProgressAfter is startProgress drawn only once the wait has lasted
// delay, so quick checks never flash a spinner.
func startProgressAfter(delay time.Duration, w io.Writer, on bool, msg func() string) (stop func()) {
	if !on {
		return func() {}
	}
	var mu sync.Mutex
	stopped := false
	stopDrawing := func() {}
	t := time.AfterFunc(delay, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopDrawing = startProgress(w, on, msg)
		}
	})
	return func() {
		t.Stop()
		mu.Lock()
		stopped = true
		s := stopDrawing
		mu.Unlock()
		s()
	}
}
