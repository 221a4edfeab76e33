package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

type promptsOptions struct {
	ID   string
	JSON bool
}

func newPromptsCmd(app *App) *cobra.Command {
	opts := &promptsOptions{}
	cmd := &cobra.Command{
		Use:   "prompts [NAME]",
		Short: "List prompts, one line each: server, prompt, arguments, description",
		Long: strings.TrimSpace(`
List the prompts of NAME, or of every enabled server. Required arguments are
marked with *.`),
		Args: argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.ID = args[0]
			}
			return runPrompts(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, `print JSON: {"servers":[{"id","prompts":[...]}]}`)
	return cmd
}

func runPrompts(ctx context.Context, app *App, opts *promptsOptions) error {
	list, failed, err := catalogs(ctx, app, opts.ID, "prompts", (*manager.Manager).Prompts)
	if err != nil {
		return err
	}
	if opts.JSON {
		err = writeCatalogJSON(app.IO.Out, "prompts", list)
	} else {
		err = writeCatalogLines(app.IO.Out, list, func(p *mcp.Prompt) []string {
			var args []string
			for _, a := range p.Arguments {
				name := firstLine(a.Name, 40)
				if a.Required {
					name += "*"
				}
				args = append(args, name)
			}
			return []string{firstLine(p.Name, 80), "(" + strings.Join(args, ", ") + ")", firstLine(p.Description, 120)}
		})
	}
	if err != nil {
		return err
	}
	return failed
}

type promptOptions struct {
	ID, Prompt string
	Args       map[string]string
	JSON       bool
}

func newPromptCmd(app *App) *cobra.Command {
	opts := &promptOptions{}
	cmd := &cobra.Command{
		Use:     "prompt NAME PROMPT [KEY=VALUE]...",
		Short:   "Render a prompt with its arguments",
		Example: "  mcpgate prompt docs summarize style=short",
		Args:    argsBetween(2, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID, opts.Prompt = args[0], args[1]
			var err error
			if opts.Args, err = parsePromptArgs(args[2:]); err != nil {
				return err
			}
			return runPrompt(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the MCP GetPromptResult JSON")
	return cmd
}

// parsePromptArgs reads KEY=VALUE arguments; VALUE may contain '='.
func parsePromptArgs(args []string) (map[string]string, error) {
	m := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usageErrorf("prompt argument %q: want KEY=VALUE", a)
		}
		if _, dup := m[k]; dup {
			return nil, usageErrorf("prompt argument %s given twice", k)
		}
		m[k] = v
	}
	return m, nil
}

func runPrompt(ctx context.Context, app *App, opts *promptOptions) error {
	if err := mcpgate.ValidateID(opts.ID); err != nil {
		return err
	}
	m, err := app.Manager()
	if err != nil {
		return err
	}
	var res *mcp.GetPromptResult
	err = forEachServer(ctx, app, []string{opts.ID}, "Connecting", func(ctx context.Context, _ int) error {
		var err error
		res, err = m.GetPrompt(ctx, opts.ID, opts.Prompt, opts.Args)
		return err
	})[0]
	if err != nil {
		return namedError(opts.ID, err)
	}
	out := app.IO.Out
	if opts.JSON {
		return writeResultJSON(out, res)
	}
	if d := strings.TrimSpace(res.Description); d != "" {
		fmt.Fprintf(out, "# %s\n", firstLine(d, 200))
	}
	for i, msg := range res.Messages {
		if msg == nil {
			continue
		}
		if i > 0 || res.Description != "" {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "[%s]\n", firstLine(string(msg.Role), 20))
		if msg.Content != nil {
			writeContent(out, msg.Content)
		}
	}
	return nil
}
