package config_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

// env is a Getenv over a map.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

const testDSN = "postgres://gateway:pg-password-123@db.internal:5432/mcpgate"

func parseDeployment(t *testing.T, doc string, vars map[string]string) (*config.Deployment, error) {
	t.Helper()
	if vars == nil {
		vars = map[string]string{"MCPGATE_DATABASE_URL": testDSN}
	}
	return config.ParseDeployment("deploy.json", []byte(doc), &config.DeployOptions{Getenv: env(vars)})
}

func mustDeployment(t *testing.T, doc string) *config.Deployment {
	t.Helper()
	d, err := parseDeployment(t, doc, nil)
	if err != nil {
		t.Fatalf("ParseDeployment: %v", err)
	}
	return d
}

// deployWith is a valid deployment with one tenant "acme" whose servers
// are the given JSON members.
func deployWith(servers string) string {
	return `{"publicURL": "https://mcp.example.com", "tenants": {"acme": {"mcpServers": {` + servers + `}}}}`
}

func TestDeploymentExample(t *testing.T) {
	d := mustDeployment(t, `{
	  // Where callers reach the gateway.
	  "publicURL": "https://mcp-gateway.example.com/",
	  "database": "${MCPGATE_DATABASE_URL}",
	  "auth": {"apiKeys": true, "oidc": {"issuer": "https://login.example.com", "audience": "mcpgate", "tenantClaim": "org", "userClaim": "email"}},
	  "network": {"allowPrivate": true},
	  "tenants": {
	    "acme": {
	      "name": "Acme Corp",
	      "mcpServers": {
	        "github": {"url": "https://api.githubcopilot.com/mcp/", "auth": "oauth"},
	        "linear": {"url": "https://mcp.linear.app/mcp", "signIn": "tenant", "disabledTools": ["delete_issue"]},
	      },
	      "limits": {"requestsPerMinute": 600, "concurrentCalls": 20}
	    },
	    "globex": {"tenantClaimValue": "org_8XkQ2", "mcpServers": {}}
	  }
	}`)
	if d.PublicURL != "https://mcp-gateway.example.com" {
		t.Errorf("PublicURL = %q, want it without the trailing slash", d.PublicURL)
	}
	if d.Database != testDSN {
		t.Errorf("Database was not expanded from the environment")
	}
	wantAuth := config.InboundAuth{APIKeys: true, OIDC: &config.OIDC{
		Issuer: "https://login.example.com", Audience: "mcpgate", TenantClaim: "org", UserClaim: "email"}}
	if !reflect.DeepEqual(d.Auth, wantAuth) {
		t.Errorf("Auth = %+v, want %+v", d.Auth, wantAuth)
	}
	if !d.Network.AllowPrivate {
		t.Error("network.allowPrivate was not read")
	}
	if got := d.TenantIDs(); !reflect.DeepEqual(got, []string{"acme", "globex"}) {
		t.Errorf("TenantIDs = %v", got)
	}
	acme, ok := d.Tenant("acme")
	if !ok {
		t.Fatal("no tenant acme")
	}
	if acme.DisplayName() != "Acme Corp" || acme.Limits != (config.Limits{RequestsPerMinute: 600, ConcurrentCalls: 20}) {
		t.Errorf("acme = %+v", acme)
	}
	want := []config.TenantServer{
		{ServerConfig: mcpgate.ServerConfig{ID: "github", URL: "https://api.githubcopilot.com/mcp/", Auth: mcpgate.AuthOAuth, Enabled: true}, SignIn: config.SignInUser},
		{ServerConfig: mcpgate.ServerConfig{ID: "linear", URL: "https://mcp.linear.app/mcp", Auth: mcpgate.AuthOAuth, Enabled: true,
			DisabledTools: []string{"delete_issue"}}, SignIn: config.SignInTenant},
	}
	if !reflect.DeepEqual(acme.Servers, want) {
		t.Errorf("acme servers =\n%+v\nwant\n%+v", acme.Servers, want)
	}
	if got := acme.ServerConfigs(); len(got) != 2 || got[1].ID != "linear" {
		t.Errorf("ServerConfigs = %+v", got)
	}
	// A copy: changing it does not change the deployment.
	acme.Servers[1].DisabledTools[0] = "changed"
	if again, _ := d.Tenant("acme"); again.Servers[1].DisabledTools[0] != "delete_issue" {
		t.Error("Tenant returned the deployment's own servers")
	}

	for claim, want := range map[string]string{"acme": "acme", "org_8XkQ2": "globex", "globex": "", "nobody": ""} {
		got, ok := d.TenantForClaim(claim)
		if got != want || ok != (want != "") {
			t.Errorf("TenantForClaim(%q) = %q, %v; want %q", claim, got, ok, want)
		}
	}
}

