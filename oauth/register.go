package oauth

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxClientIDBytes bounds a client_id an authorization server may hand us.
const maxClientIDBytes = 255

// clientFor decides which OAuth client logs in to cfg's server at issuer:
// the configured client ID (and secret), else the Client ID Metadata
// Document URL when configured and supported, else a dynamic registration
// (RFC 7591), stored and reused.
func (c *Client) clientFor(ctx context.Context, cfg *mcpgate.ServerConfig, issuer string, asm *authServer, redirectURI string) (*clientAuth, error) {
	if cfg.ClientID != "" {
		return c.configuredClient(cfg, asm)
	}
	if cfg.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return &clientAuth{id: cfg.ClientMetadataURL, method: "none"}, nil
	}
	reg, err := c.opts.Store.GetRegistration(ctx, c.opts.Tenant, issuer, registrationKey(redirectURI))
	switch {
	case err == nil && (reg.ClientSecretExpiresAt.IsZero() || reg.ClientSecretExpiresAt.After(c.now())):
		return &clientAuth{id: reg.ClientID, secret: reg.ClientSecret, method: reg.TokenEndpointAuthMethod}, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, storeError("reading the client registration", err)
	}
	if asm.RegistrationEndpoint == "" {
		return nil, &mcpgate.Error{Category: mcpgate.CategoryInvalid, Code: "no_registration",
			Message: "the authorization server " + sanitizeText("%s", issuer) + " offers no dynamic registration; configure a client with --client-id (and --client-secret-env) and --issuer"}
	}
	reg, err = c.register(ctx, issuer, asm, redirectURI)
	if err != nil {
		return nil, err
	}
	return &clientAuth{id: reg.ClientID, secret: reg.ClientSecret, method: reg.TokenEndpointAuthMethod}, nil
}

// configuredClient is the client configured for cfg's server, at the
// authorization server asm, which must be the issuer pinned with it: this
// is where a configured secret or key (and, for a machine grant, the
// assertion sent with it) would otherwise go to whichever authorization
// server the resource names.
func (c *Client) configuredClient(cfg *mcpgate.ServerConfig, asm *authServer) (*clientAuth, error) {
	switch {
	case cfg.Issuer == "":
		return nil, &mcpgate.Error{Category: mcpgate.CategoryInvalid, Code: "issuer_required",
			Message: "the client configured for " + cfg.ID + " is pinned to no authorization server; pin the one it is registered with: mcpgate add " + cfg.ID + " URL ... --issuer ISSUER --replace"}
	case asm.Issuer != cfg.Issuer:
		return nil, pinMismatch(cfg, []string{asm.Issuer})
	}
	a := &clientAuth{id: cfg.ClientID, method: "none"}
	if cfg.PrivateKeyFile != "" {
		key, err := loadKey(cfg.PrivateKeyFile)
		if err != nil {
			return nil, err
		}
		alg, err := chooseAlg(key, cfg.PrivateKeyAlg, asm.TokenEndpointAuthSigningAlgValuesSupported)
		if err != nil {
			return nil, err
		}
		a.key, a.alg, a.method = key, alg, "private_key_jwt"
		return a, nil
	}
	if cfg.ClientSecretEnv != "" {
		a.secret = c.opts.Getenv(cfg.ClientSecretEnv)
		if a.secret == "" {
			return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "the client secret variable $%s is not set", cfg.ClientSecretEnv)
		}
		a.method = "client_secret_basic"
		if methods := asm.TokenEndpointAuthMethodsSupported; len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post") {
			a.method = "client_secret_post"
		}
	}
	return a, nil
}

