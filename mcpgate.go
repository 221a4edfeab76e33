package mcpgate

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AuthKind says how mcpgate authenticates to a remote server.
type AuthKind string

// The supported authentication kinds.
const (
	AuthNone   AuthKind = "none"
	AuthBearer AuthKind = "bearer"
	AuthOAuth  AuthKind = "oauth"
)

// Grant is an OAuth grant type mcpgate can use.
type Grant string

// The supported grants.
const (
	// GrantAuthorizationCode: a person signs in in a browser.
	GrantAuthorizationCode Grant = "authorization_code"
	// GrantClientCredentials: a machine signs in with its own secret or
	// key (OAuth client credentials).
	GrantClientCredentials Grant = "client_credentials"
	// GrantJWTBearer: a workload presents a JWT its platform issued
	// (Kubernetes, a cloud's workload identity, a CI system) as an RFC 7523
	// jwt-bearer assertion: workload identity federation (MCP SEP-1933).
	GrantJWTBearer Grant = "jwt_bearer"
	// GrantEnterprise: a person's ID token from the company's identity
	// provider is exchanged there for an identity assertion grant (ID-JAG,
	// RFC 8693 token exchange), which the MCP server's authorization server
	// takes as a jwt-bearer assertion: enterprise-managed authorization
	// (MCP SEP-990). No browser.
	GrantEnterprise Grant = "enterprise"
)

// Grants lists the grants, for messages.
var Grants = []Grant{GrantAuthorizationCode, GrantClientCredentials, GrantJWTBearer, GrantEnterprise}

// Machine reports whether the grant signs in without a person.
func (g Grant) Machine() bool {
	return g == GrantClientCredentials || g == GrantJWTBearer || g == GrantEnterprise
}

// SigningAlgs are the JWS algorithms mcpgate signs client assertions with.
var SigningAlgs = []string{"ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "EdDSA"}

// DefaultCallTimeout bounds a tool call when the server sets no timeout.
const DefaultCallTimeout = 60 * time.Second

// ServerConfig is one configured remote MCP server.
type ServerConfig struct {
	// ID is the key under mcpServers; see [ValidateID].
	ID string
	// Name is a display name; empty means the ID.
	Name string
	// URL is the Streamable HTTP endpoint; see [ValidateURL].
	URL  string
	Auth AuthKind
	// Enabled servers are connected on demand; disabled ones never.
	Enabled bool
	// ConnectOnStartup servers connect when the manager starts.
	ConnectOnStartup bool
	// DisabledTools are hidden from every listing and refused by calls.
	DisabledTools []string
	Scopes        []string
	// ClientID, ClientSecretEnv and ClientMetadataURL configure the OAuth client.
	ClientID          string
	ClientSecretEnv   string
	ClientMetadataURL string
	// Issuer pins the authorization server (its issuer identifier, RFC
	// 8414): the only one the configured client's ID, secret or key, and a
	// grant's assertions, are ever sent to, whichever one the server names.
	// Required with ClientID, ClientSecretEnv, PrivateKeyFile and the
	// grants without a person (see [Grant.Machine]); optional otherwise,
	// where it chooses among several and refuses any other.
	Issuer string
	// Grant is the OAuth grant (see [Grants]); empty means
	// authorization_code.
	Grant Grant
	// PrivateKeyFile is a PEM private key (EC, RSA or Ed25519) for
	// private_key_jwt client authentication with a machine grant.
	PrivateKeyFile string
	// PrivateKeyAlg is the JWS algorithm of those client assertions (see
	// [SigningAlgs]); empty picks one the key and the authorization server
	// both fit.
	PrivateKeyAlg string
	// AssertionFile or AssertionEnv holds the workload's JWT for grant
	// jwt_bearer: a file the platform keeps fresh (read again each time a
	// token is needed), or an environment variable.
	AssertionFile string
	AssertionEnv  string
	// IDTokenFile or IDTokenEnv holds the person's ID token from the
	// company's identity provider, for grant enterprise.
	IDTokenFile string
	IDTokenEnv  string
	// IDPTokenEndpoint is that identity provider's token endpoint, where
	// the ID token is exchanged; IDPClientID (and IDPClientSecretEnv for a
	// confidential client) is mcpgate's client there.
	IDPTokenEndpoint   string
	IDPClientID        string
	IDPClientSecretEnv string
	// DPoP binds the OAuth tokens to a key of mcpgate's (RFC 9449): every
	// token request and server request carries a proof of possession, so
	// a leaked token is useless alone. The authorization server must
	// support it. Without it, DPoP is still used for a server whose
	// challenge accepts only DPoP tokens.
	DPoP bool
	// BearerTokenEnv names the environment variable holding the bearer token.
	BearerTokenEnv string
	// Headers are sent with every request; values may reference ${VAR} or
	// ${env:VAR}, expanded only when a request is made.
	Headers map[string]string
	// Timeout bounds a tool call; zero means [DefaultCallTimeout].
	Timeout time.Duration
	// AllowPrivateNetwork lets this server's requests, and those of its
	// sign-in, reach private network addresses (RFC 1918, CGNAT
	// 100.64.0.0/10, IPv6 unique local fc00::/7): a server inside a
	// company network. Without it only public addresses are dialled (and
	// loopback for a server configured on loopback); link-local and cloud
	// metadata addresses never are (see package netpolicy).
	AllowPrivateNetwork bool
}

// DisplayName is the name people see.
func (c ServerConfig) DisplayName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// CallTimeout is the configured tool-call timeout or the default.
func (c ServerConfig) CallTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultCallTimeout
}

