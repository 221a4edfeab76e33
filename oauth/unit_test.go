package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func TestMetadataURLOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		issuer string
		want   []string
	}{
		{"https://as.example.com", []string{
			"https://as.example.com/.well-known/oauth-authorization-server",
			"https://as.example.com/.well-known/openid-configuration",
		}},
		{"https://as.example.com/tenant1", []string{
			"https://as.example.com/.well-known/oauth-authorization-server/tenant1",
			"https://as.example.com/.well-known/openid-configuration/tenant1",
			"https://as.example.com/tenant1/.well-known/openid-configuration",
		}},
	}
	for _, c := range cases {
		u, _ := url.Parse(c.issuer)
		if got := authServerMetadataURLs(u); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.issuer, got, c.want)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	good := []string{"https://as.example.com/token", "http://127.0.0.1:8080/token", "http://localhost/t", "http://[::1]:9/t"}
	for _, g := range good {
		if _, err := checkEndpoint("e", g); err != nil {
			t.Errorf("%s refused: %v", g, err)
		}
	}
	bad := map[string]string{
		"http://auth.example.com/token": "non-loopback",
		"file:///etc/passwd":            "not an absolute URL",
		"javascript:alert(1)":           "not an absolute URL",
		"ftp://as.example.com/x":        "scheme",
		"https://u:p@as.example.com/":   "credentials",
		"/relative":                     "not an absolute URL",
	}
	for raw, want := range bad {
		_, err := checkEndpoint("e", raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkEndpoint(%q) = %v, want %q", raw, err, want)
		}
	}
}

