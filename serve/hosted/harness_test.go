package hosted_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/serve/hosted"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/postgres"
	"github.com/mcpgate/mcpgate/store/postgres/pgtest"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cluster is a deployment served by replicas of the hosted gateway in
// this process, each with a store of its own on one PostgreSQL schema,
// behind a round-robin balancer: the shape of `serve --http` on several
// machines, with a resolver seam under the network policy.
//
// Tenant acme has servers notes (each person signs in), team (the
// tenant shares one sign-in) and open (no sign-in); tenant globex has its
// own notes, on the same remote server.
type cluster struct {
	t        testing.TB
	dsn      string
	key      []byte
	rr       *fake.RoundRobin
	auth     *fake.AuthServer
	notes    *fake.Server
	team     *fake.Server
	open     *fake.Server
	idp      *fake.OIDCIssuer
	deploy   *config.Deployment
	opts     clusterOptions
	names    map[string][]netip.Addr // the resolver seam
	doc      string                  // the deployment file
	st       *postgres.Store         // the test's own handle on the database
	replicas []*replica

	mu    sync.Mutex
	audit []ops.AuditEntry
}

// replica is one replica: in this process (g set) or an mcpgate serve
// --http process (proc set).
type replica struct {
	URL      string
	g        *hosted.Gateway
	proc     *exec.Cmd
	out      *testbin.Output // the process's stderr
	auditLog string          // the process's audit log, JSON lines
}

// audience is the JWT audience the deployment accepts.
const audience = "mcpgate-test"

type clusterOptions struct {
	replicas  int
	processes bool // replicas are mcpgate serve --http processes
	auth      *fake.AuthOptions
	idle      time.Duration // hosted.Options.IdleTimeout of in-process replicas
	most      int           // hosted.Options.MaxWorkspaces of in-process replicas
	extra     string        // further JSON members of tenant acme's mcpServers
}