// ToolEnabled reports whether tool is not in DisabledTools.
func (c ServerConfig) ToolEnabled(tool string) bool {
	return !slices.Contains(c.DisabledTools, tool)
}

// Binding identifies what a live session was authenticated against: the
// complete URL and every setting that decides which credential is sent,
// and where its requests may go. A change of binding must pass the
// manager's disconnect barrier so a credential never reaches a server it
// was not meant for, and a narrowed network policy holds at once.
func (c ServerConfig) Binding() string {
	var b strings.Builder
	fmt.Fprintf(&b, "url=%s\nauth=%s\nbearer=%s\nclient=%s\nsecret=%s\nmeta=%s\nissuer=%s\ngrant=%s\nkey=%s\ndpop=%t\n",
		c.URL, c.Auth, c.BearerTokenEnv, c.ClientID, c.ClientSecretEnv, c.ClientMetadataURL, c.Issuer, c.Grant, c.PrivateKeyFile, c.DPoP)
	fmt.Fprintf(&b, "assertion=%s|%s\nidtoken=%s|%s\nidp=%s|%s|%s\n",
		c.AssertionFile, c.AssertionEnv, c.IDTokenFile, c.IDTokenEnv, c.IDPTokenEndpoint, c.IDPClientID, c.IDPClientSecretEnv)
	if c.AllowPrivateNetwork {
		b.WriteString("network=private\n")
	}
	keys := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "header=%s:%s\n", k, c.Headers[k])
	}
	return b.String()
}

