package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// storeFiles returns the credential store's files as they are on disk.
func (h *harness) storeFiles() [][]byte {
	h.t.Helper()
	var files [][]byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(filepath.Join(h.dataDir, storeFileName+suffix)); err == nil {
			files = append(files, b)
		}
	}
	if len(files) == 0 {
		h.t.Fatal("no credential store in the data directory")
	}
	return files
}

// A bearer token piped to add is stored sealed, never in the config or any
// output, and used for calls.
func TestAddBearerTokenFromStdin(t *testing.T) {
	t.Parallel()
	tok := "tok-" + rand.Text()
	srv := fake.Start(t, &fake.Options{BearerToken: tok})
	h := newHarness(t)
	var outputs []string
	keep := func(r result) result { outputs = append(outputs, r.stdout, r.stderr); return r }

	r := keep(h.runIn(tok+"\n", "add", "api", srv.URL, "--auth", "bearer"))
	if r.code != 0 || !strings.Contains(r.stdout, "stored sealed") {
		t.Fatalf("add:\n%s", r)
	}
	cfg := h.configBytes()
	if bytes.Contains(cfg, []byte(tok)) || bytes.Contains(cfg, []byte("bearerTokenEnv")) || !bytes.Contains(cfg, []byte(`"auth": "bearer"`)) {
		t.Errorf("config:\n%s", cfg)
	}
	r = keep(h.mustRun(0, "call", "api", "echo", echoHello))
	if strings.TrimSpace(r.stdout) != "hello" {
		t.Errorf("call:\n%s", r)
	}
	keep(h.mustRun(0, "status", "--json"))
	keep(h.mustRun(0, "servers", "--json"))

	// A wrong token replaces it; the server's refusal is attributed.
	keep(h.runIn("wrong-"+tok+"\n", "add", "api", srv.URL, "--auth", "bearer", "--replace"))
	r = keep(h.mustRun(exitAuth, "call", "api", "echo", echoHello))
	if !strings.Contains(r.stderr, "rejected the stored bearer token") {
		t.Errorf("call with the wrong token:\n%s", r)
	}
	r = keep(h.mustRun(0, "logout", "api"))
	if !strings.Contains(r.stdout, "Removed the stored bearer token for api") {
		t.Errorf("logout:\n%s", r)
	}
	r = keep(h.mustRun(exitAuth, "call", "api", "echo", echoHello))
	if !strings.Contains(r.stderr, "no bearer token is stored for api") {
		t.Errorf("call after logout:\n%s", r)
	}

	for _, out := range outputs {
		if strings.Contains(out, tok) {
			t.Errorf("an output holds the token:\n%s", out)
		}
	}
	for _, b := range h.storeFiles() {
		if bytes.Contains(b, []byte(tok)) {
			t.Error("the credential store holds the token in plaintext")
		}
	}
}

// A token that is missing or not one line is refused before anything is
// written: the config, and the store, stay as they were.
func TestAddBearerRefusesBadTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "docs", "https://docs.example.com/mcp")
	before := h.configBytes()
	for name, stdin := range map[string]string{
		"empty":       "",
		"blank line":  "  \n",
		"two words":   "one two\n",
		"with NUL":    "a\x00b\n",
		"over 16 KiB": strings.Repeat("x", 17<<10) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := h.runIn(stdin, "add", "api", "https://api.example.com/mcp", "--auth", "bearer")
			if r.code != exitUsage || !strings.HasPrefix(r.stderr, "mcpgate: ") {
				t.Errorf("want exit 2 with a message:\n%s", r)
			}
			if strings.TrimSpace(stdin) != "" && strings.Contains(r.stderr, strings.TrimSpace(stdin)) {
				t.Errorf("the refused token was echoed:\n%s", r)
			}
			if !bytes.Equal(h.configBytes(), before) {
				t.Errorf("config changed:\n%s", h.configBytes())
			}
		})
	}
	// The store never saw a token: there is nothing to log out of.
	r := h.mustRun(exitFail, "logout", "api")
	if !strings.Contains(r.stderr, `no server named "api"`) {
		t.Errorf("logout:\n%s", r)
	}
}

