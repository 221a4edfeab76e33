package hosted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/serve/hosted"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bothKinds runs f with replicas in this process, then with replicas that
// are mcpgate serve --http processes.
func bothKinds(t *testing.T, f func(t *testing.T, processes bool)) {
	t.Run("in-process", func(t *testing.T) { f(t, false) })
	t.Run("processes", func(t *testing.T) { f(t, true) })
}

// A sign-in started through replica A completes on B, a call through B
// uses it, and a logout on B is seen by A within a second.
func TestSignInOnOneReplicaServesAnother(t *testing.T) {
	t.Parallel()
	bothKinds(t, signInOnOneReplicaServesAnother)
}

func signInOnOneReplicaServesAnother(t *testing.T, processes bool) {
	c := newCluster(t, &clusterOptions{processes: processes})
	a, b := c.replicas[0], c.replicas[1]
	key := c.apiKey("acme", "alice")
	viaA, viaB := c.host(a.URL, key), c.host(b.URL, key)

	if got := stateOf(t, viaA, "notes"); got != "needs-auth" && got != "disconnected" {
		t.Fatalf("before signing in, notes is %q", got)
	}
	c.signIn(viaA, "notes", b.URL)
	if c.credential(hosted.Owner("acme", "alice"), "notes") == nil {
		t.Fatal("the sign-in completed on B stored no credential for alice")
	}
	out := mustGW(t, viaB, map[string]any{"action": "call", "server": "notes", "tool": "echo", "arguments": map[string]any{"text": "from B"}})
	if !strings.Contains(out, "from B") {
		t.Fatalf("call through B: %q", out)
	}
	// A uses it too.
	if out := mustGW(t, viaA, map[string]any{"action": "call", "server": "notes", "tool": "echo", "arguments": map[string]any{"text": "from A"}}); !strings.Contains(out, "from A") {
		t.Fatalf("call through A: %q", out)
	}

	mustGW(t, viaB, map[string]any{"action": "logout", "server": "notes"})
	loggedOut := time.Now()
	for stateOf(t, viaA, "notes") != "needs-auth" {
		if time.Since(loggedOut) > 10*time.Second {
			t.Fatal("A never saw the logout made on B")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A learns it from the store's change notice. How long that took is
	// logged, not judged: on a loaded machine one status call alone can
	// take a second.
	t.Logf("A saw the logout made on B after %v", time.Since(loggedOut))
	if _, err := gw(t, viaA, map[string]any{"action": "call", "server": "notes", "tool": "echo", "arguments": map[string]any{"text": "x"}}); err == nil {
		t.Error("a call through A worked after the logout")
	}
}

// Two replicas that find the same rotating token expired at once make one
// refresh between them, and both calls succeed with its result.
func TestTwoReplicasRefreshOnce(t *testing.T) { bothKinds(t, twoReplicasRefreshOnce) }

func twoReplicasRefreshOnce(t *testing.T, processes bool) {
	c := newCluster(t, &clusterOptions{processes: processes})
	a, b := c.replicas[0], c.replicas[1]
	key := c.apiKey("acme", "alice")
	viaA, viaB := c.host(a.URL, key), c.host(b.URL, key)
	c.signIn(viaA, "notes", b.URL)
	for _, cs := range []*mcp.ClientSession{viaA, viaB} {
		mustGW(t, cs, map[string]any{"action": "call", "server": "notes", "tool": "echo", "arguments": map[string]any{"text": "warm"}})
	}
	before := c.auth.TokenRequests(fake.GrantRefreshToken)

	c.auth.ExpireAccessTokens()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, cs := range []*mcp.ClientSession{viaA, viaB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := gw(t, cs, map[string]any{"action": "call", "server": "notes", "tool": "echo", "arguments": map[string]any{"text": "after"}})
			if err == nil && !strings.Contains(out, "after") {
				err = fmt.Errorf("answer %q", out)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call through replica %d after the expiry: %v", i, err)
		}
	}
	if n := c.auth.TokenRequests(fake.GrantRefreshToken) - before; n != 1 {
		t.Errorf("%d refresh grants for one expired token on two replicas, want 1", n)
	}
}

// A person's upstream credential, servers and request log are theirs:
// another person of the tenant, or anyone of another tenant, can neither
// read, use nor list them. A server the tenant shares serves everyone in
// it, and nobody outside.
func TestTenantsAndPeopleAreIsolated(t *testing.T) { bothKinds(t, tenantsAndPeopleAreIsolated) }

func tenantsAndPeopleAreIsolated(t *testing.T, processes bool) {
	c := newCluster(t, &clusterOptions{processes: processes})
	alice := c.host(c.rr.URL, c.apiKey("acme", "alice"))
	bob := c.host(c.rr.URL, c.apiKey("acme", "bob"))
	carol := c.host(c.rr.URL, c.apiKey("globex", "carol"))

	c.signIn(alice, "notes", c.rr.URL)
	c.signIn(alice, "team", c.rr.URL)
	mustGW(t, alice, map[string]any{"action": "call", "server": "notes", "tool": "echo", "arguments": map[string]any{"text": "alice-only"}})

	// Credentials are stored under their owner keys, nowhere else.
	if c.credential("acme:alice", "notes") == nil || c.credential("acme", "team") == nil {
		t.Fatal("the credentials are not under alice's and acme's owner keys")
	}
	for _, owner := range []string{"acme", "acme:bob", "globex", "globex:carol", "acme:alice:x", "acme:"} {
		if c.credential(owner, "notes") != nil {
			t.Errorf("owner %q holds a notes credential", owner)
		}
	}

	// Bob cannot use alice's notes; carol cannot use acme's.
	for name, cs := range map[string]*mcp.ClientSession{"bob": bob, "carol": carol} {
		if got := stateOf(t, cs, "notes"); got == "ready" {
			t.Errorf("%s's notes is ready on alice's sign-in", name)
		}
		if out, err := gw(t, cs, map[string]any{"action": "call", "server": "notes", "tool": "echo", "arguments": map[string]any{"text": "x"}}); err == nil {
			t.Errorf("%s called notes without signing in: %q", name, out)
		}
	}
	// The tenant's shared sign-in serves bob, and carol has no such server.
	if out := mustGW(t, bob, map[string]any{"action": "call", "server": "team", "tool": "echo", "arguments": map[string]any{"text": "shared"}}); !strings.Contains(out, "shared") {
		t.Errorf("bob's call of the shared server: %q", out)
	}
	out, err := gw(t, carol, map[string]any{"action": "call", "server": "team", "tool": "echo", "arguments": map[string]any{"text": "x"}})
	if err == nil {
		t.Errorf("carol called acme's team server: %q", out)
	}
	status := mustGW(t, carol, map[string]any{"action": "status"})
	for _, other := range []string{"team", "open"} {
		if strings.Contains(status, other+":") {
			t.Errorf("globex's status lists acme's %s: %q", other, status)
		}
	}
	if list := mustGW(t, carol, map[string]any{"action": "list"}); strings.Contains(list, "team") || strings.Contains(list, "open") {
		t.Errorf("globex's list shows acme's servers: %q", list)
	}

	// Each person's log is their own.
	logOf := func(credential string) []serve.LogEntryJSON {
		t.Helper()
		resp, err := bearer(credential).Get(c.rr.URL + "/api/log?last=100")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/api/log: %d", resp.StatusCode)
		}
		var body struct{ Entries []serve.LogEntryJSON }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return body.Entries
	}
	aliceKey2 := c.apiKey("acme", "alice")
	// The log is written in the background: wait for alice's call in it.
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, e := range logOf(aliceKey2) {
			found = found || e.Server == "notes" && e.Tool == "echo" && e.Outcome == "ok"
		}
	}
	if !found {
		t.Error("alice's log does not show her call of notes")
	}
	for name, key := range map[string]string{"bob": c.apiKey("acme", "bob"), "carol": c.apiKey("globex", "carol")} {
		for _, e := range logOf(key) {
			if e.Server == "notes" && e.Outcome == "ok" {
				t.Errorf("%s's log shows a call of notes that succeeded: %+v", name, e)
			}
		}
	}
}

