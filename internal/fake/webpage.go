package fake

import (
	"net/http"
	"strings"
	"testing"
)

// StartWebPage starts what people often paste instead of a server's MCP
// endpoint: a web site (its documentation, a login page) that answers
// every request, POSTs included, with 200 and a page of contentType
// ("text/html; charset=utf-8" when empty); for "application/json", a REST
// API's answer. It returns the site's URL and stops when the test ends.
func StartWebPage(t testing.TB, contentType string) string {
	t.Helper()
	if contentType == "" {
		contentType = "text/html; charset=utf-8"
	}
	srv, base, err := newLoopbackServer("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		if strings.HasPrefix(contentType, "application/json") {
			w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.acme.example/rest"}`))
			return
		}
		w.Write([]byte("<!doctype html><title>Acme docs</title><h1>Connect your agent</h1><p>Use https://mcp.acme.example/mcp.</p>"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return base + "/docs/mcp"
}