// Commands that only read or edit the config never open the store, so
// they create no key and no data directory.
func TestConfigCommandsLeaveNoDataDir(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env["TOKEN"] = "t"
	for _, args := range [][]string{
		{"add", "docs", "https://docs.example.com/mcp"},
		{"add", "gh", "https://gh.example.com/mcp", "--auth", "oauth", "--scope", "repo"},
		{"add", "api", "https://api.example.com/mcp", "--bearer-token-env", "TOKEN"},
		{"servers"}, {"disable", "docs"}, {"tools", "disable", "gh", "x"}, {"remove", "docs"},
	} {
		h.mustRun(0, args...)
	}
	if _, err := os.Stat(h.dataDir); !os.IsNotExist(err) {
		t.Errorf("the data directory exists (err %v)", err)
	}
}

// status says where the key sealing credentials comes from, in both forms.
func TestStatusNamesTheKeySource(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	h := newHarness(t)
	h.mustRun(0, "add", "demo", srv.URL)

	keySource := func() string {
		r := h.mustRun(0, "status", "--json")
		var got struct {
			SecretKey *string         `json:"secretKey"`
			Servers   json.RawMessage `json:"servers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.SecretKey == nil || got.Servers == nil {
			t.Fatalf("status --json (%v):\n%s", err, r.stdout)
		}
		return *got.SecretKey
	}
	if got := keySource(); got != "file" {
		t.Errorf("secretKey %q, want file", got)
	}
	if _, err := os.Stat(filepath.Join(h.dataDir, "secret.key")); err != nil {
		t.Errorf("no key file: %v", err)
	}
	r := h.mustRun(0, "status")
	if !strings.Contains(r.stdout, "sealed with the key from the key file "+filepath.Join(h.dataDir, "secret.key")) {
		t.Errorf("status:\n%s", r.stdout)
	}

	key := make([]byte, 32)
	rand.Read(key)
	h.env["MCPGATE_SECRET_KEY"] = base64.StdEncoding.EncodeToString(key)
	h.dataDir = t.TempDir() // a key from the environment opens a new store
	if got := keySource(); got != "env" {
		t.Errorf("secretKey %q with MCPGATE_SECRET_KEY, want env", got)
	}
	r = h.mustRun(0, "status")
	if !strings.Contains(r.stdout, "$MCPGATE_SECRET_KEY") {
		t.Errorf("status:\n%s", r.stdout)
	}
	h.env["MCPGATE_SECRET_KEY"] = "not a key"
	r = h.mustRun(exitFail, "status")
	if !strings.Contains(r.stderr, "MCPGATE_SECRET_KEY") || strings.Contains(r.stderr, "not a key") {
		t.Errorf("status with a bad key:\n%s", r)
	}
}

// auth and logout refuse what they cannot do with a usage-like error, and
// an unknown name is not found.
func TestAuthRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env["TOKEN"] = "t"
	h.mustRun(0, "add", "docs", "https://docs.example.com/mcp")
	h.mustRun(0, "add", "api", "https://api.example.com/mcp", "--bearer-token-env", "TOKEN")
	h.mustRun(0, "add", "gh", "https://gh.example.com/mcp", "--auth", "oauth")

	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"auth", "docs"}, exitUsage, "nothing to sign in to"},
		{[]string{"auth", "api"}, exitUsage, "$TOKEN"},
		{[]string{"auth", "dosc"}, exitFail, "did you mean docs?"},
		{[]string{"auth", "Bad"}, exitUsage, "server name"},
		{[]string{"auth", "gh", "--timeout", "0s"}, exitUsage, "--timeout"},
		{[]string{"auth", "gh", "--callback-port", "70000"}, exitUsage, "--callback-port"},
		{[]string{"auth"}, exitUsage, "takes 1 argument"},
		{[]string{"logout", "nope"}, exitFail, `no server named "nope"`},
	}
	for _, tt := range tests {
		r := h.run(tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("mcpgate %s: want exit %d saying %q, got:\n%s", strings.Join(tt.args, " "), tt.code, tt.want, r)
		}
	}
	r := h.mustRun(0, "logout", "gh")
	if !strings.Contains(r.stdout, "gh was not signed in") {
		t.Errorf("logout gh:\n%s", r)
	}
}

// A server behind a real-looking authorization server whose sign-in
// cannot open a browser still shows the URL, says the browser failed, and
// offers the paste; input that is not the redirect ends the sign-in.
func TestAuthWithoutABrowser(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	h := newHarness(t)
	h.mustRun(0, "add", "secure", srv.URL, "--auth", "oauth")
	r := h.runIn("this is not the address\n", "auth", "secure")
	if r.code != exitUsage {
		t.Errorf("want exit 2:\n%s", r)
	}
	for _, want := range []string{"Open this URL to sign in to secure:", as.AuthorizationEndpoint + "?", "could not open a browser", "paste it here", "not the redirect URL"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if as.TokenRequests(fake.GrantAuthorizationCode) != 0 {
		t.Error("a code was exchanged")
	}
	h.mustRun(exitAuth, "call", "secure", "echo", echoHello)
}

// A machine client signs in with its own credentials, no browser, and
// calls refresh the token the same way.
func TestAuthClientCredentials(t *testing.T) {
	t.Parallel()
	secret := "secret-" + rand.Text()
	as := fake.StartAuth(t, &fake.AuthOptions{ClientCredentials: map[string]string{"ci": secret}})
	srv := fake.Start(t, &fake.Options{Auth: as})
	h := newHarness(t)
	h.env["CI_SECRET"] = secret
	r := h.mustRun(0, "add", "ci", srv.URL, "--grant", "client_credentials", "--client-id", "ci", "--client-secret-env", "CI_SECRET", "--issuer", as.Issuer)
	cfg := string(h.configBytes())
	for _, want := range []string{`"auth": "oauth"`, `"grant": "client_credentials"`, `"clientId": "ci"`, `"clientSecretEnv": "CI_SECRET"`, `"issuer": "` + as.Issuer + `"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
	outputs := []string{r.stdout, r.stderr, cfg}
	r = h.mustRun(0, "auth", "ci", "--json")
	outputs = append(outputs, r.stdout, r.stderr)
	var got loginResultJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Server != "ci" || got.Issuer != as.Issuer {
		t.Errorf("auth --json (%v):\n%s", err, r)
	}
	if strings.Contains(r.stderr, "Open this URL") {
		t.Errorf("a machine sign-in showed a URL:\n%s", r)
	}
	r = h.mustRun(0, "call", "ci", "echo", echoHello)
	outputs = append(outputs, r.stdout, r.stderr)
	if n := as.TokenRequests(fake.GrantClientCredentials); n != 1 {
		t.Errorf("%d client_credentials requests, want 1", n)
	}
	for _, out := range outputs {
		for _, s := range as.Secrets() {
			if strings.Contains(out, s) {
				t.Errorf("output holds the secret %s:\n%s", s, out)
			}
		}
	}
}

// A machine client pinned to its authorization server signs in nowhere
// else: when the server names another one, auth and call say so, and the
// secret goes nowhere.
func TestAuthPinnedIssuerMismatch(t *testing.T) {
	t.Parallel()
	secret := "secret-" + rand.Text()
	home := fake.StartAuth(t, &fake.AuthOptions{ClientCredentials: map[string]string{"ci": secret}})
	elsewhere := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: elsewhere})
	h := newHarness(t)
	h.env["CI_SECRET"] = secret
	r := h.mustRun(0, "add", "ci", srv.URL, "--grant", "client_credentials", "--client-id", "ci", "--client-secret-env", "CI_SECRET", "--issuer", home.Issuer)
	if !strings.Contains(r.stdout, "pinned to the authorization server "+home.Issuer) {
		t.Errorf("add should say where the client is pinned:\n%s", r)
	}
	for _, args := range [][]string{{"auth", "ci"}, {"call", "ci", "echo", echoHello}} {
		r := h.run(args...)
		if r.code == 0 || r.code == exitAuth || !strings.Contains(r.stderr, home.Issuer) || !strings.Contains(r.stderr, elsewhere.Issuer) || !strings.Contains(r.stderr, "--issuer") {
			t.Errorf("%s: want a failure (not exit 4) naming both issuers and --issuer:\n%s", strings.Join(args, " "), r)
		}
	}
	if n, m := home.TokenRequests(fake.GrantClientCredentials), elsewhere.TokenRequests(fake.GrantClientCredentials); n+m != 0 {
		t.Errorf("%d and %d client_credentials requests, want none", n, m)
	}
}

