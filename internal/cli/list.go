package cli

import (
	"context"
	"strings"

	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

type listOptions struct {
	ID   string
	JSON bool
}

func newListCmd(app *App) *cobra.Command {
	opts := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list [NAME]",
		Short: "List tools, one line each: server, tool, description",
		Long: strings.TrimSpace(`
List the enabled tools of NAME, or of every enabled server, from the
catalog an earlier command stored when there is one (status, connect,
call and serve store a fresh one), else by connecting. A server that
cannot be reached is reported on stderr and the others are still listed;
the exit code is then 1.`),
		Args: argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.ID = args[0]
			}
			return runList(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print JSON: {"servers":[{"id","tools":[...]}]}`)
	return cmd
}

func runList(ctx context.Context, app *App, opts *listOptions) error {
	list, failed, err := catalogs(ctx, app, opts.ID, "tools", (*manager.Manager).Tools)
	if err != nil {
		return err
	}
	if opts.JSON {
		err = writeCatalogJSON(app.IO.Out, "tools", list)
	} else {
		err = writeCatalogLines(app.IO.Out, list, func(t *mcp.Tool) []string {
			return []string{firstLine(t.Name, 80), firstLine(t.Description, 120)}
		})
	}
	if err != nil {
		return err
	}
	return failed
}
