package cli

import (
	"context"
	"io"
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
		Short: "List resources and resource templates, one line each: server, URI, type, name",
		Args:  argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.ID = args[0]
			}
			return runResources(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print JSON: {"servers":[{"id","resources":[...],"resourceTemplates":[...]}]}`)
	return cmd
}

func runResources(ctx context.Context, app *App, opts *resourcesOptions) error {
	// A resource template is a family of resources (fake://items/{id}):
	// listed with the resources, read by filling it in.
	both := func(m *manager.Manager, ctx context.Context, id string) ([]resourceEntry, error) {
		resources, err := m.Resources(ctx, id)
		if err != nil {
			return nil, err
		}
		templates, err := m.ResourceTemplates(ctx, id)
		if err != nil {
			return nil, err
		}
		out := make([]resourceEntry, 0, len(resources)+len(templates))
		for _, r := range resources {
			out = append(out, resourceEntry{resource: r})
		}
		for _, t := range templates {
			out = append(out, resourceEntry{template: t})
		}
		return out, nil
	}
	list, failed, err := catalogs(ctx, app, opts.ID, "resources", both)
	if err != nil {
		return err
	}
	if opts.JSON {
		err = writeResourcesJSON(app.IO.Out, list)
	} else {
		err = writeCatalogLines(app.IO.Out, list, func(e resourceEntry) []string {
			uri, mime, name, title, desc := e.fields()
			if title != "" {
				name = title
			}
			if d := firstLine(desc, 100); d != "" {
				name += " — " + d
			}
			return []string{firstLine(uri, 200), firstLine(orUnknown(mime), 60), firstLine(name, 160)}
		})
	}
	if err != nil {
		return err
	}
	return failed
}

// resourceEntry is a resource or a resource template.
type resourceEntry struct {
	resource *mcp.Resource
	template *mcp.ResourceTemplate
}

func (e resourceEntry) fields() (uri, mime, name, title, desc string) {
	if e.template != nil {
		t := e.template
		return t.URITemplate, t.MIMEType, t.Name, t.Title, t.Description
	}
	r := e.resource
	return r.URI, r.MIMEType, r.Name, r.Title, r.Description
}

// writeResourcesJSON prints {"servers":[{"id", "resources":[...],
// "resourceTemplates":[...]}]}.
func writeResourcesJSON(w io.Writer, list []serverCatalog[resourceEntry]) error {
	servers := make([]map[string]any, 0, len(list))
	for _, c := range list {
		entry := map[string]any{"id": c.ID}
		if c.Err != nil {
			entry["error"] = errorInfo(c.Err)
			servers = append(servers, entry)
			continue
		}
		resources, templates := []*mcp.Resource{}, []*mcp.ResourceTemplate{}
		for _, e := range c.Items {
			if e.template != nil {
				templates = append(templates, e.template)
			} else {
				resources = append(resources, e.resource)
			}
		}
		entry["resources"], entry["resourceTemplates"] = resources, templates
		servers = append(servers, entry)
	}
	return writeJSON(w, map[string]any{"servers": servers})
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
		return namedError(opts.ID, err)
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