// The OAuth client flags imply --auth oauth and are checked together.
func TestAddOAuthFlags(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustRun(0, "add", "gh", "https://gh.example.com/mcp", "--client-id", "my-app", "--issuer", "https://github.com/login/oauth")
	if cfg := string(h.configBytes()); !strings.Contains(cfg, `"auth": "oauth"`) || !strings.Contains(cfg, `"clientId": "my-app"`) ||
		!strings.Contains(cfg, `"issuer": "https://github.com/login/oauth"`) {
		t.Errorf("config:\n%s", cfg)
	}
	before := h.configBytes()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--grant", "client_credentials"}, "needs --client-id"},
		{[]string{"--client-id", "x"}, "need --issuer URL"},
		{[]string{"--grant", "client_credentials", "--client-id", "x", "--client-secret-env", "S"}, "need --issuer URL"},
		{[]string{"--grant", "jwt_bearer", "--assertion-env", "JWT"}, "need --issuer URL"},
		{[]string{"--client-id", "x", "--issuer", "http://login.example.com"}, "issuer: must be https"},
		{[]string{"--auth", "bearer", "--issuer", "https://login.example.com"}, "only for --auth oauth"},
		{[]string{"--grant", "client_credentials", "--client-id", "x"}, "--client-secret-env"},
		{[]string{"--grant", "implicit"}, "must be authorization_code, client_credentials, jwt_bearer or enterprise"},
		{[]string{"--auth", "none", "--client-id", "x"}, "only for --auth oauth"},
		{[]string{"--private-key-file", "key.pem"}, "only for the grants without a person"},
		{[]string{"--grant", "jwt_bearer"}, "--assertion-file FILE or --assertion-env VAR"},
		{[]string{"--assertion-env", "JWT"}, "only for --grant jwt_bearer"},
		{[]string{"--grant", "enterprise", "--client-id", "x", "--id-token-env", "ID"}, "--idp-token-endpoint URL and --idp-client-id ID"},
		{[]string{"--grant", "enterprise", "--client-id", "x", "--id-token-env", "ID", "--idp-token-endpoint", "http://idp.example/token", "--idp-client-id", "i", "--issuer", "https://login.example.com"}, "idpTokenEndpoint"},
		{[]string{"--idp-client-id", "i"}, "only for --grant enterprise"},
		{[]string{"--auth", "none", "--dpop"}, "only for --auth oauth"},
		{[]string{"--grant", "client_credentials", "--client-id", "x", "--private-key-file", filepath.Join(t.TempDir(), "missing.pem"), "--issuer", "https://login.example.com"}, "missing.pem"},
		{[]string{"--client-metadata-url", "http://example.com/client.json"}, "clientMetadataUrl"},
		{[]string{"--private-key-alg", "ES256"}, "only for --private-key-file"},
	} {
		r := h.run(append([]string{"add", "x", "https://x.example.com/mcp"}, tt.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("add %s: want exit 2 saying %q, got:\n%s", strings.Join(tt.args, " "), tt.want, r)
		}
	}
	if !bytes.Equal(h.configBytes(), before) {
		t.Errorf("config changed:\n%s", h.configBytes())
	}

	key := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(key, []byte("not used until a sign-in"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, key)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.run("add", "ci", "https://ci.example.com/mcp", "--grant", "client_credentials", "--client-id", "ci", "--private-key-file", rel, "--private-key-alg", "HS256", "--issuer", "https://login.example.com"); r.code != exitUsage || !strings.Contains(r.stderr, "privateKeyAlg") {
		t.Errorf("a symmetric algorithm: want exit 2 naming privateKeyAlg, got:\n%s", r)
	}
	h.mustRun(0, "add", "ci", "https://ci.example.com/mcp", "--grant", "client_credentials", "--client-id", "ci", "--private-key-file", rel, "--private-key-alg", "PS256", "--issuer", "https://login.example.com")
	if cfg := string(h.configBytes()); !strings.Contains(cfg, `"privateKeyFile": "`+key+`"`) || !strings.Contains(cfg, `"privateKeyAlg": "PS256"`) {
		t.Errorf("the key path should be kept absolute, with the algorithm:\n%s", cfg)
	}
}

// A sign-in error names the server once: added when the message does not
// say which server, left alone when it does.
func TestSignInErrorNamesTheServerOnce(t *testing.T) {
	t.Parallel()
	tests := []struct{ id, msg, want string }{
		{"gh", "authorization discovery: no metadata", "signing in to gh: authorization discovery: no metadata"},
		{"gh", "signing in to gh: no answer from the browser in time", "signing in to gh: no answer from the browser in time"},
		{"gh", "not signed in to gh; sign in with: mcpgate auth gh", "not signed in to gh; sign in with: mcpgate auth gh"},
		{"gh", "the sign-in for gh expired", "the sign-in for gh expired"},
		{"gh", "signing in to gh2 failed", "signing in to gh: signing in to gh2 failed"},
	}
	for _, tt := range tests {
		if got := signInError(tt.id, errors.New(tt.msg)).Error(); got != tt.want {
			t.Errorf("signInError(%q, %q) = %q, want %q", tt.id, tt.msg, got, tt.want)
		}
	}
}

// Removing a server deletes its stored sign-in, so adding the name again
// later does not quietly reuse it.
func TestRemoveForgetsTheSignIn(t *testing.T) {
	t.Parallel()
	tok := "tok-" + rand.Text()
	srv := fake.Start(t, &fake.Options{BearerToken: tok})
	h := newHarness(t)
	if r := h.runIn(tok+"\n", "add", "api", srv.URL, "--auth", "bearer"); r.code != 0 {
		t.Fatalf("add:\n%s", r)
	}
	r := h.mustRun(0, "remove", "api")
	if !strings.Contains(r.stdout, "sign-in was deleted") {
		t.Errorf("remove:\n%s", r)
	}
	sealer, _, err := seal.Load(seal.LoadOptions{DataDir: h.dataDir, Getenv: func(k string) string { return h.env[k] }, NoKeyring: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(h.dataDir, "mcpgate.db"), sealer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.GetCredential(context.Background(), "", "api"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the credential outlived its server: %v", err)
	}
}

// A workload signs in with the JWT its platform keeps in a file, by itself
// at the first call; a JWT the server refuses ends in exit 1 naming the
// file, not in a request to sign in (which would not help).
func TestAddWorkloadIdentity(t *testing.T) {
	t.Parallel()
	platform := fake.NewJWTIssuer("https://platform.example")
	as := fake.StartAuth(t, nil)
	as.TrustWorkloads(platform)
	srv := fake.Start(t, &fake.Options{Auth: as})
	h := newHarness(t)
	file := filepath.Join(t.TempDir(), "token")
	h.mustRun(0, "add", "build", srv.URL, "--grant", "jwt_bearer", "--assertion-file", file, "--dpop=false", "--issuer", as.Issuer)
	if cfg := string(h.configBytes()); !strings.Contains(cfg, `"grant": "jwt_bearer"`) || !strings.Contains(cfg, `"assertionFile": "`+file+`"`) || strings.Contains(cfg, "dpop") {
		t.Errorf("config:\n%s", cfg)
	}
	r := h.mustRun(exitUsage, "call", "build", "echo", echoHello) // the platform has not written the token yet
	if !strings.Contains(r.stderr, file) {
		t.Errorf("call without the token file should name it:\n%s", r)
	}
	os.WriteFile(file, []byte(platform.Workload("build", as.Issuer, 10*time.Minute)), 0o600)
	h.mustRun(0, "call", "build", "echo", echoHello)
	os.WriteFile(file, []byte(platform.Workload("build", "https://elsewhere.example", 10*time.Minute)), 0o600)
	r = h.mustRun(exitFail, "auth", "build")
	if !strings.Contains(r.stderr, "invalid_grant") || !strings.Contains(r.stderr, file) {
		t.Errorf("auth with a refused token:\n%s", r)
	}
	for _, s := range as.Secrets() {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("output holds a secret:\n%s", r)
		}
	}
}

// --dpop is kept in the config and the sign-in says the token is bound.
func TestAddDPoP(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{DPoP: true, ClientCredentials: map[string]string{"ci": "ci-secret-12345"}})
	srv := fake.Start(t, &fake.Options{Auth: as})
	h := newHarness(t)
	h.env["CI_SECRET"] = "ci-secret-12345"
	h.mustRun(0, "add", "ci", srv.URL, "--grant", "client_credentials", "--client-id", "ci", "--client-secret-env", "CI_SECRET", "--dpop", "--issuer", as.Issuer)
	if cfg := string(h.configBytes()); !strings.Contains(cfg, `"dpop": true`) {
		t.Errorf("config:\n%s", cfg)
	}
	r := h.mustRun(0, "auth", "ci")
	if !strings.Contains(r.stdout, "DPoP") {
		t.Errorf("auth should say the token is bound:\n%s", r)
	}
	if proofs, _ := as.DPoPTokenRequests(); proofs != 1 {
		t.Errorf("%d token requests with a proof, want 1", proofs)
	}
}