// register performs dynamic client registration and stores the result.
func (c *Client) register(ctx context.Context, issuer string, asm *authServer, redirectURI string) (*store.Registration, error) {
	req := &oauthex.ClientRegistrationMetadata{
		ClientName:              c.opts.ClientName,
		RedirectURIs:            []string{redirectURI},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
		ApplicationType:         applicationType(redirectURI),
	}
	var resp oauthex.ClientRegistrationResponse
	if err := c.postJSON(ctx, asm.RegistrationEndpoint, req, &resp); err != nil {
		return nil, tokenError(ctx, "registering mcpgate with "+sanitizeText("%s", issuer), err)
	}
	if err := checkClientID(resp.ClientID); err != nil {
		return nil, err
	}
	method := resp.TokenEndpointAuthMethod
	switch method {
	case "":
		method = "client_secret_basic" // RFC 7591 §2 default
		if resp.ClientSecret == "" {
			method = "none"
		}
	case "none", "client_secret_basic", "client_secret_post":
	default:
		return nil, discoveryErrorf("registration chose token endpoint auth method %q, which mcpgate does not support", sanitizeText("%s", method))
	}
	if method != "none" && resp.ClientSecret == "" {
		return nil, discoveryErrorf("registration chose %s but issued no client secret", method)
	}
	reg := &store.Registration{
		Tenant:                  c.opts.Tenant,
		Issuer:                  issuer,
		RedirectURI:             registrationKey(redirectURI),
		ClientID:                resp.ClientID,
		ClientSecret:            resp.ClientSecret,
		ClientSecretExpiresAt:   resp.ClientSecretExpiresAt,
		TokenEndpointAuthMethod: method,
		CreatedAt:               c.now(),
	}
	if err := c.opts.Store.PutRegistration(ctx, reg); err != nil {
		return nil, storeError("storing the client registration", err)
	}
	return reg, nil
}

// applicationType is the application_type to register (SEP-837, OpenID
// Connect Dynamic Client Registration §2): "web" when the browser comes
// back to an https page on a host (a gateway's own callback), "native"
// for mcpgate on a person's machine, whose redirect is a loopback address.
// Authorization servers hold a client to it, e.g. refusing a loopback
// redirect for a web client.
func applicationType(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err == nil && u.Scheme == "https" && !mcpgate.IsLoopbackHost(u.Hostname()) {
		return "web"
	}
	return "native"
}

// registrationKey is the redirect URI a registration is stored under: for
// a loopback redirect, without its port, because the authorization server
// must accept any port for it (RFC 8252 §7.3) and each login listens on
// whatever port is free. One registration then serves every login.
func registrationKey(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil || u.Scheme != "http" || !mcpgate.IsLoopbackHost(u.Hostname()) {
		return redirectURI
	}
	u.Host = u.Hostname()
	if strings.Contains(u.Host, ":") {
		u.Host = "[" + u.Host + "]"
	}
	return u.String()
}

// checkClientID refuses client IDs that are empty, oversized or carry
// control characters.
func checkClientID(id string) error {
	switch {
	case id == "":
		return discoveryErrorf("registration returned an empty client_id; refusing it")
	case len(id) > maxClientIDBytes:
		return discoveryErrorf("registration returned a client_id of %d bytes (at most %d); refusing it", len(id), maxClientIDBytes)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return discoveryErrorf("registration returned a client_id with control characters; refusing it")
		}
	}
	return nil
}

// pinMismatch is the error of a server whose authorization servers
// (named) do not include the issuer pinned for it.
func pinMismatch(cfg *mcpgate.ServerConfig, named []string) *mcpgate.Error {
	return &mcpgate.Error{Category: mcpgate.CategoryInvalid, Code: "issuer_mismatch",
		Message: "the client for " + cfg.ID + " is pinned to the authorization server " + cfg.Issuer + ", the only one its credentials are sent to, " +
			"but the server names " + issuerList(named) + "; nothing was sent. " +
			"If the server really moved, pin the new one: mcpgate add " + cfg.ID + " URL ... --issuer NEW --replace"}
}

func storeError(what string, err error) *mcpgate.Error {
	if errors.Is(err, store.ErrSealed) {
		return &mcpgate.Error{Category: mcpgate.CategoryInternal, Message: what + ": the stored secret cannot be opened with this key (was MCPGATE_SECRET_KEY or the key file changed?)", Err: err}
	}
	return &mcpgate.Error{Category: mcpgate.CategoryInternal, Message: what + ": the credential store failed", Err: err}
}
