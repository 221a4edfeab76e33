package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/names"
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
		prompts, err := m.Prompts(ctx, opts.ID)
		if err != nil {
			return err
		}
		if err := checkPromptArgs(opts.ID, opts.Prompt, prompts, opts.Args); err != nil {
			return err
		}
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

// checkPromptArgs checks args against the arguments the prompt declares,
// before anything is sent: an unknown prompt is not found (with the
// closest names), a missing required or undeclared argument is a usage
// error naming what the prompt takes.
func checkPromptArgs(id, name string, prompts []*mcp.Prompt, args map[string]string) error {
	i := slices.IndexFunc(prompts, func(p *mcp.Prompt) bool { return p != nil && p.Name == name })
	if i < 0 {
		var known []string
		for _, p := range prompts {
			if p != nil {
				known = append(known, p.Name)
			}
		}
		msg := fmt.Sprintf("server %q has no prompt %q", id, name)
		if c := names.Closest(name, known, 3); len(c) > 0 {
			msg += "; did you mean " + strings.Join(c, ", ") + "?"
		}
		return &mcpgate.Error{Category: mcpgate.CategoryNotFound, Message: sanitize(msg)}
	}
	p := prompts[i]
	var declared, missing, takes []string
	for _, a := range p.Arguments {
		if a == nil {
			continue
		}
		declared = append(declared, a.Name)
		word := firstLine(a.Name, 40)
		if a.Required {
			word += " (required)"
			if _, ok := args[a.Name]; !ok {
				missing = append(missing, firstLine(a.Name, 40)+"=VALUE")
			}
		}
		takes = append(takes, word)
	}
	what := fmt.Sprintf("prompt %q of server %q", firstLine(name, 80), id)
	takesText := "no arguments"
	if len(takes) > 0 {
		takesText = strings.Join(takes, ", ")
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if slices.Contains(declared, k) {
			continue
		}
		msg := fmt.Sprintf("%s has no argument %q; it takes %s", what, k, takesText)
		if c := names.Closest(k, declared, 2); len(c) > 0 {
			msg += "; did you mean " + strings.Join(c, " or ") + "?"
		}
		return usageErrorf("%s", sanitize(msg))
	}
	if len(missing) > 0 {
		return usageErrorf("%s", sanitize(fmt.Sprintf("%s needs %s; it takes %s", what, strings.Join(missing, " "), takesText)))
	}
	return nil
}