// The defaults: API keys on, the user claim "sub", the database from
// $MCPGATE_DATABASE_URL, nothing private reachable.
func TestDeploymentDefaults(t *testing.T) {
	d := mustDeployment(t, `{"publicURL": "http://127.0.0.1:8080", "tenants": {"acme": {}},
		"auth": {"oidc": {"issuer": "https://login.example.com/tenant/v2.0/", "audience": "api://mcpgate", "tenant": "acme"}}}`)
	if !d.Auth.APIKeys || d.Auth.OIDC.UserClaim != "sub" || d.Auth.OIDC.Tenant != "acme" {
		t.Errorf("Auth = %+v, OIDC %+v", d.Auth, d.Auth.OIDC)
	}
	if d.Auth.OIDC.Issuer != "https://login.example.com/tenant/v2.0/" {
		t.Errorf("issuer changed to %q: it must stay exactly as iss says it", d.Auth.OIDC.Issuer)
	}
	if d.Database != testDSN || d.Network.AllowPrivate {
		t.Errorf("database or network defaults wrong")
	}
	if d.PublicURL != "http://127.0.0.1:8080" {
		t.Errorf("PublicURL = %q", d.PublicURL)
	}
}

func TestDeploymentErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"syntax", "{\n  \"publicURL\" \"https://x.example\"\n}", []string{"deployment deploy.json", "2:15: malformed JSON"}},
		{"unknown setting", `{"publicURL": "https://x.example", "tenant": {}}`, []string{`"tenant" is not a setting`, "did you mean tenants"}},
		{"duplicate", `{"publicURL": "https://x.example", "tenants": {"a": {}}, "tenants": {"b": {}}}`, []string{`"tenants" is given twice`}},
		{"no public URL", `{"tenants": {"acme": {}}}`, []string{"publicURL: required"}},
		{"public URL not https", `{"publicURL": "http://mcp.example.com", "tenants": {"acme": {}}}`, []string{"publicURL", "must be https"}},
		{"public URL with a query", `{"publicURL": "https://mcp.example.com/?x=1", "tenants": {"acme": {}}}`, []string{"publicURL", "query"}},
		{"public URL with credentials", `{"publicURL": "https://u:p@mcp.example.com", "tenants": {"acme": {}}}`, []string{"publicURL: must not carry credentials"}},
		{"public URL relative", `{"publicURL": "/mcp", "tenants": {"acme": {}}}`, []string{"publicURL: must be an absolute URL"}},
		{"no tenants", `{"publicURL": "https://x.example"}`, []string{"tenants: required"}},
		{"empty tenants", `{"publicURL": "https://x.example", "tenants": {}}`, []string{"tenants: required"}},
		{"tenant ID", `{"publicURL": "https://x.example", "tenants": {"Acme Corp": {}}}`, []string{`tenants: "Acme Corp": a tenant ID must match`}},
		{"tenant setting", `{"publicURL": "https://x.example", "tenants": {"acme": {"mcpservers": {}}}}`, []string{`tenants.acme: "mcpservers" is not a setting`, "did you mean mcpServers"}},
		{"limits negative", `{"publicURL": "https://x.example", "tenants": {"acme": {"limits": {"concurrentCalls": -1}}}}`, []string{"tenants.acme.limits.concurrentCalls: must be between 0"}},
		{"limits fraction", `{"publicURL": "https://x.example", "tenants": {"acme": {"limits": {"requestsPerMinute": 1.5}}}}`, []string{"tenants.acme.limits.requestsPerMinute: must be a whole number"}},
		{"claim value taken", `{"publicURL": "https://x.example", "tenants": {"acme": {}, "globex": {"tenantClaimValue": "acme"}}}`, []string{`tenants.globex.tenantClaimValue: "acme" already means tenant "acme"`}},
		{"claim value empty", `{"publicURL": "https://x.example", "tenants": {"acme": {"tenantClaimValue": ""}}}`, []string{"tenants.acme.tenantClaimValue: must not be empty"}},
		{"nobody can sign in", `{"publicURL": "https://x.example", "auth": {"apiKeys": false}, "tenants": {"acme": {}}}`, []string{"auth: nobody could sign in"}},
		{"auth setting", `{"publicURL": "https://x.example", "auth": {"apikeys": true}, "tenants": {"acme": {}}}`, []string{`auth: "apikeys" is not a setting`, "did you mean apiKeys"}},
		{"apiKeys type", `{"publicURL": "https://x.example", "auth": {"apiKeys": "yes"}, "tenants": {"acme": {}}}`, []string{"auth.apiKeys: must be true or false"}},
		{"no issuer", `{"publicURL": "https://x.example", "auth": {"oidc": {"audience": "a", "tenant": "acme"}}, "tenants": {"acme": {}}}`, []string{"auth.oidc.issuer: required"}},
		{"issuer not https", `{"publicURL": "https://x.example", "auth": {"oidc": {"issuer": "http://login.example.com", "audience": "a", "tenant": "acme"}}, "tenants": {"acme": {}}}`, []string{"auth.oidc.issuer: must be an https URL"}},
		{"no audience", `{"publicURL": "https://x.example", "auth": {"oidc": {"issuer": "https://login.example.com", "tenant": "acme"}}, "tenants": {"acme": {}}}`, []string{"auth.oidc.audience: required"}},
		{"no tenant mapping", `{"publicURL": "https://x.example", "auth": {"oidc": {"issuer": "https://login.example.com", "audience": "a"}}, "tenants": {"acme": {}}}`, []string{"auth.oidc: set tenantClaim", "or tenant"}},
		{"both tenant mappings", `{"publicURL": "https://x.example", "auth": {"oidc": {"issuer": "https://login.example.com", "audience": "a", "tenant": "acme", "tenantClaim": "org"}}, "tenants": {"acme": {}}}`, []string{"tenantClaim and tenant: set one"}},
		{"unknown OIDC tenant", `{"publicURL": "https://x.example", "auth": {"oidc": {"issuer": "https://login.example.com", "audience": "a", "tenant": "globex"}}, "tenants": {"acme": {}}}`, []string{`auth.oidc.tenant "globex": no such tenant`}},
		{"network setting", `{"publicURL": "https://x.example", "network": {"allowPrivateRanges": true}, "tenants": {"acme": {}}}`, []string{`network: "allowPrivateRanges" is not a setting`}},
		{"network range", `{"publicURL": "https://x.example", "network": {"allow": ["10.0.0.0/33"]}, "tenants": {"acme": {}}}`, []string{`network.allow: "10.0.0.0/33" is not an address range`}},
		{"network ranges type", `{"publicURL": "https://x.example", "network": {"allow": "10.0.0.0/8"}, "tenants": {"acme": {}}}`, []string{"network.allow: must be a list of address ranges"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDeployment(t, tt.doc, nil)
			wantErr(t, err, mcpgate.CategoryInvalid, append([]string{"deployment deploy.json: "}, tt.want...)...)
		})
	}
}

