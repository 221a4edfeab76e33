package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/store/postgres"
	"github.com/mcpgate/mcpgate/store/postgres/pgtest"
)

// keysHarness is a harness with a deployment file whose database comes
// from the environment, as an operator would write it.
func keysHarness(t *testing.T, dsn string) (*harness, string) {
	t.Helper()
	h := newHarness(t)
	path := filepath.Join(t.TempDir(), "deploy.json")
	doc := `{
	  // The database is given by the environment, never written here.
	  "publicURL": "https://mcp.example.com",
	  "database": "${KEYS_TEST_DATABASE}",
	  "tenants": {"acme": {}, "globex": {}}
	}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	h.env["KEYS_TEST_DATABASE"] = dsn
	return h, path
}

// keysGateway authenticates as serve --http does, against the same database.
func keysGateway(t *testing.T, path, dsn string) *inbound.Authenticator {
	t.Helper()
	d, err := config.LoadDeployment(path, &config.DeployOptions{Getenv: func(string) string { return dsn }})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := postgres.OpenKeys(t.Context(), d.Database, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	a, err := inbound.New(&inbound.Options{Deployment: d, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func callerIs(t *testing.T, a *inbound.Authenticator, key string) (inbound.Principal, error) {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "https://mcp.example.com/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	return a.Authenticate(r)
}

func TestKeys(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	h, path := keysHarness(t, dsn)
	gw := keysGateway(t, path, dsn)

	r := h.mustRun(0, "keys", "create", "--deploy", path, "--tenant", "acme", "--name", "ci")
	key := strings.TrimSpace(r.stdout)
	id, err := inbound.KeyID(key)
	if err != nil || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout is not the key alone:\n%s", r)
	}
	if !strings.Contains(r.stderr, "Created API key "+id+" (ci) for tenant acme") || !strings.Contains(r.stderr, "only time it is shown") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, key) {
		t.Error("the key is printed twice")
	}
	// The gateway accepts it at once.
	p, err := callerIs(t, gw, key)
	if err != nil || p != (inbound.Principal{Tenant: "acme", User: "key:" + id, Via: inbound.ViaKey, KeyID: id}) {
		t.Fatalf("the gateway: %+v, %v", p, err)
	}

	// $MCPGATE_DEPLOY finds the file; --json prints the key once, in JSON.
	h.env[config.EnvDeploy] = path
	r = h.mustRun(0, "keys", "create", "--tenant", "acme", "--name", "alice's laptop", "--user", "alice@acme.example", "--json")
	var created keyJSON
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil {
		t.Fatalf("create --json: %v\n%s", err, r)
	}
	if created.Tenant != "acme" || created.User != "alice@acme.example" || created.Name != "alice's laptop" || created.LastUsed != nil || created.Revoked != nil {
		t.Errorf("create --json: %+v", created)
	}
	if p, err := callerIs(t, gw, created.Key); err != nil || p.User != "alice@acme.example" {
		t.Errorf("alice's key: %+v, %v", p, err)
	}

	// Lists show every key of the tenant and never a key or a hash.
	r = h.mustRun(0, "keys", "list", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "LAST USED") ||
		!strings.HasPrefix(lines[1], id) || !strings.Contains(lines[1], "ci") || !strings.Contains(lines[2], "alice@acme.example") {
		t.Errorf("list:\n%s", r)
	}
	r = h.mustRun(0, "keys", "list", "--tenant", "acme", "--json")
	var list struct{ Keys []map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Keys) != 2 {
		t.Fatalf("list --json: %v\n%s", err, r)
	}
	if list.Keys[0]["lastUsed"] == nil {
		t.Errorf("the key the gateway accepted has no last use: %v", list.Keys[0])
	}
	for _, k := range list.Keys {
		for _, field := range []string{"hash", "key"} {
			if _, ok := k[field]; ok {
				t.Errorf("list --json shows %q: %v", field, k)
			}
		}
	}
	for _, secret := range []string{key[len(inbound.KeyPrefix)+17:], created.Key[len(inbound.KeyPrefix)+17:]} {
		if all := h.run("keys", "list", "--tenant", "acme", "--json").stdout + h.run("keys", "list", "--tenant", "acme").stdout; strings.Contains(all, secret) {
			t.Error("a list shows a key's secret")
		}
	}
	// Another tenant's keys are its own.
	r = h.mustRun(0, "keys", "list", "--tenant", "globex", "--json")
	if !strings.Contains(r.stdout, `"keys": []`) {
		t.Errorf("globex lists acme's keys:\n%s", r)
	}
	r = h.mustRun(1, "keys", "revoke", "--tenant", "globex", id)
	if !strings.Contains(r.stderr, "tenant globex has no API key "+id) {
		t.Errorf("revoke by another tenant:\n%s", r)
	}
	if _, err := callerIs(t, gw, key); err != nil {
		t.Fatalf("another tenant's revoke took effect: %v", err)
	}

	// Revoked: the gateway refuses it at once.
	r = h.mustRun(0, "keys", "revoke", "--tenant", "acme", id)
	if !strings.Contains(r.stdout, "Revoked API key "+id+" of tenant acme") {
		t.Errorf("revoke:\n%s", r)
	}
	if _, err := callerIs(t, gw, key); err != inbound.ErrUnauthenticated {
		t.Fatalf("a revoked key: %v", err)
	}
	r = h.mustRun(0, "keys", "revoke", "--tenant", "acme", key, "--json") // the whole key, as for a leak
	var revoked struct {
		Key            keyJSON
		AlreadyRevoked bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &revoked); err != nil || !revoked.AlreadyRevoked || revoked.Key.Revoked == nil || revoked.Key.ID != id {
		t.Errorf("revoke again --json: %v\n%s", err, r)
	}
	if strings.Contains(r.stdout+r.stderr, key) {
		t.Error("revoke printed the key back")
	}
	r = h.mustRun(0, "keys", "list", "--tenant", "acme")
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		revokedAt := strings.Fields(line)[len(strings.Fields(line))-1]
		if strings.HasPrefix(line, id) == (revokedAt == "-") {
			t.Errorf("the REVOKED column is wrong in %q:\n%s", line, r)
		}
	}
	if p, err := callerIs(t, gw, created.Key); err != nil || p.KeyID != created.ID {
		t.Errorf("revoking one key touched another: %+v, %v", p, err)
	}
}

// Mistakes are told before anything is opened, with the exit codes of
// every command: 2 for usage, 1 for what is not there.
func TestKeysUsage(t *testing.T) {
	t.Parallel()
	h, path := keysHarness(t, "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no tenant", []string{"keys", "list", "--deploy", path}, 2, "--tenant is required"},
		{"no deployment", []string{"keys", "list", "--tenant", "acme"}, 2, "pass --deploy FILE or set MCPGATE_DEPLOY"},
		{"missing deployment", []string{"keys", "list", "--tenant", "acme", "--deploy", path + ".nope"}, 1, "does not exist"},
		{"unknown tenant", []string{"keys", "list", "--deploy", path, "--tenant", "acmee"}, 1, `tenant "acmee" is not in the deployment` + " " + path + "; did you mean acme?"},
		{"bad label", []string{"keys", "create", "--deploy", path, "--tenant", "acme", "--name", "a\tb"}, 2, "name: must be printable text"},
		{"bad ID", []string{"keys", "revoke", "--deploy", path, "--tenant", "acme", "nope"}, 2, `ID "nope": not an API key ID`},
		{"unknown subcommand", []string{"keys", "rotate"}, 2, `unknown subcommand "rotate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			r := h.mustRun(tt.code, tt.args...)
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, r)
			}
		})
	}
}

// A database that does not answer fails the command, and its password is
// never shown.
func TestKeysDatabaseErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	h, path := keysHarness(t, "postgres://gateway:hunter2-secret@127.0.0.1:1/mcpgate?connect_timeout=1&sslmode=disable")
	start := time.Now()
	r := h.mustRun(1, "keys", "list", "--deploy", path, "--tenant", "acme")
	if strings.Contains(r.stdout+r.stderr, "hunter2") {
		t.Errorf("the password is shown:\n%s", r)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}
