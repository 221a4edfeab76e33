package fake_test

import (
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/internal/fake"
)

// The demo protects the honest server with the fake authorization server;
// a client without a token is told where to start.
func ExampleNewAuth() {
	auth := fake.NewAuth(nil)
	defer auth.Close()
	srv := fake.NewServer(&fake.Options{Auth: auth, ToolScopes: map[string]string{"admin_reset": "admin"}})
	defer srv.Close()

	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	fmt.Println(resp.Header.Get("WWW-Authenticate") == `Bearer scope="read", resource_metadata="`+srv.ResourceMetadataURL()+`"`)
	// Output:
	// 401
	// true
}
