package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/spf13/cobra"
)

type addOptions struct {
	ID, URL           string
	Auth              *enumFlag
	BearerTokenEnv    string
	Headers           []string
	Scopes            []string
	ClientID          string
	ClientSecretEnv   string
	ClientMetadataURL string
	Issuer            string
	Grant             string
	PrivateKeyFile    string
	PrivateKeyAlg     string
	DPoP              bool
	AssertionFile     string
	AssertionEnv      string
	IDTokenFile       string
	IDTokenEnv        string
	IDPTokenEndpoint  string
	IDPClientID       string
	IDPClientSecret   string
	AllowPrivate      bool
	ConnectOnStartup  bool
	Disabled          bool
	Timeout           time.Duration
	Replace           bool
}

// oauthFlags are the flags that only make sense with --auth oauth, and so
// imply it.
var oauthFlags = []string{"client-id", "client-secret-env", "client-metadata-url", "issuer", "grant", "private-key-file", "private-key-alg", "dpop",
	"assertion-file", "assertion-env", "id-token-file", "id-token-env", "idp-token-endpoint", "idp-client-id", "idp-client-secret-env"}

func newAddCmd(app *App) *cobra.Command {
	opts := &addOptions{Auth: newEnumFlag(string(mcpgate.AuthNone), "none", "bearer", "oauth")}
	cmd := &cobra.Command{
		Use:   "add NAME URL",
		Short: "Add a remote MCP server to the config",
		Long: strings.TrimSpace(`
Add a remote MCP server reached over Streamable HTTP. NAME is how you refer to
it (lower-case letters, digits, '_' and '-'); URL must be https, or http on a
loopback address.

--auth oauth: sign in afterwards with mcpgate auth NAME. mcpgate registers
itself with the server's authorization server, unless you give a client
(--client-id, with --client-secret-env for a confidential one) or a Client
ID Metadata Document URL. A client you give belongs to one authorization
server: name it with --issuer (its issuer identifier, exactly as its
metadata says). Its ID, secret or key, and the assertions of the grants
below, are sent there only, whichever authorization server the MCP server
names. --dpop binds the tokens to a key of mcpgate's (RFC 9449), so a
copied token is useless; the authorization server must support it.

Without a person (no browser; mcpgate gets a new token by itself whenever
one expires), --grant says how:
  client_credentials  the client's own credentials: --client-id with
                      --client-secret-env, or --private-key-file (a PEM key
                      for private_key_jwt; --private-key-alg to choose the
                      JWS algorithm)
  jwt_bearer          workload identity federation: a JWT the platform
                      issues the workload (Kubernetes, a cloud, CI), read
                      from --assertion-file each time (keep it rotated) or
                      --assertion-env; --client-id if the server wants one
  enterprise          enterprise-managed authorization: the person's ID
                      token from the company's identity provider
                      (--id-token-file or --id-token-env) is exchanged at
                      --idp-token-endpoint (as --idp-client-id, with
                      --idp-client-secret-env if confidential) for a grant
                      that --client-id (with --client-secret-env or
                      --private-key-file) presents to the server's
                      authorization server
Secrets and tokens are never written to the config: it names the
environment variables and files that hold them.

--auth bearer: the token is read from stdin (typed without echo on a
terminal, else the first line of the pipe) and stored sealed in the data
directory, never in the config; or it is read from an environment variable
at each request with --bearer-token-env.

Header values may reference environment variables as ${VAR}; they are kept
verbatim in the config and expanded only when a request is made.

mcpgate connects only to public addresses (and to loopback for a server
added on a loopback URL), never to link-local or cloud metadata ones. A
server inside a company network, on private addresses (10.x, 172.16-31.x,
192.168.x, 100.64.0.0/10, fc00::/7), needs --allow-private-network, which
lets its sign-in reach those addresses too.`),
		Example: examples(`
  mcpgate add docs https://mcp.example.com/mcp
  mcpgate add github https://api.githubcopilot.com/mcp/ --auth oauth
  mcpgate add api https://api.example.com/mcp --auth bearer < token.txt
  mcpgate add api https://api.example.com/mcp --auth bearer --bearer-token-env API_TOKEN
  mcpgate add secure https://mcp.example.com/mcp --auth oauth --dpop
  mcpgate add ci https://mcp.example.com/mcp --grant client_credentials --client-id ci --client-secret-env CI_SECRET \
      --issuer https://login.example.com
  mcpgate add ci https://mcp.example.com/mcp --grant client_credentials --client-id ci --private-key-file ci-key.pem \
      --issuer https://login.example.com
  mcpgate add build https://mcp.example.com/mcp --grant jwt_bearer --assertion-file /var/run/secrets/tokens/mcp \
      --issuer https://login.example.com
  mcpgate add corp https://mcp.corp.example/mcp --grant enterprise --client-id mcp-app --client-secret-env MCP_APP_SECRET \
      --issuer https://auth.mcp.corp.example \
      --id-token-file ~/.corp/id_token --idp-token-endpoint https://login.corp.example/oauth2/token --idp-client-id mcpgate
  mcpgate add team https://mcp.example.com/mcp --header 'X-Team: ${TEAM_ID}'
  mcpgate add wiki https://wiki.corp.internal/mcp --auth oauth --allow-private-network`),
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID, opts.URL = args[0], args[1]
			if !cmd.Flags().Changed("auth") {
				// --bearer-token-env alone can only mean bearer auth, a
				// client flag only oauth.
				switch {
				case opts.BearerTokenEnv != "":
					opts.Auth.value = string(mcpgate.AuthBearer)
				case slices.ContainsFunc(oauthFlags, cmd.Flags().Changed):
					opts.Auth.value = string(mcpgate.AuthOAuth)
				}
			}
			return runAdd(cmd.Context(), app, opts)
		},
	}
	f := cmd.Flags()
	f.Var(opts.Auth, "auth", "how to authenticate: none, bearer or oauth")
	f.StringVar(&opts.BearerTokenEnv, "bearer-token-env", "", "environment `variable` holding the bearer token (implies --auth bearer; without it the token is read from stdin)")
	f.StringArrayVar(&opts.Headers, "header", nil, "extra HTTP header 'Name: value' sent with every request (repeatable)")
	f.StringArrayVar(&opts.Scopes, "scope", nil, "OAuth `scope` to request (repeatable)")
	f.StringVar(&opts.ClientID, "client-id", "", "OAuth client `ID` registered with the authorization server (default: register dynamically)")
	f.StringVar(&opts.ClientSecretEnv, "client-secret-env", "", "environment `variable` holding the OAuth client's secret")
	f.StringVar(&opts.ClientMetadataURL, "client-metadata-url", "", "https `URL` of mcpgate's Client ID Metadata Document, used when the authorization server supports it")
	f.StringVar(&opts.Issuer, "issuer", "", "the authorization server (issuer `URL`) the client is registered with, the only one its ID, secret or key are sent to; required with --client-id, --client-secret-env, --private-key-file and the grants without a person")
	f.StringVar(&opts.Grant, "grant", "", "OAuth grant: authorization_code (a person signs in, the default), client_credentials, jwt_bearer or enterprise (no person; see above)")
	f.StringVar(&opts.PrivateKeyFile, "private-key-file", "", "PEM `file` with the client's private key (EC, RSA or Ed25519) for private_key_jwt client authentication (grants without a person)")
	f.StringVar(&opts.PrivateKeyAlg, "private-key-alg", "", "JWS `algorithm` of the private_key_jwt assertions ("+strings.Join(mcpgate.SigningAlgs, ", ")+"; default: one the key and the authorization server fit)")
	f.BoolVar(&opts.DPoP, "dpop", false, "bind the OAuth tokens to a key of mcpgate's (DPoP, RFC 9449)")
	f.StringVar(&opts.AssertionFile, "assertion-file", "", "`file` the platform keeps the workload's JWT in, read at each token request (--grant jwt_bearer)")
	f.StringVar(&opts.AssertionEnv, "assertion-env", "", "environment `variable` holding the workload's JWT (--grant jwt_bearer)")
	f.StringVar(&opts.IDTokenFile, "id-token-file", "", "`file` holding the person's ID token from the identity provider (--grant enterprise)")
	f.StringVar(&opts.IDTokenEnv, "id-token-env", "", "environment `variable` holding the person's ID token (--grant enterprise)")
	f.StringVar(&opts.IDPTokenEndpoint, "idp-token-endpoint", "", "the identity provider's token endpoint `URL`, where the ID token is exchanged (--grant enterprise)")
	f.StringVar(&opts.IDPClientID, "idp-client-id", "", "mcpgate's client `ID` at the identity provider (--grant enterprise)")
	f.StringVar(&opts.IDPClientSecret, "idp-client-secret-env", "", "environment `variable` holding that client's secret, if it is confidential (--grant enterprise)")
	f.BoolVar(&opts.AllowPrivate, "allow-private-network", false, "let this server and its sign-in reach private network addresses (a server inside a company network)")
	f.BoolVar(&opts.ConnectOnStartup, "connect-on-startup", false, "connect as soon as a long-running mcpgate starts")
	f.BoolVar(&opts.Disabled, "disabled", false, "add the server disabled")
	f.DurationVar(&opts.Timeout, "timeout", 0, "tool call timeout (default 60s)")
	f.BoolVar(&opts.Replace, "replace", false, "replace a server that already has this NAME")
	return cmd
}

