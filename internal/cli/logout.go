package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

type logoutOptions struct {
	ID string
}

func newLogoutCmd(app *App) *cobra.Command {
	opts := &logoutOptions{}
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Remove a server's stored sign-in (or bearer token) and revoke it",
		Long: strings.TrimSpace(`
Delete the credential stored for server NAME: an OAuth sign-in, or a bearer
token stored by mcpgate add --auth bearer. For a sign-in, mcpgate also asks
the authorization server to revoke its tokens, when it offers revocation.
The credential is deleted even if revocation fails.`),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runLogout(cmd.Context(), app, opts)
		},
	}
}

func runLogout(ctx context.Context, app *App, opts *logoutOptions) error {
	s, err := app.Server(opts.ID)
	if err != nil {
		return err
	}
	client, err := app.OAuth()
	if err != nil {
		return err
	}
	stop := startProgress(app.IO.ErrOut, app.IO.ErrTTY, func() string { return fmt.Sprintf("Signing out of %s…", s.ID) })
	res, err := client.Logout(ctx, s)
	stop()
	if err != nil {
		return err
	}
	out := app.IO.Out
	switch {
	case !res.Removed:
		fmt.Fprintf(out, "%s was not signed in; nothing was stored, nothing to remove.\n", s.ID)
	case s.Auth == mcpgate.AuthBearer:
		fmt.Fprintf(out, "Removed the stored bearer token for %s.\n", s.ID)
	case res.Revoked:
		fmt.Fprintf(out, "Signed out of %s: the stored credential was removed and the authorization server revoked its tokens.\n", s.ID)
	default:
		fmt.Fprintf(out, "Signed out of %s: the stored credential was removed. The authorization server did not confirm revoking its tokens (it may not offer revocation); they stop working when they expire.\n", s.ID)
	}
	return nil
}
