package fake_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestWorkloadAssertions: a trusted platform's JWT for the server is a
// grant; one for another audience, expired, replayed or from an untrusted
// issuer is not.
func TestWorkloadAssertions(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a})
	platform := fake.NewJWTIssuer("https://platform.example")
	grant := func(assertion string) tokenResponse {
		return postForm(t, a.TokenEndpoint, url.Values{"grant_type": {fake.GrantJWTBearer}, "assertion": {assertion}, "resource": {srv.URL}}, "", "")
	}
	good := platform.Workload("job", a.Issuer, time.Minute)
	grant(good).wantError(t, "unsupported_grant_type") // nothing trusted yet
	a.TrustWorkloads(platform)
	var m map[string]any
	if getJSON(t, a.MetadataURL, &m); !strings.Contains(strings.Join(anyStrings(m["grant_types_supported"]), " "), fake.GrantJWTBearer) {
		t.Errorf("grant_types_supported %v", m["grant_types_supported"])
	}
	tr := grant(good)
	if tr.Status != http.StatusOK || tr.RefreshToken != "" {
		t.Fatalf("a good assertion: %+v", tr)
	}
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + tr.AccessToken}}); resp.StatusCode != http.StatusOK {
		t.Errorf("the workload's token: %d", resp.StatusCode)
	}
	grant(good).wantError(t, "invalid_grant") // replayed
	grant(platform.Workload("job", "https://elsewhere.example", time.Minute)).wantError(t, "invalid_grant")
	grant(platform.Workload("job", a.Issuer, -time.Minute)).wantError(t, "invalid_grant")
	grant(fake.NewJWTIssuer("https://platform.example").Workload("job", a.Issuer, time.Minute)).wantError(t, "invalid_grant") // same name, other key
	grant(fake.NewJWTIssuer("https://other.example").Workload("job", a.Issuer, time.Minute)).wantError(t, "invalid_grant")
	if n := a.TokenRequests(fake.GrantJWTBearer); n != 7 {
		t.Errorf("TokenRequests(jwt-bearer) = %d", n)
	}
}

func anyStrings(v any) []string {
	var out []string
	if vs, ok := v.([]any); ok {
		for _, s := range vs {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
	}
	return out
}

// TestIdPExchange: the identity provider exchanges its ID token for an
// ID-JAG the federated authorization server takes from the client it
// names, authenticated; nothing else.
func TestIdPExchange(t *testing.T) {
	t.Parallel()
	a := fake.StartAuth(t, nil)
	a.AddClient(fake.AuthClient{ID: "mcp", Secret: "mcp-secret"})
	a.AddClient(fake.AuthClient{ID: "other", Secret: "other-secret"})
	idp := fake.StartIdP(t)
	idp.Federate(a, "mcp")
	srv := fake.Start(t, &fake.Options{Auth: a})
	exchange := func(edit func(url.Values)) tokenResponse {
		f := url.Values{"grant_type": {fake.GrantTokenExchange}, "requested_token_type": {fake.TokenTypeIDJAG}, "audience": {a.Issuer},
			"resource": {srv.URL}, "subject_token": {idp.IDToken("ada", time.Hour)}, "subject_token_type": {fake.TokenTypeIDToken}, "client_id": {idp.ClientID}}
		if edit != nil {
			edit(f)
		}
		return postForm(t, idp.TokenEndpoint, f, "", "")
	}
	tr := exchange(nil)
	if tr.Status != http.StatusOK || tr.AccessToken == "" {
		t.Fatalf("exchange: %+v", tr)
	}
	jag := tr.AccessToken
	exchange(func(f url.Values) { f.Set("subject_token", idp.IDToken("ada", -time.Minute)) }).wantError(t, "invalid_grant")
	exchange(func(f url.Values) { f.Set("client_id", "nobody") }).wantError(t, "invalid_client")
	exchange(func(f url.Values) { f.Set("requested_token_type", "urn:ietf:params:oauth:token-type:access_token") }).wantError(t, "invalid_request")
	exchange(func(f url.Values) { f.Set("audience", "https://unknown.example") }).wantError(t, "invalid_target")
	if idp.TokenExchanges() != 5 || idp.LastExchange().Get("audience") != "https://unknown.example" {
		t.Errorf("TokenExchanges %d, LastExchange %v", idp.TokenExchanges(), idp.LastExchange())
	}

	grant := url.Values{"grant_type": {fake.GrantJWTBearer}, "assertion": {jag}}
	postForm(t, a.TokenEndpoint, grant, "", "").wantError(t, "invalid_client")                      // no client
	postForm(t, a.TokenEndpoint, grant, "other", "other-secret").wantError(t, "invalid_grant")      // another client
	postForm(t, a.TokenEndpoint, grant, "mcp", "wrong").wantError(t, "invalid_client")              // a wrong secret
	if tr := postForm(t, a.TokenEndpoint, grant, "mcp", "mcp-secret"); tr.Status != http.StatusOK { // its client
		t.Fatalf("the ID-JAG from its client: %+v", tr)
	} else if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + tr.AccessToken}}); resp.StatusCode != http.StatusOK {
		t.Errorf("the token for the ID-JAG's resource: %d", resp.StatusCode)
	}
}
