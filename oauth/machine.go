package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
)

// Grants without a person. Each obtains an access token at the token
// endpoint directly, again whenever it expires (they have no refresh
// token); a refusal there is not something a sign-in fixes, so it is
// reported as the authorization server's HTTP error, not as needs-auth.
const (
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

	tokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG   = "urn:ietf:params:oauth:token-type:id-jag"
)

// maxAssertionBytes bounds a JWT read from a file or variable.
const maxAssertionBytes = 16 << 10

// machineToken obtains a credential for a machine grant of cfg (see
// [mcpgate.Grant.Machine]) for resource at the authorization server asm.
// prev, when set, is the credential it replaces: its DPoP key is kept.
func (c *Client) machineToken(ctx context.Context, cfg *mcpgate.ServerConfig, resource string, asm *authServer, scopes []string, prev *store.Credential, ch challenge) (*store.Credential, error) {
	ca, err := c.configuredClient(cfg, asm)
	if err != nil {
		return nil, err
	}
	key, err := c.credentialKey(cfg, ch, asm, prev)
	if err != nil {
		return nil, err
	}
	form := url.Values{"resource": {resource}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	var source string // where the assertion came from, for messages
	switch cfg.Grant {
	case mcpgate.GrantClientCredentials:
		form.Set("grant_type", "client_credentials")
	case mcpgate.GrantJWTBearer:
		assertion, from, err := c.readJWT(cfg, cfg.AssertionFile, cfg.AssertionEnv, "workload token")
		if err != nil {
			return nil, err
		}
		if err := c.refusedBefore(cfg, assertion, from); err != nil {
			return nil, err
		}
		form.Set("grant_type", grantJWTBearer)
		form.Set("assertion", assertion)
		source = from
	case mcpgate.GrantEnterprise:
		idJAG, err := c.identityGrant(ctx, cfg, resource, asm, scopes)
		if err != nil {
			return nil, err
		}
		form.Set("grant_type", grantJWTBearer)
		form.Set("assertion", idJAG)
	default:
		return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "grant %q signs in with a person", cfg.Grant)
	}
	tr, err := c.requestToken(ctx, asm, form, ca, key)
	if err != nil {
		if source != "" {
			c.rememberRefusal(cfg, form.Get("assertion"))
		}
		return nil, machineError(cfg, source, err)
	}
	b := store.Binding{Tenant: c.opts.Tenant, Server: cfg.ID, Resource: resource, Issuer: asm.Issuer, ClientID: ca.id}
	return c.credentialFrom(b, tr, scopes, prev, key), nil
}

// machineError turns an authorization server's refusal of a machine grant
// into an error that says what to fix: its configuration or credentials,
// not a sign-in.
func machineError(cfg *mcpgate.ServerConfig, source string, err error) error {
	var me *mcpgate.Error
	if !errors.As(err, &me) || me.Category != mcpgate.CategoryAuth {
		return err
	}
	next := *me
	next.Category = mcpgate.CategoryHTTP
	switch {
	case source != "":
		next.Message += "; mcpgate sends this token again only once " + source + " holds a new one"
	case cfg.Grant == mcpgate.GrantEnterprise:
		next.Message += "; check the client at the authorization server, or get a new ID token from the identity provider"
	default:
		next.Message += "; check the client's ID and secret or key in the configuration"
	}
	return &next
}

// readJWT reads a token from the file or environment variable named in
// the configuration, afresh each time (a platform rotates it), and checks
// it is one compact JWT. It returns where it came from, for messages.
func (c *Client) readJWT(cfg *mcpgate.ServerConfig, file, env, what string) (tok, from string, err error) {
	switch {
	case file != "":
		from = file
		f, err := os.Open(file)
		if err != nil {
			return "", from, mcpgate.Errorf(mcpgate.CategoryInvalid, "reading the %s of %s from %s: %v", what, cfg.ID, file, errors.Unwrap(err))
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxAssertionBytes+1))
		if err != nil {
			return "", from, mcpgate.Errorf(mcpgate.CategoryInvalid, "reading the %s of %s from %s: %v", what, cfg.ID, file, errors.Unwrap(err))
		}
		tok = string(b)
	default:
		from = "$" + env
		tok = c.opts.Getenv(env)
	}
	tok = strings.TrimSpace(tok)
	switch {
	case tok == "":
		return "", from, mcpgate.Errorf(mcpgate.CategoryInvalid, "the %s of %s (%s) is empty", what, cfg.ID, from)
	case len(tok) > maxAssertionBytes:
		return "", from, mcpgate.Errorf(mcpgate.CategoryInvalid, "the %s of %s (%s) is larger than %d KiB", what, cfg.ID, from, maxAssertionBytes>>10)
	case strings.Count(tok, ".") != 2 || strings.ContainsFunc(tok, func(r rune) bool {
		return !(r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}):
		return "", from, mcpgate.Errorf(mcpgate.CategoryInvalid, "the %s of %s (%s) is not a JWT", what, cfg.ID, from)
	}
	return tok, from, nil
}

