package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/spf13/cobra"
)

type serversOptions struct {
	JSON bool
}

func newServersCmd(app *App) *cobra.Command {
	opts := &serversOptions{}
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "List the configured servers (without connecting)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServers(app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// serverJSON is one configured server as `servers --json` prints it.
// Header values are left out: a literal value may be a credential.
type serverJSON struct {
	ID                string           `json:"id"`
	Name              string           `json:"name"`
	URL               string           `json:"url"`
	Auth              mcpgate.AuthKind `json:"auth"`
	Enabled           bool             `json:"enabled"`
	ConnectOnStartup  bool             `json:"connectOnStartup"`
	DisabledTools     []string         `json:"disabledTools"`
	Scopes            []string         `json:"scopes"`
	BearerTokenEnv    string           `json:"bearerTokenEnv,omitempty"`
	ClientID          string           `json:"clientId,omitempty"`
	ClientSecretEnv   string           `json:"clientSecretEnv,omitempty"`
	ClientMetadataURL string           `json:"clientMetadataUrl,omitempty"`
	Issuer            string           `json:"issuer,omitempty"`
	Grant             mcpgate.Grant    `json:"grant,omitempty"`
	PrivateKeyFile    string           `json:"privateKeyFile,omitempty"`
	Headers           []string         `json:"headers"`
	Timeout           string           `json:"timeout"`
}

func runServers(app *App, opts *serversOptions) error {
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	servers := cfg.Servers()
	if opts.JSON {
		list := make([]serverJSON, 0, len(servers))
		for _, s := range servers {
			headers := make([]string, 0, len(s.Headers))
			for k := range s.Headers {
				headers = append(headers, k)
			}
			slices.Sort(headers)
			list = append(list, serverJSON{
				ID: s.ID, Name: s.DisplayName(), URL: mcpgate.ShowURL(s.URL), Auth: s.Auth,
				Enabled: s.Enabled, ConnectOnStartup: s.ConnectOnStartup,
				DisabledTools: orEmpty(s.DisabledTools), Scopes: orEmpty(s.Scopes),
				BearerTokenEnv: s.BearerTokenEnv, ClientID: s.ClientID, ClientSecretEnv: s.ClientSecretEnv,
				ClientMetadataURL: s.ClientMetadataURL, Issuer: s.Issuer, Grant: s.Grant, PrivateKeyFile: s.PrivateKeyFile,
				Headers: headers,
				Timeout: s.CallTimeout().String(),
			})
		}
		return writeJSON(app.IO.Out, map[string]any{"servers": list})
	}
	if len(servers) == 0 {
		fmt.Fprintf(app.IO.ErrOut, "No servers in %s. Add one with: mcpgate add NAME URL\n", cfg.Path)
		return nil
	}
	notes := make([]string, len(servers))
	anyNotes := false
	for i, s := range servers {
		var n []string
		if s.ConnectOnStartup {
			n = append(n, "connects on startup")
		}
		if len(s.DisabledTools) > 0 {
			n = append(n, manager.Counted(len(s.DisabledTools), "tool")+" disabled")
		}
		notes[i] = strings.Join(n, ", ")
		anyNotes = anyNotes || len(n) > 0
	}
	tw := newTable(app.IO.Out)
	fmt.Fprint(tw, "NAME\tENABLED\tAUTH\tURL")
	if anyNotes {
		fmt.Fprint(tw, "\tNOTES")
	}
	fmt.Fprintln(tw)
	for i, s := range servers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s", s.ID, yesNo(s.Enabled), s.Auth, mcpgate.ShowURL(s.URL))
		if anyNotes {
			fmt.Fprint(tw, "\t"+notes[i])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