func runAdd(ctx context.Context, app *App, opts *addOptions) error {
	s, err := opts.serverConfig()
	if err != nil {
		return err
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	// Add checks everything about s, in memory; nothing is written until
	// the token (if any) is read and stored too.
	if err := cfg.Add(s, opts.Replace); err != nil {
		return err
	}
	storesToken := s.Auth == mcpgate.AuthBearer && s.BearerTokenEnv == ""
	if storesToken {
		token, err := readToken(ctx, app.IO, s.ID)
		if err != nil {
			return err
		}
		client, err := app.OAuth()
		if err != nil {
			return err
		}
		if err := client.SetBearer(ctx, s, token); err != nil {
			return err
		}
	}
	if err := cfg.Save(); err != nil {
		if storesToken {
			// Without its server the token would only wait, unused, for a
			// server of the same name and URL.
			if client, cerr := app.OAuth(); cerr == nil {
				client.Logout(context.WithoutCancel(ctx), s)
			}
		}
		return err
	}
	out := app.IO.Out
	fmt.Fprintf(out, "Added server %q: %s (auth %s) to %s\n", s.ID, mcpgate.ShowURL(s.URL), s.Auth, cfg.Path)
	if s.Issuer != "" {
		fmt.Fprintf(out, "Its OAuth client is pinned to the authorization server %s: nothing of it is sent to any other.\n", mcpgate.ShowURL(s.Issuer))
	}
	if storesToken {
		dir, _ := app.DataDir()
		fmt.Fprintf(out, "Its bearer token is stored sealed in %s, not in the config.\n", dir)
	}
	for _, name := range referencedEnv(&s) {
		if app.Getenv(name) == "" {
			fmt.Fprintf(app.IO.ErrOut, "note: $%s is not set here; requests to %q will fail until it is.\n", name, s.ID)
		}
	}
	switch {
	case !s.Enabled:
		fmt.Fprintf(out, "It is disabled; enable it with: mcpgate enable %s\n", s.ID)
	case s.Grant.Machine():
		fmt.Fprintf(out, "It signs in by itself, without a browser; check it with: mcpgate status %s\n", s.ID)
	case s.Auth == mcpgate.AuthOAuth:
		fmt.Fprintf(out, "Sign in with: mcpgate auth %s\n", s.ID)
	default:
		fmt.Fprintf(out, "Check it with: mcpgate status %s\n", s.ID)
	}
	return nil
}

// maxTokenBytes bounds a bearer token read from stdin.
const maxTokenBytes = 16 << 10

// readToken reads the bearer token for server id: typed (or pasted)
// without echo on a terminal, else all of stdin, which must be one line
// (a trailing line break and blank lines aside): a token cut to its first
// line would be refused by the server on every request. It is never
// printed, not even in an error.
func readToken(ctx context.Context, streams *IO, id string) (string, error) {
	var line string
	if f, ok := streams.In.(*os.File); ok && streams.InTTY {
		fmt.Fprintf(streams.ErrOut, "Paste the bearer token for %s and press Enter (it is not shown): ", id)
		s, err := readHidden(ctx, f)
		fmt.Fprintln(streams.ErrOut)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		line = s
	} else {
		b, err := io.ReadAll(io.LimitReader(streams.In, maxTokenBytes+64))
		if err != nil {
			return "", fmt.Errorf("reading the token from stdin: %w", err)
		}
		line = string(b)
	}
	token := strings.TrimSpace(line)
	switch {
	case strings.ContainsAny(token, "\r\n"):
		return "", usageErrorf("the bearer token on stdin has %d lines; a token is one line (check the file holds only the token)", strings.Count(strings.ReplaceAll(token, "\r\n", "\n"), "\n")+1)
	case token == "":
		return "", usageErrorf("--auth bearer reads the token from stdin, which is empty; pipe it in (mcpgate add %s URL --auth bearer < token.txt) or name the variable holding it with --bearer-token-env VAR", id)
	case len(token) > maxTokenBytes:
		return "", usageErrorf("the bearer token on stdin is longer than %d KiB", maxTokenBytes>>10)
	}
	return token, nil
}

// serverConfig turns the flags into a config, refusing combinations of
// flags that make no sense; the config itself is validated by config.Add.
func (o *addOptions) serverConfig() (mcpgate.ServerConfig, error) {
	s := mcpgate.ServerConfig{
		ID:                 o.ID,
		URL:                o.URL,
		Auth:               mcpgate.AuthKind(o.Auth.value),
		Enabled:            !o.Disabled,
		ConnectOnStartup:   o.ConnectOnStartup,
		Scopes:             o.Scopes,
		BearerTokenEnv:     o.BearerTokenEnv,
		ClientID:           o.ClientID,
		ClientSecretEnv:    o.ClientSecretEnv,
		ClientMetadataURL:  o.ClientMetadataURL,
		Issuer:             o.Issuer,
		Grant:              mcpgate.Grant(o.Grant),
		PrivateKeyFile:     o.PrivateKeyFile,
		PrivateKeyAlg:      o.PrivateKeyAlg,
		DPoP:               o.DPoP,
		AssertionFile:      o.AssertionFile,
		AssertionEnv:       o.AssertionEnv,
		IDTokenFile:        o.IDTokenFile,
		IDTokenEnv:         o.IDTokenEnv,
		IDPTokenEndpoint:   o.IDPTokenEndpoint,
		IDPClientID:        o.IDPClientID,
		IDPClientSecretEnv: o.IDPClientSecret,
		Timeout:            o.Timeout,
	}
	s.AllowPrivateNetwork = o.AllowPrivate
	if s.Auth != mcpgate.AuthBearer && s.BearerTokenEnv != "" {
		return s, usageErrorf("--bearer-token-env is only for --auth bearer")
	}
	if len(o.Scopes) > 0 && s.Auth != mcpgate.AuthOAuth {
		return s, usageErrorf("--scope is only for --auth oauth")
	}
	if s.Auth != mcpgate.AuthOAuth && (s.ClientID != "" || s.ClientSecretEnv != "" || s.ClientMetadataURL != "" || s.Issuer != "" || s.Grant != "" || s.PrivateKeyFile != "" ||
		s.DPoP || s.AssertionFile != "" || s.AssertionEnv != "" || s.IDTokenFile != "" || s.IDTokenEnv != "" || s.IDPTokenEndpoint != "" || s.IDPClientID != "" || s.IDPClientSecretEnv != "") {
		return s, usageErrorf("--client-id, --client-secret-env, --client-metadata-url, --issuer, --grant, --dpop and the flags of the grants are only for --auth oauth")
	}
	if s.PrivateKeyAlg != "" && s.PrivateKeyFile == "" {
		return s, usageErrorf("--private-key-alg is only for --private-key-file")
	}
	// Which grant each flag belongs to; the config's validation (in
	// config.Add) checks what each grant needs.
	for _, f := range []struct {
		flag  string
		set   bool
		grant mcpgate.Grant
	}{
		{"--assertion-file", s.AssertionFile != "", mcpgate.GrantJWTBearer}, {"--assertion-env", s.AssertionEnv != "", mcpgate.GrantJWTBearer},
		{"--id-token-file", s.IDTokenFile != "", mcpgate.GrantEnterprise}, {"--id-token-env", s.IDTokenEnv != "", mcpgate.GrantEnterprise},
		{"--idp-token-endpoint", s.IDPTokenEndpoint != "", mcpgate.GrantEnterprise}, {"--idp-client-id", s.IDPClientID != "", mcpgate.GrantEnterprise},
		{"--idp-client-secret-env", s.IDPClientSecretEnv != "", mcpgate.GrantEnterprise},
	} {
		if f.set && s.Grant != f.grant {
			return s, usageErrorf("%s is only for --grant %s", f.flag, f.grant)
		}
	}
	switch s.Grant {
	case "", mcpgate.GrantAuthorizationCode:
		if s.PrivateKeyFile != "" {
			return s, usageErrorf("--private-key-file is only for the grants without a person (--grant client_credentials, jwt_bearer, enterprise)")
		}
	case mcpgate.GrantClientCredentials:
		if s.ClientID == "" || (s.ClientSecretEnv == "" && s.PrivateKeyFile == "") {
			return s, usageErrorf("--grant client_credentials needs --client-id, and --client-secret-env VAR or --private-key-file PEM")
		}
	case mcpgate.GrantJWTBearer:
		if (s.AssertionFile == "") == (s.AssertionEnv == "") {
			return s, usageErrorf("--grant jwt_bearer needs the workload's JWT: --assertion-file FILE or --assertion-env VAR (one of them)")
		}
	case mcpgate.GrantEnterprise:
		if s.ClientID == "" || (s.IDTokenFile == "") == (s.IDTokenEnv == "") || s.IDPTokenEndpoint == "" || s.IDPClientID == "" {
			return s, usageErrorf("--grant enterprise needs --client-id, --id-token-file FILE or --id-token-env VAR, --idp-token-endpoint URL and --idp-client-id ID")
		}
	default:
		return s, usageErrorf("--grant %q: must be authorization_code, client_credentials, jwt_bearer or enterprise", o.Grant)
	}
	if s.Issuer == "" && (s.ClientID != "" || s.ClientSecretEnv != "" || s.PrivateKeyFile != "" || s.Grant.Machine()) {
		return s, usageErrorf("--client-id, --client-secret-env, --private-key-file and the grants without a person need --issuer URL: " +
			"the authorization server the client is registered with (its issuer identifier), the only one its credentials are sent to")
	}
	// The config is used from any directory: keep paths absolute. The key
	// must exist now; the token files may appear later (a platform mounts
	// them when the workload runs).
	for _, f := range []struct {
		flag  string
		path  *string
		exist bool
	}{{"--private-key-file", &s.PrivateKeyFile, true}, {"--assertion-file", &s.AssertionFile, false}, {"--id-token-file", &s.IDTokenFile, false}} {
		if *f.path == "" {
			continue
		}
		abs, err := filepath.Abs(*f.path)
		if err != nil {
			return s, usageErrorf("%s: %v", f.flag, err)
		}
		if _, err := os.Stat(abs); err != nil && f.exist {
			return s, usageErrorf("%s %s: %v", f.flag, abs, errors.Unwrap(err))
		}
		*f.path = abs
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
	for _, v := range []string{s.BearerTokenEnv, s.ClientSecretEnv, s.AssertionEnv, s.IDTokenEnv, s.IDPClientSecretEnv} {
		if v != "" {
			names = append(names, v)
		}
	}
	for _, v := range s.Headers {
		names = append(names, mcpgate.EnvRefs(v)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