// Every credential the gateway does not accept gets the same 401, and
// nothing else happens: no workspace, no request upstream.
func TestUnacceptedCredentialsGet401(t *testing.T) { bothKinds(t, unacceptedCredentialsGet401) }

func unacceptedCredentialsGet401(t *testing.T, processes bool) {
	c := newCluster(t, &clusterOptions{replicas: 1, processes: processes})
	r := c.replicas[0]
	revoked := c.apiKey("acme", "mallory")
	id, err := inbound.KeyID(revoked)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.st.Keys().RevokeAPIKey(t.Context(), "acme", id, time.Now()); err != nil {
		t.Fatal(err)
	}
	good := c.apiKey("acme", "alice")
	unstored, _, err := inbound.NewKey("acme", "alice", "never stored")
	if err != nil {
		t.Fatal(err)
	}
	claims := func(aud string, ttl time.Duration) map[string]any {
		m := c.idp.Claims("alice-sub", aud, ttl)
		m["org"], m["email"] = "acme", "alice@example.com"
		return m
	}
	otherIssuer := fake.StartOIDCIssuer(t)
	unknownTenant := claims(audience, time.Hour)
	unknownTenant["org"] = "initech"
	cases := map[string]string{
		"missing":           "",
		"not a credential":  "Bearer hello",
		"wrong key secret":  "Bearer " + good[:len(good)-4] + "AAAA",
		"unknown key":       "Bearer " + unstored,
		"revoked key":       "Bearer " + revoked,
		"basic scheme":      "Basic " + good,
		"expired JWT":       "Bearer " + c.idp.Token(claims(audience, -time.Minute)),
		"foreign audience":  "Bearer " + c.idp.Token(claims("another-service", time.Hour)),
		"another issuer":    "Bearer " + otherIssuer.Token(claims(audience, time.Hour)),
		"forged key ID":     "Bearer " + c.idp.Forge("made-up", claims(audience, time.Hour)),
		"unknown tenant":    "Bearer " + c.idp.Token(unknownTenant),
		"key in the query":  "",
		"two authorization": "Bearer " + good,
	}
	upstream := func() int { return c.notes.Connects() + c.team.Connects() + c.open.Connects() }
	before := upstream()
	for name, header := range cases {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/mcp", "/api/log"} {
				u := r.URL + path
				if name == "key in the query" {
					u += "?access_token=" + url.QueryEscape(good)
				}
				req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
				if path == "/api/log" {
					req, _ = http.NewRequest(http.MethodGet, u, nil)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if header != "" {
					req.Header.Set("Authorization", header)
				}
				if name == "two authorization" {
					req.Header.Add("Authorization", "Bearer "+revoked)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(errors.Unwrap(err)) // not the URL, which may hold a key
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s: %d %s, want 401", path, resp.StatusCode, got)
				}
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: WWW-Authenticate %q", path, resp.Header.Get("WWW-Authenticate"))
				}
				if strings.Contains(string(got), "tools") || strings.Contains(string(got), "acme") {
					t.Errorf("%s: the refusal says more than no: %q", path, got)
				}
			}
		})
	}
	if n := upstream() - before; n != 0 {
		t.Errorf("refused requests made %d connections upstream", n)
	}
	// Refusals are audited (coalesced per reason), never with the secret.
	for _, event := range []ops.AuditEvent{ops.EventKeyRefused, ops.EventCredentialRefused} {
		entries := c.auditedEventually(event, 1)
		if len(entries) == 0 {
			t.Errorf("no %s in the audit log", event)
		}
		for _, e := range entries {
			if b, _ := json.Marshal(e); strings.Contains(string(b), good[len(good)-20:]) || strings.Contains(string(b), revoked[len(revoked)-20:]) {
				t.Errorf("an audit entry holds a key's secret: %s", b)
			}
		}
	}
	// The good key works, and so does a good JWT.
	mustGW(t, c.host(r.URL, good), map[string]any{"action": "status"})
	mustGW(t, c.host(r.URL, c.idp.Token(claims(audience, time.Hour))), map[string]any{"action": "status"})
}