// Server entries are read with today's rules, then those of a gateway
// many people share.
func TestDeploymentServerRules(t *testing.T) {
	tests := []struct {
		name    string
		servers string
		want    []string // empty: accepted
	}{
		{"today's validation", `"gh": {"url": "http://api.example.com/mcp"}`, []string{`tenant "acme": server "gh": url`, "http is only allowed for loopback"}},
		{"server ID", `"Git Hub": {"url": "https://api.example.com/mcp"}`, []string{`tenant "acme": server name "Git Hub": must match`}},
		{"stdio", `"files": {"command": "npx"}`, []string{`server "files": command: stdio servers are not supported`}},
		{"type http", `"gh": {"type": "http", "url": "https://api.example.com/mcp"}`, nil},
		{"unknown member", `"gh": {"url": "https://api.example.com/mcp", "disabledTool": ["x"]}`, []string{`server "gh": "disabledTool" is not a setting`, "did you mean disabledTools"}},
		{"env in a header", `"gh": {"url": "https://api.example.com/mcp", "auth": "none", "headers": {"X-Team": "${TEAM}"}}`, []string{`headers: "X-Team": ${…} references are refused`}},
		{"authorization header", `"gh": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer abc"}}`, []string{`headers: "Authorization" is named like a credential`}},
		{"api key header", `"gh": {"url": "https://api.example.com/mcp", "headers": {"X-Api-Key": "hello"}}`, []string{`"X-Api-Key" is named like a credential`}},
		{"credential scheme", `"gh": {"url": "https://api.example.com/mcp", "headers": {"X-Upstream": "Basic dXNlcjpwYXNz"}}`, []string{`"X-Upstream" holds a credential`}},
		{"random value", `"gh": {"url": "https://api.example.com/mcp", "headers": {"X-Client": "sk-live-4f9a8b7c6d5e4f3a2b1c"}}`, []string{`"X-Client" holds a value that looks like a credential`}},
		{"harmless headers", `"gh": {"url": "https://api.example.com/mcp", "headers": {"X-Region": "eu-west-1", "X-Source": "mcpgate gateway, production", "X-GitHub-Api-Version": "2022-11-28"}}`, nil},
		{"bearer from the environment", `"gh": {"url": "https://api.example.com/mcp", "auth": "bearer", "bearerTokenEnv": "GH_TOKEN"}`, []string{`server "gh": bearerTokenEnv`, `"signIn": "tenant"`}},
		{"bearer from the environment, shared", `"gh": {"url": "https://api.example.com/mcp", "auth": "bearer", "bearerTokenEnv": "GH_TOKEN", "signIn": "tenant"}`, nil},
		{"bearer per person", `"gh": {"url": "https://api.example.com/mcp", "auth": "bearer"}`, nil},
		{"machine grant", `"ci": {"url": "https://ci.example/mcp", "grant": "client_credentials", "clientId": "ci", "clientSecretEnv": "CI_SECRET", "issuer": "https://login.ci.example"}`, []string{"grant client_credentials (the gateway signs in as itself)", `"signIn": "tenant"`}},
		{"machine grant, shared", `"ci": {"url": "https://ci.example/mcp", "grant": "client_credentials", "clientId": "ci", "clientSecretEnv": "CI_SECRET", "issuer": "https://login.ci.example", "signIn": "tenant"}`, nil},
		{"sign-in kind", `"gh": {"url": "https://api.example.com/mcp", "signIn": "shared"}`, []string{`server "gh": signIn: must be "user"`}},
		{"sign-in without auth", `"gh": {"url": "https://api.example.com/mcp", "auth": "none", "signIn": "tenant"}`, []string{`signIn: a server with auth none has no sign-in`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseDeployment(t, deployWith(tt.servers), nil)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if acme, _ := d.Tenant("acme"); len(acme.Servers) != 1 {
					t.Fatalf("servers = %+v", acme.Servers)
				}
				return
			}
			wantErr(t, err, mcpgate.CategoryOf(err), tt.want...)
			if c := mcpgate.CategoryOf(err); c != mcpgate.CategoryInvalid && c != mcpgate.CategoryUnsupported {
				t.Errorf("category %s", c)
			}
		})
	}
}