func newCluster(t testing.TB, o *clusterOptions) *cluster {
	t.Helper()
	if o == nil {
		o = &clusterOptions{}
	}
	if o.replicas == 0 {
		o.replicas = 2
	}
	c := &cluster{t: t, dsn: pgtest.DSN(t), key: make([]byte, 32), names: map[string][]netip.Addr{}, opts: *o}
	for i := range c.key {
		c.key[i] = byte(i + 1)
	}
	c.rr = fake.StartRoundRobin(t)
	c.auth = fake.StartAuth(t, o.auth)
	c.notes = fake.Start(t, &fake.Options{Auth: c.auth})
	c.team = fake.Start(t, &fake.Options{Auth: c.auth})
	c.open = fake.Start(t, &fake.Options{Tally: true})
	c.idp = fake.StartOIDCIssuer(t)
	extra := ""
	if o.extra != "" {
		extra = ", " + o.extra
	}
	doc := fmt.Sprintf(`{
	  "publicURL": %q,
	  "database": %q,
	  "auth": {"apiKeys": true, "oidc": {"issuer": %q, "audience": %q, "tenantClaim": "org", "userClaim": "email"}},
	  "network": {"allow": ["127.0.0.1/32"]},
	  "tenants": {
	    "acme": {"mcpServers": {
	      "notes": {"url": %q, "auth": "oauth"},
	      "team": {"url": %q, "auth": "oauth", "signIn": "tenant"},
	      "open": {"url": %q, "auth": "none"}%s
	    }},
	    "globex": {"mcpServers": {"notes": {"url": %q, "auth": "oauth"}}}
	  }
	}`, c.rr.URL, c.dsn, c.idp.Issuer, audience, c.notes.URL, c.team.URL, c.open.URL, extra, c.notes.URL)
	d, err := config.ParseDeployment("deploy.json", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.deploy, c.doc = d, doc
	c.st = c.openStore()
	t.Cleanup(func() { c.st.Close() })
	for range o.replicas {
		if o.processes {
			c.addProcess()
		} else {
			c.addReplica()
		}
	}
	return c
}

// openStore opens a handle on the cluster's database.
func (c *cluster) openStore() *postgres.Store {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sealer, err := seal.New(c.key)
	if err != nil {
		c.t.Fatal(err)
	}
	st, err := postgres.Open(ctx, c.dsn, sealer, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// addReplica starts one more replica behind the balancer.
func (c *cluster) addReplica() *replica {
	t := c.t
	t.Helper()
	st := c.openStore()
	audit := ops.NewAudit(auditSink{c}, nil)
	network, err := netpolicy.New(&netpolicy.Options{
		Strict:   true,
		Allow:    c.deploy.Network.Allow,
		Resolver: resolver{c},
		OnRefused: func(ctx context.Context, e *netpolicy.RefusedError) {
			tenant, user := hosted.Who(ctx)
			audit.Record(ops.AuditEntry{Event: ops.EventPolicyRefused, Tenant: tenant, User: user, Server: e.Server, Reason: ops.ReasonNetwork, Target: e.Host})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := inbound.New(&inbound.Options{Deployment: c.deploy, Keys: st.Keys(), Audit: audit.Inbound})
	if err != nil {
		t.Fatal(err)
	}
	g, err := hosted.New(&hosted.Options{Deployment: c.deploy, Store: st, Auth: auth, Network: network, Audit: audit,
		Version: "test", QuestionTimeout: 10 * time.Second, IdleTimeout: c.opts.idle, MaxWorkspaces: c.opts.most})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(g.Handler())
	srv.Start()
	r := &replica{g: g, URL: srv.URL}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		g.Close()
		auth.Close()
		network.CloseIdleConnections()
		_ = audit.Close(context.Background())
		st.Close()
	})
	c.rr.Add(t, srv.URL)
	c.replicas = append(c.replicas, r)
	return r
}

// resolver is the network policy's resolver seam: names the test set
// resolve to what it says; IP literals are themselves; nothing else
// resolves (and nothing is ever asked of real DNS).
type resolver struct{ c *cluster }

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if ips, ok := r.c.names[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

type auditSink struct{ c *cluster }

func (s auditSink) WriteAudit(entries []ops.AuditEntry) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.audit = append(s.c.audit, entries...)
	return nil
}

// audited returns the audit entries recorded so far with the event.
// Entries of replicas in this process are collected as they are written;
// a process's are read from its audit log.
func (c *cluster) audited(event ops.AuditEvent) []ops.AuditEntry {
	c.mu.Lock()
	all := slices.Clone(c.audit)
	c.mu.Unlock()
	for _, r := range c.replicas {
		if r.auditLog == "" {
			continue
		}
		b, _ := os.ReadFile(r.auditLog) // none yet: nothing recorded
		for line := range bytes.Lines(b) {
			var e ops.AuditEntry
			if json.Unmarshal(line, &e) == nil {
				all = append(all, e)
			}
		}
	}
	var out []ops.AuditEntry
	for _, e := range all {
		if e.Event == event {
			out = append(out, e)
		}
	}
	return out
}

// apiKey makes an API key for user of tenant.
func (c *cluster) apiKey(tenant, user string) string {
	c.t.Helper()
	key, rec, err := inbound.NewKey(tenant, user, "test")
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.st.Keys().CreateAPIKey(c.t.Context(), rec); err != nil {
		c.t.Fatal(err)
	}
	return key
}

// bearer is an HTTP client that sends credential with every request.
func bearer(credential string) *http.Client {
	return &http.Client{Transport: &withAuth{credential: credential, next: http.DefaultTransport}}
}

type withAuth struct {
	credential string
	next       http.RoundTripper
}

func (a *withAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.credential)
	return a.next.RoundTrip(r)
}

// host is an agent host connected to base (a replica or the balancer)
// with credential.
func (c *cluster) host(base, credential string) *mcp.ClientSession {
	c.t.Helper()
	cs, err := connect(base, credential)
	if err != nil {
		c.t.Fatalf("connecting a host to %s: %v", base, err)
	}
	c.t.Cleanup(func() { cs.Close() })
	return cs
}

// connect connects an agent host to base with credential; the caller
// closes the session.
func connect(base, credential string) (*mcp.ClientSession, error) {
	return connectWith(base, bearer(credential))
}

// connectWith connects an agent host to base with its HTTP client.
func connectWith(base string, hc *http.Client) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
}

// gw calls the gateway tool and returns its text; isError results are
// returned as errors.
func gw(t testing.TB, cs *mcp.ClientSession, args map[string]any) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return b.String(), fmt.Errorf("tool error: %s", b.String())
	}
	return b.String(), nil
}

// mustGW is gw that fails the test on an error.
func mustGW(t testing.TB, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	out, err := gw(t, cs, args)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out
}

var linkRE = regexp.MustCompile(`https?://[^\s"]+/oauth/start/[A-Za-z0-9_-]+`)

