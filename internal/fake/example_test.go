package fake_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The demo runs the honest server without a testing.T.
func ExampleNewServer() {
	srv := fake.NewServer(nil)
	defer srv.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "demo", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: 5
}