// Errors never show what may be secret: a header's value, the database
// URL or the value of a variable.
func TestDeploymentErrorsHideSecrets(t *testing.T) {
	for _, doc := range []string{
		deployWith(`"gh": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer s3cr3t-t0ken-value"}}`),
		deployWith(`"gh": {"url": "https://api.example.com/mcp", "headers": {"X-Thing": "s3cr3t-t0ken-value-0123"}}`),
		`{"publicURL": "https://x.example", "database": "postgres://u:s3cr3t@db/x", "tenants": {"acme": {}}, "auth": {"apiKeys": false}}`,
		`{"publicURL": "https://x.example", "database": "${NOT_SET}", "tenants": {"acme": {}}}`,
	} {
		_, err := parseDeployment(t, doc, map[string]string{"OTHER": "s3cr3t"})
		if err == nil {
			t.Fatalf("accepted %s", doc)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error shows a secret: %v", err)
		}
	}
}

func TestDeploymentDatabase(t *testing.T) {
	const doc = `{"publicURL": "https://x.example", "tenants": {"acme": {}}, "database": %s}`
	tests := []struct {
		name, value string
		vars        map[string]string
		want        string // "" for an error
		wantErr     string
	}{
		{"literal", `"postgres://db/x"`, map[string]string{}, "postgres://db/x", ""},
		{"reference", `"${PG}?sslmode=require"`, map[string]string{"PG": "postgres://db/x"}, "postgres://db/x?sslmode=require", ""},
		{"unset reference", `"${PG}"`, map[string]string{}, "", "database: environment variable PG is not set"},
		{"from the environment", `null`, map[string]string{"MCPGATE_DATABASE_URL": "postgres://env/x"}, "postgres://env/x", ""},
		{"nowhere", `""`, map[string]string{}, "", "database: required"},
		{"not a string", `5432`, map[string]string{}, "", "database: must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseDeployment(t, strings.Replace(doc, "%s", tt.value, 1), tt.vars)
			if tt.wantErr != "" {
				wantErr(t, err, mcpgate.CategoryInvalid, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Database != tt.want {
				t.Errorf("Database = %q, want %q", d.Database, tt.want)
			}
		})
	}
}

func TestLoadDeployment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deploy.json")
	if _, err := config.LoadDeployment(path, nil); mcpgate.CategoryOf(err) != mcpgate.CategoryNotFound || !strings.Contains(err.Error(), path) {
		t.Fatalf("missing file: %v", err)
	}
	doc := "\xef\xbb\xbf" + `{"publicURL": "https://x.example", "database": "postgres://db/x", "tenants": {"acme": {}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := config.LoadDeployment(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != path || d.Database != "postgres://db/x" {
		t.Errorf("d = %+v", d)
	}
}

func TestDeploymentNetworkAllow(t *testing.T) {
	d := mustDeployment(t, `{"publicURL": "https://x.example", "network": {"allow": ["127.0.0.1/32", "10.20.3.4/16"]}, "tenants": {"acme": {}}}`)
	want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.20.0.0/16")}
	if !slices.Equal(d.Network.Allow, want) {
		t.Errorf("Allow = %v, want %v (masked)", d.Network.Allow, want)
	}
}