// authenticate asks for a sign-in to server and returns the link.
func (c *cluster) authenticate(cs *mcp.ClientSession, server string) string {
	c.t.Helper()
	out := mustGW(c.t, cs, map[string]any{"action": "authenticate", "server": server})
	link := linkRE.FindString(out)
	if link == "" {
		c.t.Fatalf("authenticate gave no sign-in link: %q", out)
	}
	return link
}

// browse is a person's browser: it opens the sign-in link (through the
// balancer), confirms, lets the authorization server approve, and comes
// back to callbackBase (a replica's URL, or the balancer's).
func (c *cluster) browse(link, callbackBase string) (status int, page string) {
	c.t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) *http.Response {
		c.t.Helper()
		resp, err := noFollow.Get(u)
		if err != nil {
			c.t.Fatal(err)
		}
		return resp
	}
	resp := get(link)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<form method=\"post\">") {
		return resp.StatusCode, string(body)
	}
	req, _ := http.NewRequest(http.MethodPost, link, nil)
	req.Header.Set("Origin", c.rr.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := noFollow.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return resp.StatusCode, string(body)
	}
	resp = get(resp.Header.Get("Location")) // the authorization server approves at once
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || !strings.HasPrefix(back.String(), c.rr.URL+"/oauth/callback") {
		c.t.Fatalf("the authorization server answered %d, to %q", resp.StatusCode, back)
	}
	to, _ := url.Parse(callbackBase)
	back.Host = to.Host
	resp = get(back.String())
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

// signIn signs user's host cs in to server through the whole web flow,
// the callback arriving at callbackBase.
func (c *cluster) signIn(cs *mcp.ClientSession, server, callbackBase string) {
	c.t.Helper()
	status, page := c.browse(c.authenticate(cs, server), callbackBase)
	if status != http.StatusOK || !strings.Contains(page, "Signed in to "+server) {
		c.t.Fatalf("sign-in to %s: %d %s", server, status, page)
	}
}

// stateOf is the state status gives for server, through cs.
func stateOf(t *testing.T, cs *mcp.ClientSession, server string) string {
	t.Helper()
	out := mustGW(t, cs, map[string]any{"action": "status", "server": server})
	line, _, _ := strings.Cut(out, "\n")
	_, rest, ok := strings.Cut(line, ": ")
	if !ok {
		t.Fatalf("status: %q", out)
	}
	state, _, _ := strings.Cut(rest, ",")
	return state
}

// credential is the stored credential of owner for server, or nil.
func (c *cluster) credential(owner, server string) *store.Credential {
	c.t.Helper()
	cred, err := c.st.GetCredential(c.t.Context(), owner, server)
	if err != nil {
		return nil
	}
	return cred
}

// auditedEventually waits (the audit log writes in the background) until
// at least n entries with the event are recorded, or 10 s pass.
func (c *cluster) auditedEventually(event ops.AuditEvent, n int) []ops.AuditEntry {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.audited(event)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// addProcess starts one more replica as `mcpgate serve --http` on the
// deployment file, behind the balancer, and waits until it listens.
func (c *cluster) addProcess() *replica {
	t := c.t
	t.Helper()
	bin := testbin.Mcpgate(t)
	dir := t.TempDir()
	deploy := filepath.Join(dir, "deploy.json")
	if err := os.WriteFile(deploy, []byte(c.doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	auditLog := filepath.Join(dir, "audit.jsonl")
	cmd := exec.CommandContext(ctx, bin, "serve", "--http", "127.0.0.1:0", "--deploy", deploy, "--drain-timeout", "5s", "--audit-log", auditLog)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "MCPGATE_KEYRING=off",
		seal.EnvKey+"="+base64.StdEncoding.EncodeToString(c.key))
	cmd.WaitDelay = 5 * time.Second
	r := &replica{proc: cmd, out: &testbin.Output{}, auditLog: auditLog}
	cmd.Stderr = r.out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cancel()
			<-exited
		}
		cancel()
		if strings.Contains(r.out.String(), "DATA RACE") {
			t.Errorf("a replica had a data race:\n%s", r.out.String())
		}
	})
	addr := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := addr.FindStringSubmatch(r.out.String()); m != nil {
			r.URL = "http://" + m[1]
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the replica exited (%v):\n%s", err, r.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not listen within a minute:\n%s", r.out.String())
		}
	}
	c.rr.Add(t, r.URL)
	c.replicas = append(c.replicas, r)
	return r
}
