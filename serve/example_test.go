package serve_test

import (
	"context"
	"fmt"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A front serves the gateway tool to an agent host over any transport.
func ExampleFront_Run() {
	m, _ := manager.New(nil, nil)
	defer m.Close()
	front := serve.New(&serve.Options{Gateway: gateway.New(&gateway.Options{Manager: m})})

	hostSide, frontSide := mcp.NewInMemoryTransports() // os.Stdin/Stdout in mcpgate serve
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); front.Run(ctx, frontSide) }()

	host := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	cs, _ := host.Connect(ctx, hostSide, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	tools, _ := cs.ListTools(ctx, nil)
	fmt.Println(len(tools.Tools), tools.Tools[0].Name)
	cs.Close()
	cancel()
	<-done
	// Output: 1 mcp
}
