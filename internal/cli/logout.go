package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/oauth"
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
	writeLogout(app.IO.Out, &s, res)
	return nil
}

// writeLogout says what logout did: which tokens the authorization server
// revoked, which it cannot revoke, and until when those still work.
func writeLogout(w io.Writer, s *mcpgate.ServerConfig, res *oauth.LogoutResult) {
	switch {
	case !res.Removed:
		fmt.Fprintf(w, "%s was not signed in; nothing was stored, nothing to remove.\n", s.ID)
		return
	case s.Auth == mcpgate.AuthBearer:
		fmt.Fprintf(w, "Removed the stored bearer token for %s.\n", s.ID)
		return
	}
	fmt.Fprintf(w, "Signed out of %s: the stored credential was removed.\n", s.ID)
	until := untilExpiry(res.AccessExpiry)
	switch {
	case res.RevocationErr != nil:
		fmt.Fprintf(w, "mcpgate could not ask the authorization server to revoke its tokens (%s); the access token works until it expires%s.\n",
			sanitize(res.RevocationErr.Error()), until)
		return
	case !res.RevocationOffered:
		fmt.Fprintf(w, "The authorization server offers no revocation (RFC 7009); the access token works until it expires%s.\n", until)
		return
	}
	var revoked, notes []string
	for _, t := range res.Tokens {
		name := strings.ReplaceAll(t.Hint, "_", " ")
		switch {
		case t.Revoked:
			revoked = append(revoked, "the "+name)
		case t.Unsupported:
			notes = append(notes, fmt.Sprintf("It does not revoke %ss (unsupported_token_type, which RFC 7009 allows): the last one works until it expires%s.", name, until))
		case t.Hint == "access_token":
			notes = append(notes, fmt.Sprintf("Revoking the access token failed (%s): it works until it expires%s.", sanitize(t.Err.Error()), until))
		default:
			notes = append(notes, fmt.Sprintf("Revoking the %s failed (%s): it may still work at the authorization server.", name, sanitize(t.Err.Error())))
		}
	}
	if len(revoked) > 0 {
		fmt.Fprintf(w, "The authorization server revoked %s.\n", strings.Join(revoked, " and "))
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// untilExpiry is " (at TIME, in DURATION)" for a known expiry, else "".
func untilExpiry(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	return fmt.Sprintf(" (at %s, in %s)", at.Local().Format("15:04:05 MST"), roughly(time.Until(at)))
}
