package cli

import (
	"context"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

type resourcesOptions struct {
	ID   string
	JSON bool
}

func newResourcesCmd(app *App) *cobra.Command {
	opts := &resourcesOptions{}
	cmd := &cobra.Command{
		Use:   "resources [NAME]",
		Short: "List resources, one line each: server, URI, type, name",
		Args:  argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.ID = args[0]
			}
			return runResources(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print JSON: {"servers":[{"id","resources":[...]}]}`)
	return cmd
}

func runResources(ctx context.Context, app *App, opts *resourcesOptions) error {
	list, failed, err := catalogs(ctx, app, opts.ID, "resources", (*manager.Manager).Resources)
	if err != nil {
		return err
	}
	if opts.JSON {
		err = writeCatalogJSON(app.IO.Out, "resources", list)
	} else {
		err = writeCatalogLines(app.IO.Out, list, func(r *mcp.Resource) []string {
			name := r.Title
			if name == "" {
				name = r.Name
			}
			if d := firstLine(r.Description, 100); d != "" {
				name += " — " + d
			}
			return []string{firstLine(r.URI, 200), firstLine(orUnknown(r.MIMEType), 60), firstLine(name, 160)}
		})
	}
	if err != nil {
		return err
	}
	return failed
}

type readOptions struct {
	ID, URI string
	JSON    bool
}

func newReadCmd(app *App) *cobra.Command {
	opts := &readOptions{}
	cmd := &cobra.Command{
		Use:     "read NAME URI",
		Short:   "Read a resource",
		Example: "  mcpgate read docs file:///README.md",
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID, opts.URI = args[0], args[1]
			return runRead(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the MCP ReadResourceResult JSON")
	return cmd
}

func runRead(ctx context.Context, app *App, opts *readOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	if strings.TrimSpace(opts.URI) == "" {
		return usageErrorf("URI must not be empty")
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	var res *mcp.ReadResourceResult
	err = forEachServer(ctx, app, []string{opts.ID}, "Connecting", func(ctx context.Context, _ int) error {
		var err error
		res, err = m.ReadResource(ctx, opts.ID, opts.URI)
		return err
	})[0]
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeResultJSON(app.IO.Out, res)
	}
	for _, rc := range res.Contents {
		if rc != nil {
			writeResourceContents(app.IO.Out, rc, len(res.Contents) > 1)
		}
	}
	return nil
}