// Validate checks every field and returns an [*Error] of [CategoryInvalid]
// that names the first field breaking a rule.
func (c ServerConfig) Validate() error {
	if err := ValidateID(c.ID); err != nil {
		return err
	}
	if err := ValidateURL(c.URL); err != nil {
		return invalidf("server %q: %v", c.ID, err)
	}
	switch c.Auth {
	case AuthNone, AuthOAuth:
	case AuthBearer:
		if c.BearerTokenEnv != "" && !envName.MatchString(c.BearerTokenEnv) {
			return invalidf("server %q: bearerTokenEnv %q: must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", c.ID, c.BearerTokenEnv)
		}
	case "":
		return invalidf("server %q: auth: required, one of none, bearer, oauth", c.ID)
	default:
		return invalidf("server %q: auth %q: must be one of none, bearer, oauth", c.ID, c.Auth)
	}
	if c.Auth != AuthBearer && c.BearerTokenEnv != "" {
		return invalidf("server %q: bearerTokenEnv: only allowed with auth bearer", c.ID)
	}
	if err := c.validateGrant(); err != nil {
		return err
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return invalidf("server %q: clientMetadataUrl: must be an https URL with a path", c.ID)
		}
	}
	if len(c.Name) > 128 {
		return invalidf("server %q: name: at most 128 bytes", c.ID)
	}
	for k, v := range c.Headers {
		if !headerName.MatchString(k) {
			return invalidf("server %q: headers: %q is not a valid HTTP header name", c.ID, k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return invalidf("server %q: headers: value of %q must not contain line breaks or NUL", c.ID, k)
		}
		switch strings.ToLower(k) {
		case "mcp-session-id", "mcp-protocol-version", "content-type", "accept", "host", "content-length":
			return invalidf("server %q: headers: %q is set by the transport and cannot be configured", c.ID, k)
		}
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return invalidf("server %q: scopes: %q is not a valid scope token", c.ID, s)
		}
	}
	for _, t := range c.DisabledTools {
		if t == "" {
			return invalidf("server %q: disabledTools: empty tool name", c.ID)
		}
	}
	if c.Timeout < 0 {
		return invalidf("server %q: timeout: must not be negative", c.ID)
	}
	return nil
}

