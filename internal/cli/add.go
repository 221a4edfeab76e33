package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

type addOptions struct {
	ID, URL          string
	Auth             *enumFlag
	BearerTokenEnv   string
	Headers          []string
	Scopes           []string
	ConnectOnStartup bool
	Disabled         bool
	Timeout          time.Duration
	Replace          bool
}

func newAddCmd(app *App) *cobra.Command {
	opts := &addOptions{Auth: newEnumFlag(string(mcpgate.AuthNone), "none", "bearer", "oauth")}
	cmd := &cobra.Command{
		Use:   "add NAME URL",
		Short: "Add a remote MCP server to the config",
		Long: strings.TrimSpace(`
Add a remote MCP server reached over Streamable HTTP. NAME is how you refer to
it (lower-case letters, digits, '_' and '-'); URL must be https, or http on a
loopback address.

Header values may reference environment variables as ${VAR}; they are kept
verbatim in the config and expanded only when a request is made.`),
		Example: examples(`
  mcpgate add docs https://mcp.example.com/mcp
  mcpgate add api https://api.example.com/mcp --auth bearer --bearer-token-env API_TOKEN
  mcpgate add team https://mcp.example.com/mcp --header 'X-Team: ${TEAM_ID}'`),
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID, opts.URL = args[0], args[1]
			// --bearer-token-env alone can only mean bearer auth.
			if !cmd.Flags().Changed("auth") && opts.BearerTokenEnv != "" {
				opts.Auth.value = string(mcpgate.AuthBearer)
			}
			return runAdd(app, opts)
		},
	}
	f := cmd.Flags()
	f.Var(opts.Auth, "auth", "how to authenticate: none, bearer or oauth")
	f.StringVar(&opts.BearerTokenEnv, "bearer-token-env", "", "environment `variable` holding the bearer token (implies --auth bearer)")
	f.StringArrayVar(&opts.Headers, "header", nil, "extra HTTP header 'Name: value' sent with every request (repeatable)")
	f.StringArrayVar(&opts.Scopes, "scope", nil, "OAuth `scope` to request (repeatable)")
	f.BoolVar(&opts.ConnectOnStartup, "connect-on-startup", false, "connect as soon as a long-running mcpgate starts")
	f.BoolVar(&opts.Disabled, "disabled", false, "add the server disabled")
	f.DurationVar(&opts.Timeout, "timeout", 0, "tool call timeout (default 60s)")
	f.BoolVar(&opts.Replace, "replace", false, "replace a server that already has this NAME")
	return cmd
}

func runAdd(app *App, opts *addOptions) error {
	s, err := opts.serverConfig()
	if err != nil {
		return err
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	if err := cfg.Add(s, opts.Replace); err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	out := app.IO.Out
	fmt.Fprintf(out, "Added server %q: %s (auth %s) to %s\n", s.ID, s.URL, s.Auth, cfg.Path)
	for _, name := range referencedEnv(&s) {
		if app.Getenv(name) == "" {
			fmt.Fprintf(app.IO.ErrOut, "note: $%s is not set here; requests to %q will fail until it is.\n", name, s.ID)
		}
	}
	if s.Enabled {
		fmt.Fprintf(out, "Check it with: mcpgate status %s\n", s.ID)
	} else {
		fmt.Fprintf(out, "It is disabled; enable it with: mcpgate enable %s\n", s.ID)
	}
	return nil
}

// serverConfig turns the flags into a config, refusing combinations of
// flags that make no sense; the config itself is validated by config.Add.
func (o *addOptions) serverConfig() (mcpgate.ServerConfig, error) {
	s := mcpgate.ServerConfig{
		ID:               o.ID,
		URL:              o.URL,
		Auth:             mcpgate.AuthKind(o.Auth.value),
		Enabled:          !o.Disabled,
		ConnectOnStartup: o.ConnectOnStartup,
		Scopes:           o.Scopes,
		BearerTokenEnv:   o.BearerTokenEnv,
		Timeout:          o.Timeout,
	}
	if s.Auth == mcpgate.AuthBearer && s.BearerTokenEnv == "" {
		return s, usageErrorf("--auth bearer needs --bearer-token-env VAR naming the environment variable that holds the token (reading the token from stdin comes in a later step)")
	}
	if s.Auth != mcpgate.AuthBearer && s.BearerTokenEnv != "" {
		return s, usageErrorf("--bearer-token-env is only for --auth bearer")
	}
	if len(o.Scopes) > 0 && s.Auth != mcpgate.AuthOAuth {
		return s, usageErrorf("--scope is only for --auth oauth")
	}
	for _, h := range o.Headers {
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return s, usageErrorf("--header %q: want 'Name: value'", h)
		}
		for existing := range s.Headers {
			if strings.EqualFold(existing, name) {
				return s, usageErrorf("--header %q: header %s given twice", h, name)
			}
		}
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[name] = value
	}
	return s, nil
}

// referencedEnv lists the environment variables a server's requests need.
func referencedEnv(s *mcpgate.ServerConfig) []string {
	var names []string
	if s.BearerTokenEnv != "" {
		names = append(names, s.BearerTokenEnv)
	}
	for _, v := range s.Headers {
		names = append(names, mcpgate.EnvRefs(v)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