// refusedBefore refuses to send again a workload token the authorization
// server refused (SEP-1933: a refused assertion is not retried); once the
// platform puts a new one in place it is sent.
func (c *Client) refusedBefore(cfg *mcpgate.ServerConfig, assertion, from string) error {
	sum := sha256.Sum256([]byte(assertion))
	c.mu.Lock()
	refused := c.refused[cfg.ID] == sum
	c.mu.Unlock()
	if refused {
		return &mcpgate.Error{Category: mcpgate.CategoryHTTP, Code: "invalid_grant",
			Message: "the authorization server refused the workload token of " + cfg.ID + " in " + from + "; mcpgate sends it again only once it holds a new one"}
	}
	return nil
}

func (c *Client) rememberRefusal(cfg *mcpgate.ServerConfig, assertion string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.refused) > 100 {
		clear(c.refused)
	}
	c.refused[cfg.ID] = sha256.Sum256([]byte(assertion))
}

// identityGrant exchanges the person's ID token at the identity provider
// for an identity assertion grant for the MCP server (SEP-990, RFC 8693):
// a JWT the authorization server asm takes as a jwt-bearer assertion, for
// resource.
func (c *Client) identityGrant(ctx context.Context, cfg *mcpgate.ServerConfig, resource string, asm *authServer, scopes []string) (string, error) {
	idToken, _, err := c.readJWT(cfg, cfg.IDTokenFile, cfg.IDTokenEnv, "ID token")
	if err != nil {
		return "", err
	}
	if _, err := checkEndpoint("idpTokenEndpoint", cfg.IDPTokenEndpoint); err != nil {
		return "", err
	}
	idp := &clientAuth{id: cfg.IDPClientID, method: "none"}
	if cfg.IDPClientSecretEnv != "" {
		idp.secret = c.opts.Getenv(cfg.IDPClientSecretEnv)
		if idp.secret == "" {
			return "", mcpgate.Errorf(mcpgate.CategoryInvalid, "the identity provider client secret variable $%s is not set", cfg.IDPClientSecretEnv)
		}
		idp.method = "client_secret_basic"
	}
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"requested_token_type": {tokenTypeIDJAG},
		"audience":             {asm.Issuer},
		"resource":             {resource},
		"subject_token":        {idToken},
		"subject_token_type":   {tokenTypeIDToken},
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	user, pass, err := idp.apply(form, originOf(cfg.IDPTokenEndpoint), c.now())
	if err != nil {
		return "", err
	}
	var resp struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
	}
	if err := c.postForm(ctx, cfg.IDPTokenEndpoint, form, user, pass, &resp); err != nil {
		e := tokenError(ctx, "exchanging the ID token at the identity provider", err)
		if e.Category == mcpgate.CategoryAuth {
			e.Category = mcpgate.CategoryHTTP
			e.Message += "; get a new ID token from the identity provider"
		}
		return "", e
	}
	if resp.IssuedTokenType != tokenTypeIDJAG || resp.AccessToken == "" || strings.Count(resp.AccessToken, ".") != 2 || len(resp.AccessToken) > maxAssertionBytes {
		return "", &mcpgate.Error{Category: mcpgate.CategoryProtocol,
			Message: "the identity provider's token exchange did not answer with an identity assertion grant (issued_token_type " + tokenTypeIDJAG + ")"}
	}
	return resp.AccessToken, nil
}
