package manager_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A manager connects on first use and calls a remote tool.
func ExampleManager_CallTool() {
	srv := fake.NewServer(nil) // a remote MCP server on 127.0.0.1
	defer srv.Close()

	m, err := manager.New([]mcpgate.ServerConfig{
		{ID: "demo", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true},
	}, nil)
	if err != nil {
		panic(err)
	}
	defer m.Close()

	res, err := m.CallTool(context.Background(), "demo", "echo", json.RawMessage(`{"text":"hello"}`), nil)
	if err != nil {
		panic(err)
	}
	st, _ := m.Status("demo")
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, st.State)
	// Output: hello ready
}
