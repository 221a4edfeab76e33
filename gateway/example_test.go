package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway answers a model's search with one line per tool, inside an
// untrusted-content block.
func ExampleGateway_Handle() {
	srv := fake.NewServer(nil)
	defer srv.Close()
	m, _ := manager.New([]mcpgate.ServerConfig{{ID: "demo", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true}}, nil)
	defer m.Close()
	g := gateway.New(&gateway.Options{Manager: m})

	res := g.Handle(context.Background(), &gateway.Input{Action: "search", Query: "add two numbers", Limit: 1})
	out := res.Content[0].(*mcp.TextContent).Text
	fmt.Println(strings.Contains(out, "<untrusted-content nonce="), strings.Contains(out, "demo/add"))
	// Output: true true
}

// The bridge gives every remote tool its own safe name for agents that
// register tools directly.
func ExampleBridge_Tools() {
	srv := fake.NewServer(nil)
	defer srv.Close()
	m, _ := manager.New([]mcpgate.ServerConfig{{ID: "demo", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true}}, nil)
	defer m.Close()
	b := gateway.NewBridge(&gateway.Options{Manager: m})

	tools, _, _ := b.Tools(context.Background())
	fmt.Println(tools[0].Name)
	res := b.Call(context.Background(), tools[0], json.RawMessage(`{"a":1,"b":2}`), nil)
	fmt.Println(res.IsError)
	// Output:
	// mcp__demo__add
	// false
}