// validateGrant checks the grant and the fields it uses; each grant's
// fields are refused with the others, so a config says one thing.
func (c ServerConfig) validateGrant() error {
	if c.Grant != "" && c.Auth != AuthOAuth {
		return invalidf("server %q: grant: needs auth oauth", c.ID)
	}
	if c.Auth != AuthOAuth && (c.ClientID != "" || c.ClientSecretEnv != "" || c.ClientMetadataURL != "" || c.Issuer != "" || c.DPoP) {
		return invalidf("server %q: clientId, clientSecretEnv, clientMetadataUrl, issuer, grant and dpop are only used with auth oauth", c.ID)
	}
	if c.Issuer != "" {
		if err := validateIssuer(c.Issuer); err != nil {
			return invalidf("server %q: issuer: %v", c.ID, err)
		}
	}
	for _, f := range []struct{ name, value string }{
		{"clientSecretEnv", c.ClientSecretEnv}, {"assertionEnv", c.AssertionEnv}, {"idTokenEnv", c.IDTokenEnv}, {"idpClientSecretEnv", c.IDPClientSecretEnv},
	} {
		if f.value != "" && !envName.MatchString(f.value) {
			return invalidf("server %q: %s %q: must be an environment variable name", c.ID, f.name, f.value)
		}
	}
	only := func(field string, set bool, grant Grant) error {
		if set && c.Grant != grant {
			return invalidf("server %q: %s: only used with grant %s", c.ID, field, grant)
		}
		return nil
	}
	for _, o := range []struct {
		field string
		set   bool
		grant Grant
	}{
		{"assertionFile", c.AssertionFile != "", GrantJWTBearer}, {"assertionEnv", c.AssertionEnv != "", GrantJWTBearer},
		{"idTokenFile", c.IDTokenFile != "", GrantEnterprise}, {"idTokenEnv", c.IDTokenEnv != "", GrantEnterprise},
		{"idpTokenEndpoint", c.IDPTokenEndpoint != "", GrantEnterprise}, {"idpClientId", c.IDPClientID != "", GrantEnterprise},
		{"idpClientSecretEnv", c.IDPClientSecretEnv != "", GrantEnterprise},
	} {
		if err := only(o.field, o.set, o.grant); err != nil {
			return err
		}
	}
	if c.PrivateKeyFile != "" && !c.Grant.Machine() {
		return invalidf("server %q: privateKeyFile: only used with grant client_credentials, jwt_bearer or enterprise", c.ID)
	}
	if c.PrivateKeyAlg != "" {
		if c.PrivateKeyFile == "" {
			return invalidf("server %q: privateKeyAlg: only used with privateKeyFile", c.ID)
		}
		if !slices.Contains(SigningAlgs, c.PrivateKeyAlg) {
			return invalidf("server %q: privateKeyAlg %q: must be one of %s", c.ID, c.PrivateKeyAlg, strings.Join(SigningAlgs, ", "))
		}
	}
	if c.PrivateKeyFile != "" && c.ClientSecretEnv != "" {
		return invalidf("server %q: privateKeyFile and clientSecretEnv: the client authenticates with one of them", c.ID)
	}
	if c.Grant.Machine() && c.ClientMetadataURL != "" {
		return invalidf("server %q: clientMetadataUrl: only used with grant authorization_code", c.ID)
	}
	switch c.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if c.ClientID == "" {
			return invalidf("server %q: grant: client_credentials needs a clientId", c.ID)
		}
		if c.ClientSecretEnv == "" && c.PrivateKeyFile == "" {
			return invalidf("server %q: grant: client_credentials needs clientSecretEnv or privateKeyFile", c.ID)
		}
	case GrantJWTBearer:
		if (c.AssertionFile == "") == (c.AssertionEnv == "") {
			return invalidf("server %q: grant: jwt_bearer needs the workload's JWT in assertionFile or assertionEnv (one of them)", c.ID)
		}
	case GrantEnterprise:
		if c.ClientID == "" {
			return invalidf("server %q: grant: enterprise needs the clientId mcpgate has at the server's authorization server", c.ID)
		}
		if (c.IDTokenFile == "") == (c.IDTokenEnv == "") {
			return invalidf("server %q: grant: enterprise needs the ID token in idTokenFile or idTokenEnv (one of them)", c.ID)
		}
		if c.IDPTokenEndpoint == "" || c.IDPClientID == "" {
			return invalidf("server %q: grant: enterprise needs idpTokenEndpoint and idpClientId (mcpgate's client at the identity provider)", c.ID)
		}
		if err := ValidateURL(c.IDPTokenEndpoint); err != nil {
			return invalidf("server %q: idpTokenEndpoint: %v", c.ID, err)
		}
	default:
		names := make([]string, len(Grants))
		for i, g := range Grants {
			names[i] = string(g)
		}
		return invalidf("server %q: grant %q: must be one of %s", c.ID, c.Grant, strings.Join(names, ", "))
	}
	for _, f := range []struct{ name, value string }{{"assertionFile", c.AssertionFile}, {"idTokenFile", c.IDTokenFile}} {
		if f.value != "" && !filepath.IsAbs(f.value) {
			return invalidf("server %q: %s %q: must be an absolute path", c.ID, f.name, f.value)
		}
	}
	if c.Issuer == "" && (c.ClientID != "" || c.ClientSecretEnv != "" || c.PrivateKeyFile != "" || c.Grant.Machine()) {
		return invalidf("server %q: issuer: required with clientId, clientSecretEnv, privateKeyFile and the grants without a person: "+
			"the authorization server the client is registered with, the only one its credentials are sent to", c.ID)
	}
	return nil
}

// validateIssuer checks an issuer identifier (RFC 8414 §2): an https URL
// (http for a loopback host) with no query, fragment or credentials.
func validateIssuer(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Hostname() == "":
		return errors.New("must be an absolute URL, the authorization server's issuer identifier")
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return errors.New("an issuer identifier has no query, fragment or credentials")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && IsLoopbackHost(u.Hostname()):
		return nil
	}
	return errors.New("must be https (or http for a loopback host)")
}