// Servers that resolve to cloud metadata, private or loopback addresses
// the operator did not allow are refused before any packet is sent, and
// the refusal is audited as the person's. Replicas in this process resolve
// names through the test's resolver (a name that resolves to loopback
// stands for DNS rebinding); processes, which use the real resolver, get
// the same destinations as addresses.
func TestOutboundPolicyRefusesWhereServersMayNotGo(t *testing.T) {
	t.Parallel()
	bothKinds(t, outboundPolicyRefusesWhereServersMayNotGo)
}

func outboundPolicyRefusesWhereServersMayNotGo(t *testing.T, processes bool) {
	hosts := map[string]string{"metadata": "metadata.test", "private": "internal.test", "rebinding": "rebinding.test"}
	if processes {
		hosts = map[string]string{"metadata": "169.254.169.254", "private": "10.1.2.3", "rebinding": "127.0.0.2"}
	}
	c := newCluster(t, &clusterOptions{replicas: 1, processes: processes, extra: fmt.Sprintf(`
		"metadata": {"url": "https://%s/mcp", "auth": "none"},
		"private": {"url": "https://%s/mcp", "auth": "none"},
		"rebinding": {"url": "https://%s/mcp", "auth": "none"},
		"literal": {"url": "https://[fd00::5]/mcp", "auth": "none"}`, hosts["metadata"], hosts["private"], hosts["rebinding"])})
	c.mu.Lock()
	c.names["metadata.test"] = []netip.Addr{netip.MustParseAddr("169.254.169.254")}
	c.names["internal.test"] = []netip.Addr{netip.MustParseAddr("10.1.2.3")}
	c.names["rebinding.test"] = []netip.Addr{netip.MustParseAddr("127.0.0.2")}
	c.mu.Unlock()
	alice := c.host(c.replicas[0].URL, c.apiKey("acme", "alice"))
	for _, server := range []string{"metadata", "private", "rebinding", "literal"} {
		out, err := gw(t, alice, map[string]any{"action": "call", "server": server, "tool": "echo", "arguments": map[string]any{"text": "x"}})
		if err == nil {
			t.Errorf("%s: the call went through: %q", server, out)
			continue
		}
		if !strings.Contains(out, "policy") && !strings.Contains(out, "not allowed") && !strings.Contains(out, "refused") {
			t.Errorf("%s: the error does not say the network policy refused it: %q", server, out)
		}
	}
	refused := c.auditedEventually(ops.EventPolicyRefused, 4)
	targets := map[string]bool{}
	for _, e := range refused {
		if e.Tenant != "acme" || e.User != "alice" {
			t.Errorf("a refusal is audited as %q/%q, not alice's", e.Tenant, e.User)
		}
		targets[e.Target] = true
	}
	for _, host := range hosts {
		if !targets[host] {
			t.Errorf("no audited refusal for %s (got %v)", host, targets)
		}
	}
	// The allowed loopback server still works.
	mustGW(t, alice, map[string]any{"action": "call", "server": "open", "tool": "echo", "arguments": map[string]any{"text": "ok"}})
}

