package fake_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testbin.NoExitPause()
	// The tests mostly wait on loopback servers and timers.
	testbin.Waiting(8)
	// Many use the default client. An httptest server's Close closes the
	// default transport's idle connections, which fails a request of a
	// test running beside it that has just taken one: the default client
	// gets a transport of its own, which a closed server's connections
	// leave as it closes them.
	http.DefaultClient.Transport = http.DefaultTransport.(*http.Transport).Clone()
	goleak.VerifyTestMain(m)
}

// protocolVersion is the session era in these clients: this package's tests
// are about sessions, the GET stream and forgetting sessions; what the
// fake does at 2026-07-28 is tested through the manager.
const protocolVersion = "2025-11-25"

// connect opens a go-sdk client session to endpoint and closes it when the
// test ends (before the fake stops, since cleanups run last-in first-out).
// hc may be nil.
func connect(t *testing.T, endpoint string, opts *mcp.ClientOptions, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	cs, err := dial(endpoint, opts, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc})
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func dial(endpoint string, opts *mcp.ClientOptions, tr *mcp.StreamableClientTransport) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "fake-test", Version: "0.0.0"}, opts)
	return client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// testContext is a context for one request, bounded so a broken fake fails
// the test instead of hanging it.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test after five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// text returns the concatenated text contents of a tool result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// post sends one raw JSON-RPC message the way a Streamable HTTP client does.
func post(t *testing.T, endpoint, body string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, endpoint, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// headerTransport adds fixed headers to every request.
type headerTransport http.Header

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	return http.DefaultClient.Transport.RoundTrip(r)
}
