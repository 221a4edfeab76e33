package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/spf13/cobra"
)

// completionShells are the shells `mcpgate completion SHELL` writes a
// script for (cobra's generators).
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// addCompletion sets up `mcpgate completion bash|zsh|fish|powershell` and
// what the scripts complete: the configured server names wherever a
// command takes an existing server's NAME first, and for `tools enable`
// the server's disabled tools. Both come from the config file alone:
// completing never opens the store or connects.
func addCompletion(root *cobra.Command, app *App) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Short = "Print the shell completion script: " + strings.Join(completionShells, ", ")
		c.Example = examples(`
  source <(mcpgate completion bash)
  mcpgate completion zsh > "${fpath[1]}/_mcpgate"
  mcpgate completion fish > ~/.config/fish/completions/mcpgate.fish`)
		// Without a runnable command cobra shows the help for an unknown
		// shell and exits 0; this makes it a usage error.
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("no completion for shell %q; mcpgate writes scripts for %s", args[0], strings.Join(completionShells, ", "))
			if s := names.Closest(args[0], completionShells, 2); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return usageErrorf("%s", msg)
		}
		c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	}
	eachCommand(root, func(c *cobra.Command) {
		if c.ValidArgsFunction != nil || c == root || c.Name() == "add" {
			return
		}
		words := strings.Fields(c.Use)
		if len(words) > 1 && (words[1] == "NAME" || words[1] == "[NAME]") {
			c.ValidArgsFunction = completeServerArgs(app, c)
		}
	})
}

// completeServerArgs completes a command's first argument with the
// configured servers' IDs (with their URL, secrets hidden, as the
// description), and the second of `tools enable` with that server's
// disabled tools.
func completeServerArgs(app *App, c *cobra.Command) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cfg, err := app.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		switch {
		case len(args) == 0:
			for _, s := range cfg.Servers() {
				if strings.HasPrefix(s.ID, toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.ID, mcpgate.ShowURL(s.URL)))
				}
			}
		case len(args) == 1 && c.Name() == "enable" && c.Parent() != nil && c.Parent().Name() == "tools":
			if s, ok := cfg.Server(args[0]); ok {
				for _, t := range s.DisabledTools {
					if strings.HasPrefix(t, toComplete) {
						out = append(out, t)
					}
				}
				slices.Sort(out)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
