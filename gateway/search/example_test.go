package search_test

import (
	"fmt"

	"github.com/mcpgate/mcpgate/gateway/search"
)

func Example() {
	ix := search.New([]search.Doc{
		{Server: "github", Tool: "create_issue", Description: "Create a new issue"},
		{Server: "github", Tool: "list_issues", Description: "List issues"},
	})
	for _, h := range ix.Search("open a bug on GitHub", 5) {
		fmt.Println(h.Doc)
	}
	// Output:
	// 0
	// 1
}