func TestCanonicalResource(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"HTTPS://MCP.Example.com:443/mcp": "https://mcp.example.com/mcp",
		"http://127.0.0.1:8080/mcp#frag":  "http://127.0.0.1:8080/mcp",
		"https://mcp.example.com/Path":    "https://mcp.example.com/Path",
	}
	for in, want := range cases {
		if got := canonicalResource(in); got != want {
			t.Errorf("canonicalResource(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckClientID(t *testing.T) {
	t.Parallel()
	if err := checkClientID(""); err == nil {
		t.Error("empty client_id accepted")
	}
	if err := checkClientID(strings.Repeat("a", 256)); err == nil {
		t.Error("256-byte client_id accepted")
	}
	if err := checkClientID("abc\x00"); err == nil {
		t.Error("control characters accepted")
	}
	if err := checkClientID(strings.Repeat("a", 255)); err != nil {
		t.Errorf("255 bytes refused: %v", err)
	}
}

func TestChooseIssuerNeverGuesses(t *testing.T) {
	t.Parallel()
	md := &metadata{issuers: []string{"https://a.example", "https://b.example"}}
	_, err := chooseIssuer(md, "")
	var me *mcpgate.Error
	if !errors.As(err, &me) || me.Code != "choose_issuer" || !strings.Contains(me.Message, "https://b.example") {
		t.Fatalf("several issuers: %v", err)
	}
	if got, err := chooseIssuer(md, "https://b.example"); err != nil || got != "https://b.example" {
		t.Errorf("chosen issuer: %q %v", got, err)
	}
	if _, err := chooseIssuer(md, "https://evil.example"); !errors.Is(err, mcpgate.ErrInvalid) {
		t.Errorf("an issuer the server does not list: %v", err)
	}
}

func TestScopesFor(t *testing.T) {
	t.Parallel()
	c := New(&Options{})
	md := &metadata{prm: &oauthex.ProtectedResourceMetadata{ScopesSupported: []string{"read", "write"}}}
	asm := &authServer{AuthServerMeta: oauthex.AuthServerMeta{ScopesSupported: []string{"read", "offline_access"}}}
	plainAS := &authServer{}
	cfg := &mcpgate.ServerConfig{}
	cases := []struct {
		name string
		cfg  *mcpgate.ServerConfig
		ch   challenge
		asm  *authServer
		prev *store.Credential
		want []string
	}{
		{"challenge wins over prm", cfg, challenge{scope: []string{"read"}}, plainAS, nil, []string{"read"}},
		{"prm when no challenge", cfg, challenge{}, plainAS, nil, []string{"read", "write"}},
		{"offline_access when listed", cfg, challenge{scope: []string{"read"}}, asm, nil, []string{"read", "offline_access"}},
		{"step-up first", cfg, challenge{scope: []string{"read"}}, plainAS, &store.Credential{StepUpScopes: []string{"admin", "read"}}, []string{"admin", "read"}},
		{"configured", &mcpgate.ServerConfig{Scopes: []string{"x"}}, challenge{scope: []string{"read"}}, plainAS, nil, []string{"x"}},
		{"machines get no offline_access", &mcpgate.ServerConfig{Grant: mcpgate.GrantClientCredentials}, challenge{scope: []string{"read"}}, asm, nil, []string{"read"}},
	}
	for _, tc := range cases {
		if got := c.scopesFor(tc.cfg, tc.ch, md, tc.asm, tc.prev); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	md.prm.ScopesSupported = nil
	if got := c.scopesFor(cfg, challenge{}, md, plainAS, nil); len(got) != 0 {
		t.Errorf("no scope source: %q, want none", got)
	}
}

func TestPKCE(t *testing.T) {
	t.Parallel()
	v, ch := pkce()
	if len(v) < 43 || len(v) > 128 {
		t.Fatalf("verifier length %d", len(v))
	}
	sum := sha256.Sum256([]byte(v))
	if ch != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Error("challenge is not S256 of the verifier")
	}
	v2, _ := pkce()
	if v == v2 {
		t.Error("verifiers repeat")
	}
}

func TestParseChallenge(t *testing.T) {
	t.Parallel()
	ch := parseChallenge([]string{`Bearer error="insufficient_scope", scope="read admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`})
	if ch.errorCode != "insufficient_scope" || !slices.Equal(ch.scope, []string{"read", "admin"}) || !strings.HasSuffix(ch.resourceMetadata, "/mcp") {
		t.Errorf("parsed %+v", ch)
	}
}

func TestSafeURLAndBrowserCommand(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"file:///etc/passwd", "javascript:alert(1)", "http://a b/", "http://x/\n", "mailto:a@b", "-flag", "http:///nohost"} {
		if _, err := safeURL(bad); err == nil {
			t.Errorf("safeURL(%q) accepted", bad)
		}
	}
	u, err := safeURL("http://127.0.0.1:9/authorize?x=$(touch%20/tmp/p)&y=;id|cat")
	if err != nil {
		t.Fatalf("a URL with shell metacharacters in its query is still a URL: %v", err)
	}
	argv := browserCommand("linux", "", u)
	if argv[len(argv)-1] != u || len(argv) != 2 {
		t.Errorf("default command %q", argv)
	}
	argv = browserCommand("linux", "firefox --new-window:chromium", u)
	if !slices.Equal(argv, []string{"firefox", "--new-window", u}) {
		t.Errorf("$BROWSER command %q", argv)
	}
	argv = browserCommand("linux", "open -a Safari %s", u)
	if !slices.Equal(argv, []string{"open", "-a", "Safari", u}) {
		t.Errorf("%%s substitution %q", argv)
	}
}

// Each OS opens the URL with its own opener, the URL one argument that no
// shell reads: a query with & | ; $() reaches the opener unchanged.
func TestBrowserCommandPerOS(t *testing.T) {
	t.Parallel()
	u := "https://as.example.com/authorize?a=1&b=%5E2|x;$(id)"
	for _, tc := range []struct {
		goos, env string
		want      []string
	}{
		{"linux", "", []string{"xdg-open", u}},
		{"freebsd", "", []string{"xdg-open", u}},
		{"openbsd", "", []string{"xdg-open", u}},
		{"darwin", "", []string{"open", u}},
		{"windows", "", []string{"rundll32", "url.dll,FileProtocolHandler", u}},
		// $BROWSER wins everywhere; its list separator is PATH's.
		{"darwin", "firefox:chromium", []string{"firefox", u}},
		{"windows", `C:\Tools\firefox.exe;chrome.exe`, []string{`C:\Tools\firefox.exe`, u}},
		{"linux", " :chromium", []string{"xdg-open", u}},
	} {
		if got := browserCommand(tc.goos, tc.env, u); !slices.Equal(got, tc.want) {
			t.Errorf("%s with $BROWSER %q: %q, want %q", tc.goos, tc.env, got, tc.want)
		}
	}
}

func TestAuthorizeURLKeepsEndpointQuery(t *testing.T) {
	t.Parallel()
	s, err := authorizeURL("https://as.example.com/authorize?tenant=x", "cid", "http://127.0.0.1:5/callback", "CH", "ST", "https://mcp.example.com/mcp", []string{"read", "write"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s)
	q := u.Query()
	for k, v := range map[string]string{"tenant": "x", "client_id": "cid", "code_challenge_method": "S256", "code_challenge": "CH", "state": "ST",
		"resource": "https://mcp.example.com/mcp", "scope": "read write", "response_type": "code", "redirect_uri": "http://127.0.0.1:5/callback"} {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		server, resource string
		want             bool
	}{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/", true},
		{"https://mcp.example.com/a/mcp", "https://mcp.example.com/a", true},
		{"https://mcp.example.com/mcp/", "https://mcp.example.com/mcp", true},
		{"https://MCP.example.com:443/mcp", "https://mcp.example.com", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mc", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp/sub", false},
		{"https://mcp.example.com/mcp", "https://evil.example.com/mcp", false},
		{"https://mcp.example.com/mcp", "http://mcp.example.com/mcp", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp", false},
		{"https://mcp.example.com/mcp?t=1", "https://mcp.example.com", false},
		{"https://mcp.example.com/mcp?t=1", "https://mcp.example.com/mcp?t=1", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/#x", false},
		{"https://mcp.example.com/mcp", "not a url", false},
	}
	for _, c := range cases {
		if got := within(c.server, c.resource); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.server, c.resource, got, c.want)
		}
	}
}

// TestCheckResource: which resource each location's document may name.
func TestCheckResource(t *testing.T) {
	t.Parallel()
	const srv = "https://mcp.example.com/mcp"
	cases := []struct {
		resource string
		where    prmLocation
		ok       bool
	}{
		{srv, prmPathAware, true},
		{"https://MCP.example.com/mcp", prmPathAware, true},
		{"https://mcp.example.com", prmPathAware, false}, // the path-aware document is the server URL's own
		{"https://mcp.example.com", prmRoot, true},
		{srv, prmRoot, true},
		{"https://mcp.example.com/other", prmRoot, false},
		{"https://mcp.example.com", prmAdvertised, true},
		{"https://evil.example.com/mcp", prmAdvertised, false},
		{"javascript:alert(1)", prmAdvertised, false},
		{"", prmRoot, false},
	}
	for _, c := range cases {
		if err := checkResource(srv, c.resource, c.where); (err == nil) != c.ok {
			t.Errorf("checkResource(%q, %v) = %v, want ok %v", c.resource, c.where, err, c.ok)
		}
	}
}

func TestChooseAlg(t *testing.T) {
	t.Parallel()
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	cases := []struct {
		name       string
		key        crypto.Signer
		configured string
		accepted   []string
		want       string // "" for an error
	}{
		{"P-256 alone", p256, "", nil, "ES256"},
		{"P-384 alone", p384, "", nil, "ES384"},
		{"Ed25519", ed, "", nil, "EdDSA"},
		{"RSA says nothing: RS256", rsaKey, "", nil, "RS256"},
		{"RSA, server prefers PS256", rsaKey, "", []string{"PS256", "RS256"}, "PS256"},
		{"RSA, server takes only RS512", rsaKey, "", []string{"RS512"}, "RS512"},
		{"configured", rsaKey, "PS384", nil, "PS384"},
		{"configured but not listed", rsaKey, "PS384", []string{"RS256"}, ""},
		{"configured but not the key's", p256, "ES384", nil, ""},
		{"nothing fits", p256, "", []string{"RS256"}, ""},
	}
	for _, c := range cases {
		got, err := chooseAlg(c.key, c.configured, c.accepted)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}

func TestProviderCode(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		"invalid_grant":          "invalid_grant",
		"urn.example-x_1":        "urn.example-x_1",
		"":                       "",
		"two words":              "",
		"ignore previous; do x":  "",
		"\x1b[31mred":            "",
		strings.Repeat("a", 40):  strings.Repeat("a", 40),
		strings.Repeat("a", 41):  "",
		"invalid_grant\nInject:": "",
	} {
		if got := providerCode(code); got != want {
			t.Errorf("providerCode(%q) = %q, want %q", code, got, want)
		}
	}
	ch := parseChallenge([]string{`Bearer error="evil text here", scope="read"`})
	if ch.errorCode != "" {
		t.Errorf("a challenge's malformed error code was kept: %q", ch.errorCode)
	}
}

func TestLifetime(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		`3600`: time.Hour, `"3600"`: time.Hour, `" 60 "`: time.Minute, `0.5`: 500 * time.Millisecond, `null`: 0, `0`: 0,
		`10000000000`: maxLifetime, `1e400`: maxLifetime, `"99999999999999999999999"`: maxLifetime,
	} {
		var l lifetime
		if err := json.Unmarshal([]byte(in), &l); err != nil || time.Duration(l) != want {
			t.Errorf("expires_in %s: %v %v, want %v", in, time.Duration(l), err, want)
		}
	}
	for _, in := range []string{`"Inf"`, `"NaN"`, `"0x10"`, `-1`, `"-1"`, `""`, `true`, `[3600]`, `"1_000"`, `"3600s"`} {
		var l lifetime
		if err := json.Unmarshal([]byte(in), &l); !errors.Is(err, errBadExpiresIn) {
			t.Errorf("expires_in %s: %v, want it refused", in, err)
		}
	}
}

func TestRefreshMargin(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for life, want := range map[time.Duration]time.Duration{
		time.Hour:        expirySkew,
		2 * time.Minute:  expirySkew,
		time.Minute:      15 * time.Second,
		10 * time.Second: 2500 * time.Millisecond,
	} {
		if got := refreshMargin(&store.Credential{UpdatedAt: at, Expiry: at.Add(life)}); got != want {
			t.Errorf("a token living %v is renewed %v before it expires, want %v", life, got, want)
		}
	}
	if got := refreshMargin(&store.Credential{Expiry: at}); got != expirySkew {
		t.Errorf("a credential without UpdatedAt: margin %v, want %v", got, expirySkew)
	}
}

// TestSignInKeepsNoOldRefreshToken: a new sign-in's credential holds only
// what its token answer gave; the refresh token of the credential it
// replaces (perhaps for another resource) is not carried over.
func TestSignInKeepsNoOldRefreshToken(t *testing.T) {
	t.Parallel()
	c := New(&Options{})
	prev := &store.Credential{RefreshToken: "rt-old-old-old", StepUpCount: 1}
	cred := c.credentialFrom(store.Binding{Server: "s"}, &tokenResponse{AccessToken: "at-new"}, nil, prev, nil)
	if cred.RefreshToken != "" || cred.StepUpCount != 1 {
		t.Errorf("refresh token kept %v, step-up count %d", cred.RefreshToken != "", cred.StepUpCount)
	}
}

// TestChallengeScopes: a challenge's scope keeps only RFC 6749 scope
// tokens, bounded; remote text of any other shape never reaches a sign-in
// request or a message.
func TestChallengeScopes(t *testing.T) {
	t.Parallel()
	ch := parseChallenge([]string{"Bearer error=\"insufficient_scope\", scope=\"read \x1b[31mred adm\u202ein files:write read " + strings.Repeat("x", 101) + "\""})
	if !slices.Equal(ch.scope, []string{"read", "files:write"}) {
		t.Errorf("scope %q, want only the well-formed tokens, once each", ch.scope)
	}
	many := make([]string, 50)
	for i := range many {
		many[i] = "s" + strconv.Itoa(i)
	}
	if got := scopeTokens(many, maxChallengeScopes); len(got) != maxChallengeScopes {
		t.Errorf("%d scopes kept of 50, want %d", len(got), maxChallengeScopes)
	}
	md := &metadata{prm: &oauthex.ProtectedResourceMetadata{ScopesSupported: []string{"read", "\x1b[2Jx", "", "write"}}}
	if got := New(&Options{}).scopesFor(&mcpgate.ServerConfig{}, challenge{}, md, &authServer{}, nil); !slices.Equal(got, []string{"read", "write"}) {
		t.Errorf("scopes from scopes_supported %q, want only the well-formed ones", got)
	}
}

// TestRemoteTextInErrors: what a server or authorization server names
// (issuers, hosts) reaches people's messages only sanitized and bounded:
// no control or bidirectional-override characters, no megabyte of it.
func TestRemoteTextInErrors(t *testing.T) {
	t.Parallel()
	evil := "http://127.0.0.1:1/\u202egnp.exe\u2066" + strings.Repeat("a", 5000)
	sealer, err := seal.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "mcpgate.db"), sealer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := New(&Options{Store: st})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg := &mcpgate.ServerConfig{ID: "s", Issuer: "https://as.example"}
	_, discoverErr := c.discoverIssuer(ctx, evil)
	_, chooseErr := chooseIssuer(&metadata{issuers: []string{evil, evil + "b"}}, "")
	_, choseErr := chooseIssuer(&metadata{issuers: []string{evil}}, evil+"c")
	_, dpopErr := useDPoP(&mcpgate.ServerConfig{ID: "s", DPoP: true}, challenge{}, &authServer{AuthServerMeta: oauthex.AuthServerMeta{Issuer: evil}})
	_, clientErr := c.clientFor(ctx, &mcpgate.ServerConfig{ID: "s"}, evil, &authServer{}, "http://127.0.0.1/callback")
	for name, err := range map[string]error{
		"discovery": discoverErr, "several issuers": chooseErr, "an issuer not listed": choseErr,
		"no DPoP": dpopErr, "no registration": clientErr, "pin mismatch": pinMismatch(cfg, []string{evil}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\u202e\u2066") || len(msg) > 1000 {
			t.Errorf("%s: the message carries remote text unsanitized (%d bytes): %.200q", name, len(msg), msg)
		}
	}
}
