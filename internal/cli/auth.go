package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/spf13/cobra"
)

// defaultAuthTimeout is how long auth waits for the person by default.
const defaultAuthTimeout = 5 * time.Minute

type authOptions struct {
	ID           string
	NoBrowser    bool
	Issuer       string
	Timeout      time.Duration
	CallbackPort int
	JSON         bool
}

func newAuthCmd(app *App) *cobra.Command {
	opts := &authOptions{}
	cmd := &cobra.Command{
		Use:   "auth NAME",
		Short: "Sign in to a server that uses OAuth",
		Long: strings.TrimSpace(`
Sign in to server NAME (configured with --auth oauth). mcpgate finds the
server's authorization server, prints the sign-in URL and opens it in your
browser ($BROWSER if set); once you have signed in, the browser comes back
to mcpgate on 127.0.0.1 and the credential is stored, sealed, in the data
directory. Every later mcpgate process uses it and refreshes it when it
expires; you sign in again only when the server asks for more (a missing
scope) or the sign-in is revoked.

Over SSH, or wherever the browser runs on another machine, use --no-browser:
open the printed URL anywhere, sign in, and paste here the address the
browser ended on (it starts with http://127.0.0.1 and will not load there).

A server configured with a grant without a person (--grant
client_credentials, jwt_bearer or enterprise) signs in without a browser,
and again by itself whenever its token expires. If the server accepts
several authorization servers, choose one with --issuer; a server whose
client is pinned to its issuer (mcpgate add --issuer) signs in there only,
and a server that names another is refused before anything is sent.`),
		Example: examples(`
  mcpgate auth github
  mcpgate auth github --no-browser
  mcpgate auth corp --issuer https://login.example.com`),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return runAuth(cmd.Context(), app, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.NoBrowser, "no-browser", false, "do not open a browser; print the URL and read the redirect address you paste (for SSH)")
	f.StringVar(&opts.Issuer, "issuer", "", "authorization server `URL` to use when the server accepts several")
	f.DurationVar(&opts.Timeout, "timeout", defaultAuthTimeout, "give up if the sign-in has not finished after this long")
	f.IntVar(&opts.CallbackPort, "callback-port", 0, "loopback `port` the browser returns to (default: the previous sign-in's, else any free port)")
	f.BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	return cmd
}

func runAuth(ctx context.Context, app *App, opts *authOptions) error {
	if opts.Timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	if opts.CallbackPort < 0 || opts.CallbackPort > 65535 {
		return usageErrorf("--callback-port must be a port number (1-65535), or 0 for any")
	}
	s, err := app.Server(opts.ID)
	if err != nil {
		return err
	}
	if err := signsIn(&s); err != nil {
		return err
	}
	client, err := app.OAuth()
	if err != nil {
		return err
	}

	si := &signIn{app: app, opts: opts, id: s.ID}
	si.in = newLineReader(app.IO.In)
	app.onClose(si.in.close)
	si.progress(fmt.Sprintf("Signing in to %s…", s.ID))
	res, err := client.Login(ctx, s, &oauth.LoginOptions{
		Issuer:       opts.Issuer,
		Open:         si.open,
		Pasted:       si.in.channel(),
		CallbackPort: opts.CallbackPort,
		Timeout:      opts.Timeout,
		Waiting: func() {
			fmt.Fprintf(app.IO.ErrOut, "Another mcpgate is signing in to %s; waiting for it to finish…\n", s.ID)
		},
	})
	si.stop()
	if err != nil {
		return signInError(s.ID, err)
	}
	if opts.JSON {
		return writeJSON(app.IO.Out, loginJSON(s.ID, res))
	}
	return writeLogin(app.IO.Out, s.ID, res, s.Grant.Machine())
}

// signsIn refuses servers that have nothing to sign in to, saying what
// they use instead.
func signsIn(s *mcpgate.ServerConfig) error {
	switch {
	case s.Auth == mcpgate.AuthNone:
		return mcpgate.Errorf(mcpgate.CategoryInvalid,
			"server %q uses no authentication (auth none), so there is nothing to sign in to; if it needs OAuth: mcpgate add %s %s --auth oauth --replace",
			s.ID, s.ID, mcpgate.ShowURL(s.URL))
	case s.Auth == mcpgate.AuthBearer && s.BearerTokenEnv != "":
		return mcpgate.Errorf(mcpgate.CategoryInvalid,
			"server %q uses a bearer token from $%s, not a sign-in; set that variable instead", s.ID, s.BearerTokenEnv)
	case s.Auth == mcpgate.AuthBearer:
		return mcpgate.Errorf(mcpgate.CategoryInvalid,
			"server %q uses a stored bearer token, not a sign-in; store a new one with: mcpgate add %s %s --auth bearer --replace (the token on stdin)",
			s.ID, s.ID, mcpgate.ShowURL(s.URL))
	}
	return nil
}

// signIn is what auth shows the person while oauth.Login runs: the URL to
// open, the browser, the spinner, and the pasted redirect.
type signIn struct {
	app  *App
	opts *authOptions
	id   string
	in   *lineReader // pasted redirect addresses; read only when asked for

	mu      sync.Mutex // Login may call open on a goroutine of its own
	spinner func()     // ends the current spinner
}

// progress replaces the spinner's message.
func (si *signIn) progress(msg string) {
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.spinner != nil {
		si.spinner()
	}
	si.spinner = startProgress(si.app.IO.ErrOut, si.app.IO.ErrTTY, func() string { return msg })
}

// stop ends the spinner, if one is drawn.
func (si *signIn) stop() {
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.spinner != nil {
		si.spinner()
		si.spinner = nil
	}
}

// open is [oauth.LoginOptions].Open: it prints the URL, then opens the
// browser unless told not to. When there is no browser (or it cannot be
// started) the person may paste the redirect address instead. A browser
// that fails is not fatal: the printed URL remains.
func (si *signIn) open(_ context.Context, authURL string) error {
	si.stop()
	w := si.app.IO.ErrOut
	fmt.Fprintf(w, "Open this URL to sign in to %s:\n\n  %s\n\n", si.id, sanitize(authURL))
	paste := si.opts.NoBrowser
	if !paste {
		if err := si.app.browser(authURL); err != nil {
			fmt.Fprintf(w, "mcpgate: could not open a browser (%s); open the URL above yourself.\n", sanitize(err.Error()))
			paste = true
		}
	}
	if paste {
		fmt.Fprintln(w, "After you sign in, the browser goes to an address starting with http://127.0.0.1.")
		fmt.Fprintln(w, "If it runs on another machine, that page will not load: copy the address from the")
		fmt.Fprintln(w, "browser's address bar, paste it here and press Enter.")
		si.in.begin()
		// No spinner: it would draw over what the person pastes.
		return nil
	}
	si.progress(fmt.Sprintf("Waiting for you to sign in to %s in your browser…", si.id))
	return nil
}

// signInError names the server a failed sign-in was for, unless the
// message already does. The category, and so the exit code, is kept.
func signInError(id string, err error) error {
	names := regexp.MustCompile(`\b(to|for) ` + regexp.QuoteMeta(id) + `([^a-z0-9_-]|$)`)
	if names.MatchString(err.Error()) {
		return err
	}
	return fmt.Errorf("signing in to %s: %w", id, err)
}

// loginResultJSON is what auth --json prints: no secret, ever.
type loginResultJSON struct {
	Server      string    `json:"server"`
	Issuer      string    `json:"issuer"`
	Scopes      []string  `json:"scopes"`
	Expiry      time.Time `json:"expiry,omitzero"`
	Refreshable bool      `json:"refreshable"`
	DPoP        bool      `json:"dpop"`
	Concurrent  bool      `json:"concurrent"`
}

func loginJSON(id string, res *oauth.LoginResult) loginResultJSON {
	return loginResultJSON{Server: id, Issuer: res.Issuer, Scopes: orEmpty(res.Scopes), Expiry: res.Expiry,
		Refreshable: res.Refresh, DPoP: res.DPoP, Concurrent: res.Concurrent}
}

// writeLogin says what the sign-in did, without a secret: who issued the
// credential, for which scopes, until when, and whether mcpgate can
// renew it alone.
func writeLogin(w io.Writer, id string, res *oauth.LoginResult, machine bool) error {
	switch {
	case res.Concurrent:
		fmt.Fprintf(w, "Another mcpgate finished signing in to %s meanwhile; its sign-in is stored and used.\n", id)
	case machine:
		fmt.Fprintf(w, "Signed in to %s without a browser.\n", id)
	default:
		fmt.Fprintf(w, "Signed in to %s.\n", id)
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "  issuer:\t%s\n", sanitize(res.Issuer))
	scopes := "(none named)"
	if len(res.Scopes) > 0 {
		scopes = sanitize(strings.Join(res.Scopes, " "))
	}
	fmt.Fprintf(tw, "  scopes:\t%s\n", scopes)
	expires := "no expiry given"
	if !res.Expiry.IsZero() {
		expires = fmt.Sprintf("%s (in %s)", res.Expiry.Local().Format("2006-01-02 15:04:05 MST"), roughly(time.Until(res.Expiry)))
	}
	fmt.Fprintf(tw, "  expires:\t%s\n", expires)
	renew := "no: sign in again when it expires (mcpgate auth " + id + ")"
	switch {
	case res.Refresh:
		renew = "yes: mcpgate refreshes it when it expires, in whichever process needs it"
	case machine:
		renew = "yes: mcpgate asks for a new token by itself, without a browser"
	}
	fmt.Fprintf(tw, "  renews:\t%s\n", renew)
	if res.DPoP {
		fmt.Fprintf(tw, "  bound:\tto a key of this mcpgate (DPoP): a copy of the token is useless alone\n")
	}
	return tw.Flush()
}

// roughly shows a duration to the second under a minute, else to the
// minute.
func roughly(d time.Duration) string {
	if d < time.Minute {
		return max(d, 0).Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}
