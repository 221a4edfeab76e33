package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

type describeOptions struct {
	ID, Tool string
	JSON     bool
}

func newDescribeCmd(app *App) *cobra.Command {
	opts := &describeOptions{}
	cmd := &cobra.Command{
		Use:   "describe NAME TOOL",
		Short: "Show a tool's description, annotations and input schema",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID, opts.Tool = args[0], args[1]
			return runDescribe(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the MCP Tool JSON")
	return cmd
}

func runDescribe(ctx context.Context, app *App, opts *describeOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	var tool *mcp.Tool
	ids := []string{opts.ID}
	err = forEachServer(ctx, app, ids, "Connecting", func(ctx context.Context, _ int) error {
		var err error
		tool, err = m.Tool(ctx, opts.ID, opts.Tool)
		return err
	})[0]
	if err != nil {
		return namedError(opts.ID, err)
	}
	out := app.IO.Out
	if opts.JSON {
		return writeJSON(out, tool)
	}
	fmt.Fprintf(out, "%s/%s\n", opts.ID, firstLine(tool.Name, 128))
	if title := toolTitle(tool); title != "" {
		fmt.Fprintf(out, "Title:       %s\n", firstLine(title, 200))
	}
	fmt.Fprintf(out, "Annotations: %s\n", describeAnnotations(tool.Annotations))
	if d := strings.TrimSpace(tool.Description); d != "" {
		fmt.Fprintln(out, "Description:")
		for _, line := range strings.Split(sanitize(d), "\n") {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	fmt.Fprintln(out, "Input schema:")
	return writeJSON(out, tool.InputSchema)
}

func toolTitle(t *mcp.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	if t.Annotations != nil {
		return t.Annotations.Title
	}
	return ""
}

// describeAnnotations says in words what the hints claim, defaults
// included. They are the server's claims, not guarantees.
func describeAnnotations(a *mcp.ToolAnnotations) string {
	if a == nil {
		return "none (by default a tool may change things and reach the outside world)"
	}
	var hints []string
	if a.ReadOnlyHint {
		hints = append(hints, "read-only")
	} else {
		if a.DestructiveHint == nil || *a.DestructiveHint {
			hints = append(hints, "may be destructive")
		} else {
			hints = append(hints, "additive (not destructive)")
		}
		if a.IdempotentHint {
			hints = append(hints, "idempotent")
		}
	}
	if a.OpenWorldHint == nil || *a.OpenWorldHint {
		hints = append(hints, "open world")
	} else {
		hints = append(hints, "closed world")
	}
	return strings.Join(hints, ", ")
}