// The sign-in page's own form, as a browser posts it (Origin null under
// the page's no-referrer policy, Sec-Fetch-Site same-origin), starts the
// sign-in; a post from another site, or with a foreign Origin, is refused
// and leaves the link usable.
func TestSignInStartsOnlyFromItsOwnPage(t *testing.T) {
	t.Parallel()
	c := newCluster(t, &clusterOptions{replicas: 1})
	alice := c.host(c.replicas[0].URL, c.apiKey("acme", "alice"))
	link := c.authenticate(alice, "notes")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(headers map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, link, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, h := range map[string]map[string]string{
		"another site":           {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"a foreign origin":       {"Origin": "https://evil.example"},
		"null without the fetch": {"Origin": "null"},
		"a sibling site":         {"Sec-Fetch-Site": "same-site", "Origin": "null"},
	} {
		if got := post(h); got != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, got)
		}
	}
	if got := post(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "null"}); got != http.StatusSeeOther {
		t.Errorf("the page's own form: %d, want 303 to the authorization server", got)
	}
	if got := post(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "null"}); got != http.StatusNotFound {
		t.Errorf("the link used twice: %d, want 404", got)
	}
}

// A question a remote server asks during a call reaches the host as a
// link to the gateway's question page; the person answers there, through
// the balancer (so on any replica), and the call that waited goes on with
// the answer.
func TestQuestionsAreAnsweredOnTheGatewaysPage(t *testing.T) {
	t.Parallel()
	c := newCluster(t, nil)
	links := make(chan string, 10)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if l := questionRE.FindString(req.Params.Message); l != "" {
				links <- l
			}
		},
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: c.rr.URL + "/mcp", HTTPClient: bearer(c.apiKey("acme", "alice")), DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	answered := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp", Meta: mcp.Meta{"progressToken": "q1"},
			Arguments: map[string]any{"action": "call", "server": "open", "tool": "ask"}})
		switch {
		case err != nil:
			answered <- "error: " + err.Error()
		case len(res.Content) == 0:
			answered <- "no content"
		default:
			answered <- res.Content[0].(*mcp.TextContent).Text
		}
	}()
	var link string
	select {
	case link = <-links:
	case out := <-answered:
		t.Fatalf("the call ended without a question link: %s", out)
	case <-time.After(20 * time.Second):
		t.Fatal("no question link reached the host")
	}
	if !strings.HasPrefix(link, c.rr.URL+"/questions/") {
		t.Fatalf("the link %q is not the gateway's page", link)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), fake.AskMessage) {
		t.Fatalf("the question page: %d %s", resp.StatusCode, page)
	}
	form := url.Values{"action": {"accept"}, "field.name": {"Grace"}, "field.lucky": {"9"}}
	req, _ := http.NewRequest(http.MethodPost, link, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "null")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answering: %d %s", resp.StatusCode, page)
	}
	select {
	case out := <-answered:
		if !strings.Contains(out, "accepted: name=Grace lucky=9") {
			t.Errorf("the call ended with %q", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not go on after the answer")
	}
}

var questionRE = regexp.MustCompile(`https?://[^\s"]+/questions/[A-Za-z0-9_-]+`)

// A person's workspace closes when idle, ending its upstream sessions, and
// opens again on their next request; at most MaxWorkspaces are kept, the
// least recently used idle one closed to make room.
func TestWorkspacesCloseWhenIdleAndMakeRoom(t *testing.T) {
	t.Parallel()
	call := func(cs *mcp.ClientSession) {
		t.Helper()
		mustGW(t, cs, map[string]any{"action": "call", "server": "open", "tool": "echo", "arguments": map[string]any{"text": "x"}})
	}
	// The cap and the idle close are apart: with both short, a loaded
	// machine let a workspace go idle between two calls meant to fill the
	// cap.
	t.Run("room", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, &clusterOptions{replicas: 1, idle: time.Minute, most: 2})
		g := c.replicas[0].g
		for i := range 3 {
			call(c.host(c.replicas[0].URL, c.apiKey("acme", fmt.Sprintf("person-%d", i))))
		}
		if n := hosted.OpenWorkspaces(g); n != 2 {
			t.Errorf("%d workspaces open after three people at a cap of two", n)
		}
	})
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, &clusterOptions{replicas: 1, idle: time.Second, most: 10})
		g := c.replicas[0].g
		hosts := make([]*mcp.ClientSession, 2)
		for i := range hosts {
			hosts[i] = c.host(c.replicas[0].URL, c.apiKey("acme", fmt.Sprintf("person-%d", i)))
			call(hosts[i])
		}
		deadline := time.Now().Add(10 * time.Second)
		for hosted.OpenWorkspaces(g) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d workspaces still open long after they went idle", hosted.OpenWorkspaces(g))
			}
			time.Sleep(20 * time.Millisecond)
		}
		call(hosts[0]) // opens again
		if n := hosted.OpenWorkspaces(g); n != 1 {
			t.Errorf("%d workspaces after one person came back", n)
		}
	})
}

