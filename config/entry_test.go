package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
)

// TestOAuthFieldsRoundTrip: the OAuth settings of the machine grants and
// DPoP are read from the file, written back under their names, and
// checked when loaded.
func TestOAuthFieldsRoundTrip(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {
		"wif": {"url": "https://w.example/mcp", "auth": "oauth", "grant": "jwt_bearer", "assertionFile": "/var/run/secrets/mcp/token", "clientId": "w", "issuer": "https://login.w.example", "dpop": true},
		"env": {"url": "https://e.example/mcp", "auth": "oauth", "grant": "jwt_bearer", "assertionEnv": "WORKLOAD_JWT", "issuer": "https://e.example"},
		"corp": {"url": "https://c.example/mcp", "auth": "oauth", "grant": "enterprise", "clientId": "mcp", "clientSecretEnv": "MCP_SECRET", "issuer": "https://login.c.example/tenant",
			"idTokenFile": "/run/user/id_token", "idpTokenEndpoint": "https://idp.example/oauth2/token", "idpClientId": "idp", "idpClientSecretEnv": "IDP_SECRET"},
		"ci": {"url": "https://ci.example/mcp", "auth": "oauth", "grant": "client_credentials", "clientId": "ci", "privateKeyFile": "/k.pem", "privateKeyAlg": "PS256", "issuer": "https://ci.example"}
	}}`)
	f := mustLoad(t, path)
	want := map[string]mcpgate.ServerConfig{
		"wif": {ID: "wif", URL: "https://w.example/mcp", Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantJWTBearer,
			AssertionFile: "/var/run/secrets/mcp/token", ClientID: "w", Issuer: "https://login.w.example", DPoP: true},
		"env": {ID: "env", URL: "https://e.example/mcp", Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantJWTBearer, AssertionEnv: "WORKLOAD_JWT", Issuer: "https://e.example"},
		"corp": {ID: "corp", URL: "https://c.example/mcp", Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantEnterprise,
			ClientID: "mcp", ClientSecretEnv: "MCP_SECRET", Issuer: "https://login.c.example/tenant", IDTokenFile: "/run/user/id_token", IDPTokenEndpoint: "https://idp.example/oauth2/token",
			IDPClientID: "idp", IDPClientSecretEnv: "IDP_SECRET"},
		"ci": {ID: "ci", URL: "https://ci.example/mcp", Auth: mcpgate.AuthOAuth, Enabled: true, Grant: mcpgate.GrantClientCredentials,
			ClientID: "ci", PrivateKeyFile: "/k.pem", PrivateKeyAlg: "PS256", Issuer: "https://ci.example"},
	}
	for id, w := range want {
		if got := mustServer(t, f, id); !reflect.DeepEqual(got, w) {
			t.Errorf("%s =\n%+v\nwant\n%+v", id, got, w)
		}
	}
	// Written back by a new entry under the same names.
	s := want["wif"]
	s.ID = "wif2"
	if err := f.Add(s, false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	if got := mustServer(t, mustLoad(t, path), "wif2"); !reflect.DeepEqual(got, s) {
		t.Errorf("reloaded %+v, want %+v", got, s)
	}
	saved := string(readFile(t, path))
	for _, member := range []string{`"assertionFile": "/var/run/secrets/mcp/token"`, `"dpop": true`, `"idpTokenEndpoint"`, `"privateKeyAlg": "PS256"`, `"issuer": "https://login.w.example"`} {
		if !strings.Contains(saved, member) {
			t.Errorf("saved file lacks %s:\n%s", member, saved)
		}
	}

	_, err := mustLoadErr(t, `{"mcpServers": {"x": {"url": "https://x.example/mcp", "grant": "jwt_bearer"}}}`)
	wantErr(t, err, mcpgate.CategoryInvalid, "assertionFile or assertionEnv")
	_, err = mustLoadErr(t, `{"mcpServers": {"x": {"url": "https://x.example/mcp", "dpop": "yes"}}}`)
	wantErr(t, err, mcpgate.CategoryInvalid, "dpop", "true or false")
	// A configured client is pinned to its authorization server.
	_, err = mustLoadErr(t, `{"mcpServers": {"x": {"url": "https://x.example/mcp", "grant": "client_credentials", "clientId": "x", "clientSecretEnv": "X_SECRET"}}}`)
	wantErr(t, err, mcpgate.CategoryInvalid, "issuer: required")
}

// TestAllowPrivateNetworkRoundTrip: the network policy's per-server
// setting is read, written back under its name, and left out when off.
func TestAllowPrivateNetworkRoundTrip(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {
		"intranet": {"url": "https://mcp.corp.example/mcp", "auth": "none", "allowPrivateNetwork": true},
		"public": {"url": "https://mcp.example.com/mcp", "auth": "none"}
	}}`)
	f := mustLoad(t, path)
	if !mustServer(t, f, "intranet").AllowPrivateNetwork || mustServer(t, f, "public").AllowPrivateNetwork {
		t.Fatalf("read %+v and %+v", mustServer(t, f, "intranet"), mustServer(t, f, "public"))
	}
	s := mustServer(t, f, "intranet")
	s.ID = "intranet2"
	if err := f.Add(s, false); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	if got := mustServer(t, mustLoad(t, path), "intranet2"); !got.AllowPrivateNetwork {
		t.Errorf("reloaded %+v", got)
	}
	if saved := string(readFile(t, path)); strings.Count(saved, `"allowPrivateNetwork": true`) != 2 || strings.Contains(saved, `"allowPrivateNetwork": false`) {
		t.Errorf("saved:\n%s", saved)
	}
	_, err := mustLoadErr(t, `{"mcpServers": {"x": {"url": "https://x.example/mcp", "allowPrivateNetwork": "yes"}}}`)
	wantErr(t, err, mcpgate.CategoryInvalid, "allowPrivateNetwork", "true or false")
}

func mustLoadErr(t *testing.T, content string) (*config.File, error) {
	t.Helper()
	return config.Load(writeConfig(t, content))
}
