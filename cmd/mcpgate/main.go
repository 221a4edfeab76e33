// Command mcpgate connects AI agents to remote MCP servers. See
// internal/cli for the commands, or run "mcpgate --help".
package main

import (
	"os"

	"github.com/mcpgate/mcpgate/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