var (
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// ValidateID checks a server ID against ^[a-z0-9][a-z0-9_-]{0,31}$.
func ValidateID(id string) error {
	if !isID(id) {
		return invalidf("server name %q: must match ^[a-z0-9][a-z0-9_-]{0,31}$ (lower-case letters, digits, '_' and '-', at most 32, starting with a letter or digit)", id)
	}
	return nil
}

// ValidateURL checks that raw is an absolute https URL, or http for a
// loopback host (see [IsLoopbackHost]), without credentials or a fragment,
// and with no character that does not show as itself: controls (C0, C1),
// bidirectional overrides, zero-width and other format characters, and
// spaces. Such a URL would read as another address than the one dialled.
func ValidateURL(raw string) error {
	if i := strings.IndexFunc(raw, invisible); i >= 0 {
		r, _ := utf8.DecodeRuneInString(raw[i:])
		return invalidf("url: contains the invisible or control character %U; type the address again", r)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalidf("url: not a valid URL")
	}
	raw = RedactURL(u)

	if u.User != nil {
		return invalidf("url: must not carry credentials (user:password@)")
	}
	if u.Fragment != "" {
		return invalidf("url %q: must not have a fragment", raw)
	}
	switch u.Scheme {
	case "ws", "wss", "unix", "file", "stdio":
		return invalidf("url %q: scheme %s is not supported; mcpgate connects to remote servers over Streamable HTTP only", raw, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return invalidf("url %q: must be absolute, with a host", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !IsLoopbackHost(u.Hostname()) {
			return invalidf("url %q: http is only allowed for loopback hosts (localhost, 127.0.0.0/8, [::1]); use https", raw)
		}
	default:
		return invalidf("url %q: scheme must be https (or http for loopback)", raw)
	}
	return nil
}

// invisible reports a rune that does not show as itself: anything
// [unicode.IsPrint] refuses (controls, format characters such as the bidi
// overrides and zero-width spaces, separators other than the ASCII space)
// and the space itself, which no URL holds unescaped.
func invisible(r rune) bool {
	return r == ' ' || r == utf8.RuneError || !unicode.IsPrint(r)
}

// RedactURL shows a URL without what may carry a secret: user info is
// dropped, each query parameter keeps its name but its value becomes "…"
// (a parameter without "=" is all "…"), and a fragment becomes "…". So
// https://x/mcp?api_key=s3cret shows as https://x/mcp?api_key=….
func RedactURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, p := range parts {
			if name, _, ok := strings.Cut(p, "="); ok && name != "" {
				parts[i] = name + "=…"
			} else {
				parts[i] = "…"
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	hadFragment := c.Fragment != ""
	c.Fragment, c.RawFragment = "", ""
	out := c.String()
	if hadFragment {
		out += "#…" // through String it would read #%E2%80%A6
	}
	return out
}

// ShowURL is raw as a person may see it in a listing: redacted (see
// [RedactURL]) and with every invisible or control character removed, so
// a URL that was configured before [ValidateURL] refused them still
// prints safely. What does not parse shows as "(not a valid URL)".
func ShowURL(raw string) string {
	raw = strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(raw, ""))
	u, err := url.Parse(raw)
	if err != nil {
		return "(not a valid URL)"
	}
	return RedactURL(u)
}

// SafeCode returns code when it matches [A-Za-z0-9_.-]{1,40}, else "":
// a provider's error code reaches models and people as it is, so text
// that is not a code is dropped, never cut or cleaned into one. That is
// what an error code looks like: an OAuth error ("invalid_token"), a
// JSON-RPC code ("-32042"), a dotted name; anything else is remote prose.
func SafeCode(code string) string {
	if len(code) < 1 || len(code) > 40 {
		return ""
	}
	for i := range len(code) {
		if c := code[i]; !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return ""
		}
	}
	return code
}

// isID is ^[a-z0-9][a-z0-9_-]{0,31}$, without a regular expression: a
// counted repetition compiles to a program of one state per count, which
// every process paid for at start.
func isID(id string) bool {
	if len(id) < 1 || len(id) > 32 {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') && (i == 0 || c != '_' && c != '-') {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// IsLoopbackHost reports whether host (no port) is localhost, in
// 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// State is the truth about one server's connection.
type State string

// The states a server can be in.
const (
	StateDisconnected State = "disconnected"
	StateConnecting   State = "connecting"
	StateReady        State = "ready"
	StateNeedsAuth    State = "needs-auth"
	StateError        State = "error"
)

// Category is the safe, attributed kind of an error. It is the only part of
// an error (with the HTTP status and provider code) that may reach a model.
type Category string

// The error categories.
const (
	CategoryInvalid     Category = "invalid"     // bad input or configuration
	CategoryNotFound    Category = "not-found"   // unknown server, tool, prompt or resource
	CategoryDisabled    Category = "disabled"    // server or tool disabled by the user
	CategoryAuth        Category = "auth"        // authorization needed or refused
	CategoryNetwork     Category = "network"     // could not reach the server, or the connection dropped
	CategoryHTTP        Category = "http"        // the server answered with an HTTP error
	CategoryProtocol    Category = "protocol"    // the server broke the MCP protocol or a bound
	CategoryRemote      Category = "remote"      // the server answered with a JSON-RPC error
	CategoryTimeout     Category = "timeout"     // the operation ran out of time
	CategoryCancelled   Category = "cancelled"   // the operation was cancelled
	CategoryUnsupported Category = "unsupported" // out of scope (stdio, SSE, URL elicitation...)
	CategoryConflict    Category = "conflict"    // already exists
	CategoryPolicy      Category = "policy"      // refused by the outbound network policy (package netpolicy)
	CategoryInternal    Category = "internal"    // a bug in mcpgate
)

// Error is an attributed error: what kind, the HTTP status and provider code
// when the remote side gave them, and a message safe to show a person.
// Err keeps the cause for errors.Is and errors.As; its text is not safe for
// a model.
type Error struct {
	Category   Category
	HTTPStatus int
	// Code is the provider's error code: a JSON-RPC code or an OAuth error.
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return string(e.Category)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrX) work for the sentinel of e's category.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.cat == e.Category
}

type sentinel struct {
	cat Category
	msg string
}

func (s *sentinel) Error() string { return s.msg }

// Sentinels, one per category; errors.Is matches any [*Error] of that category.
var (
	// ErrInvalid reports bad input or configuration.
	ErrInvalid error = &sentinel{CategoryInvalid, "invalid"}
	// ErrNotFound reports an unknown server, tool, prompt or resource.
	ErrNotFound error = &sentinel{CategoryNotFound, "not found"}
	// ErrDisabled reports a server or tool the user disabled.
	ErrDisabled error = &sentinel{CategoryDisabled, "disabled"}
	// ErrAuthRequired reports that the server needs (new) authorization.
	ErrAuthRequired error = &sentinel{CategoryAuth, "authorization required"}
	// ErrNetwork reports that the server could not be reached.
	ErrNetwork error = &sentinel{CategoryNetwork, "network error"}
	// ErrTimeout reports that an operation ran out of time.
	ErrTimeout error = &sentinel{CategoryTimeout, "timed out"}
	// ErrCancelled reports that an operation was cancelled.
	ErrCancelled error = &sentinel{CategoryCancelled, "cancelled"}
	// ErrUnsupported reports something mcpgate deliberately does not do.
	ErrUnsupported error = &sentinel{CategoryUnsupported, "unsupported"}
	// ErrConflict reports that something already exists.
	ErrConflict error = &sentinel{CategoryConflict, "already exists"}
	// ErrProtocol reports a server that broke the protocol or a bound.
	ErrProtocol error = &sentinel{CategoryProtocol, "protocol error"}
)

// CategoryOf returns the category of err: that of the first [*Error] in its
// chain, else that of a sentinel it wraps, else [CategoryInternal].
func CategoryOf(err error) Category {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Category
	}
	var s *sentinel
	if errors.As(err, &s) {
		return s.cat
	}
	return CategoryInternal
}

// Errorf returns an [*Error] of category cat with a formatted message. A %w
// verb sets Err.
func Errorf(cat Category, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Category: cat, Message: err.Error(), Err: errors.Unwrap(err)}
}

func invalidf(format string, args ...any) *Error { return Errorf(CategoryInvalid, format, args...) }