// A person's catalogs are stored under their owner key by the replica
// that listed them: a workspace opened on another replica lists at once
// from them, even while the server is unreachable, and says the catalog
// is cached rather than pretending the server is ready.
func TestAPersonsCatalogsFollowThemAcrossReplicas(t *testing.T) {
	t.Parallel()
	c := newCluster(t, nil)
	a, b := c.replicas[0], c.replicas[1]
	key := c.apiKey("acme", "alice")
	if out := mustGW(t, c.host(a.URL, key), map[string]any{"action": "list", "server": "open"}); !strings.Contains(out, "open/echo") {
		t.Fatalf("list through A: %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.st.GetCatalog(t.Context(), hosted.Owner("acme", "alice"), "open"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A stored no catalog of open for alice")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.st.GetCatalog(t.Context(), hosted.Owner("acme", "bob"), "open"); err == nil {
		t.Error("alice's catalog is stored for bob too")
	}
	c.open.Stop()
	viaB := c.host(b.URL, key)
	if out := mustGW(t, viaB, map[string]any{"action": "list", "server": "open"}); !strings.Contains(out, "open/echo") {
		t.Errorf("list through B with the server down: %q", out)
	}
	// That list also started B's connect in the background (hosted
	// workspaces refresh cached catalogs); wait until it has failed, or a
	// slow one could find the server back below.
	var was string
	for deadline := time.Now().Add(10 * time.Second); ; {
		was = mustGW(t, viaB, map[string]any{"action": "status", "server": "open"})
		if strings.Contains(was, "open: ready") || !strings.Contains(was, "cached") {
			t.Fatalf("B's status of a server it never reached: %q", was)
		}
		if strings.Contains(was, "open: error") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's background connect to a stopped server did not fail: %q", was)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The server comes back with one tool more, and A lists it: B, still
	// answering from the stored catalog, takes the new one from the store
	// (its change notice), without connecting.
	if err := c.open.Restart(); err != nil {
		t.Fatal(err)
	}
	c.open.AddTool("announce", "Announces a text.")
	connects := c.open.Connects()
	viaA := c.host(a.URL, key)
	mustGW(t, viaA, map[string]any{"action": "reconnect", "server": "open"})
	if out := mustGW(t, viaA, map[string]any{"action": "list", "server": "open"}); !strings.Contains(out, "open/announce") {
		t.Fatalf("list through A after the server came back: %q", out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		got := mustGW(t, viaB, map[string]any{"action": "status", "server": "open"})
		if got != was {
			if !strings.Contains(got, "cached") || strings.Contains(got, "open: ready") {
				t.Fatalf("B's status changed, but not to the stored catalog: %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's status did not follow the catalog A stored: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out := mustGW(t, viaB, map[string]any{"action": "list", "server": "open"}); !strings.Contains(out, "open/announce") {
		t.Errorf("list through B after A stored the new catalog: %q", out)
	}
	if n := c.open.Connects() - connects; n != 1 {
		t.Errorf("%d connects to the server after it came back, want A's one", n)
	}
}
