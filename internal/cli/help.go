package cli

import (
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/spf13/cobra"
)

// addHelpCmd replaces cobra's help command, which answers an unknown topic
// ("help nope") with the root's usage and exit 0, by one that makes it a
// usage error naming the closest commands.
func addHelpCmd(root *cobra.Command) {
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				cmd, rest = c.Root(), args
			}
			if len(rest) > 0 {
				topic := strings.TrimSpace(cmd.CommandPath() + " " + rest[0])
				msg := fmt.Sprintf("no help topic %q", topic)
				var known []string
				for _, sub := range cmd.Commands() {
					if sub.IsAvailableCommand() {
						known = append(known, sub.Name())
					}
				}
				if s := names.Closest(rest[0], known, 2); len(s) > 0 {
					msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
				}
				return usageErrorf("%s", msg)
			}
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	})
}
