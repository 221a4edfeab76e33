package fake_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestProtectionOriginResource: the server is the protected resource of
// its whole origin: root metadata naming the origin, tokens for the origin
// accepted, tokens for the endpoint's own URL refused.
func TestProtectionOriginResource(t *testing.T) {
	a := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: a})
	srv.Protect(fake.Protection{OriginResource: true})
	origin := strings.TrimSuffix(srv.URL, fake.Endpoint)

	if srv.ResourceMetadataURL() != origin+"/.well-known/oauth-protected-resource" {
		t.Errorf("ResourceMetadataURL() = %s", srv.ResourceMetadataURL())
	}
	var prm oauthex.ProtectedResourceMetadata
	if status := getJSON(t, srv.ResourceMetadataURL(), &prm); status != http.StatusOK || prm.Resource != origin {
		t.Errorf("root PRM: %d %+v, want resource %q", status, prm, origin)
	}
	if status := getJSON(t, origin+fake.ResourceMetadataPath, nil); status != http.StatusNotFound {
		t.Errorf("path-aware PRM answered %d, want 404", status)
	}
	if ch := challengeParams(t, post(t, srv.URL, initializeBody, nil)); ch["resource_metadata"] != srv.ResourceMetadataURL() {
		t.Errorf("challenge %v", ch)
	}

	a.AddClient(fake.AuthClient{ID: "c", RedirectURIs: []string{loopbackRedirect}})
	forOrigin, _ := a.Mint("c", origin, "read")
	forURL, _ := a.Mint("c", srv.URL, "read")
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + forOrigin}}); resp.StatusCode != http.StatusOK {
		t.Errorf("a token for the origin: %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL, initializeBody, http.Header{"Authorization": {"Bearer " + forURL}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token for another resource identifier: %d, want 401", resp.StatusCode)
	}
}
