package config_test

import (
	"fmt"

	"github.com/mcpgate/mcpgate/config"
)

func ExampleParseImport() {
	cursor := []byte(`{
	  "mcpServers": {
	    "Linear": {"url": "https://mcp.linear.app/mcp"},
	    "gitlab": {"url": "https://gitlab.example/mcp", "headers": {"Authorization": "Bearer ${env:GITLAB_TOKEN}"}},
	    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
	  }
	}`)
	res, err := config.ParseImport(cursor, config.FormatAuto)
	if err != nil {
		panic(err)
	}
	for _, s := range res.Servers {
		fmt.Printf("import %s (%s) %s auth=%s\n", s.ID, s.DisplayName(), s.URL, s.Auth)
	}
	for _, s := range res.Skipped {
		fmt.Printf("skip %s: %s\n", s.Name, s.Reason)
	}
	// Output:
	// import gitlab (gitlab) https://gitlab.example/mcp auth=none
	// import linear (Linear) https://mcp.linear.app/mcp auth=none
	// skip files: runs the local command "npx @modelcontextprotocol/server-filesystem": stdio servers are not supported: mcpgate connects to remote servers over Streamable HTTP only
}
