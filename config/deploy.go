package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/names"
)

// EnvDeploy names the environment variable holding the deployment file's
// path, for commands given no --deploy.
const EnvDeploy = "MCPGATE_DEPLOY"

// EnvDatabase names the environment variable that gives the database when
// the deployment file has no "database".
const EnvDatabase = "MCPGATE_DATABASE_URL"

// Deployment is the file `mcpgate serve --http` runs from: one gateway for
// many people, in tenants, on replicas sharing one PostgreSQL database.
// [LoadDeployment] reads it; it is never written by mcpgate.
//
// A Deployment does not change once loaded and is safe for concurrent use.
type Deployment struct {
	// Path is where the file was read.
	Path string
	// PublicURL is where callers reach the gateway: https (http only on
	// loopback, for tests), no trailing slash. Sign-in callbacks are
	// built on it.
	PublicURL string
	// Database is the PostgreSQL connection string, with ${VAR}
	// references expanded. It may hold a password: never print it.
	Database string
	Auth     InboundAuth
	Network  Network

	tenants map[string]*Tenant
	byClaim map[string]string // tenant claim value → tenant ID
}

// InboundAuth says how callers prove who they are. Every request must
// carry one of the enabled credentials.
type InboundAuth struct {
	// APIKeys accepts keys made with `mcpgate keys create`.
	APIKeys bool
	// OIDC, when set, accepts JWTs its issuer signed.
	OIDC *OIDC
}

// OIDC is an OpenID Connect issuer whose JWTs the gateway accepts as
// bearer tokens.
type OIDC struct {
	// Issuer is the issuer URL exactly as its tokens' iss claim says it;
	// its discovery document is at Issuer/.well-known/openid-configuration.
	Issuer string
	// Audience must be one of a token's aud values.
	Audience string
	// TenantClaim names the claim whose value (a string) chooses the
	// tenant: a tenant's ID, or its TenantClaimValue. Empty when Tenant
	// is set.
	TenantClaim string
	// Tenant is the one tenant of every token, for an issuer that serves
	// one tenant only. Empty when TenantClaim is set.
	Tenant string
	// UserClaim names the claim (a string) that identifies the person:
	// "sub" unless configured.
	UserClaim string
}

// Network is the outbound network policy's setting for this deployment.
type Network struct {
	// AllowPrivate lets upstream servers resolve to private addresses
	// (10/8, 172.16/12, 192.168/16, fc00::/7). Loopback, link-local and
	// cloud metadata addresses stay refused.
	AllowPrivate bool
	// Allow lists further ranges upstream servers may resolve to, in CIDR
	// form: an internal server on a loopback or private address the
	// operator trusts ("127.0.0.1/32" for a sidecar). Link-local and
	// cloud metadata addresses stay refused whatever it lists.
	Allow []netip.Prefix
}

// Tenant is one organisation using the gateway: its servers and limits.
// Nothing of one tenant is visible to another.
type Tenant struct {
	// ID follows the server ID rule (see [mcpgate.ValidateID]).
	ID string
	// Name is a display name; empty means the ID.
	Name string
	// TenantClaimValue is the value of the OIDC tenant claim that means
	// this tenant; empty means the ID itself.
	TenantClaimValue string
	// Servers are sorted by ID.
	Servers []TenantServer
	Limits  Limits
}

// SignIn says whose upstream credential a server's requests carry.
type SignIn string

// The kinds of sign-in.
const (
	// SignInUser: each person signs in for themselves, and their
	// credential is used for their requests only. The default.
	SignInUser SignIn = "user"
	// SignInTenant: one credential, signed in once, serves every person
	// of the tenant. Credentials held by the gateway itself (a machine
	// grant, a bearer token from its environment) are always this kind.
	SignInTenant SignIn = "tenant"
)

// TenantServer is a server of a tenant: an entry of today's config shape,
// and whose sign-in it uses.
type TenantServer struct {
	mcpgate.ServerConfig
	SignIn SignIn
}

// Limits bound what a tenant may ask of the gateway; zero means no limit.
type Limits struct {
	RequestsPerMinute int
	ConcurrentCalls   int
}

// DeployOptions configure [LoadDeployment]. A nil *DeployOptions means
// defaults.
type DeployOptions struct {
	// Getenv reads the environment for "database" and its ${VAR}
	// references; nil means os.Getenv.
	Getenv func(string) string
}

// LoadDeployment reads and validates the deployment file at path: JSON,
// comments and trailing commas allowed. Every error is of
// [mcpgate.CategoryInvalid] (or [mcpgate.CategoryNotFound] for a missing
// file) and names the file and the setting, never a value that may be
// secret.
func LoadDeployment(path string, opts *DeployOptions) (*Deployment, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, mcpgate.Errorf(mcpgate.CategoryNotFound, "deployment file %s does not exist", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the deployment file: %w", err)
	}
	return ParseDeployment(path, data, opts)
}

// ParseDeployment is [LoadDeployment] of data already read; path names it
// in errors.
func ParseDeployment(path string, data []byte, opts *DeployOptions) (*Deployment, error) {
	var o DeployOptions
	if opts != nil {
		o = *opts
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	d, err := parseDeployment(path, data, o.Getenv)
	if err != nil {
		return nil, mcpgate.Errorf(mcpgate.CategoryOf(err), "deployment %s: %w", path, err)
	}
	return d, nil
}

// The top-level settings, in the order the documentation gives them.
var deployKeys = []string{"publicURL", "database", "auth", "network", "tenants"}

func parseDeployment(path string, data []byte, getenv func(string) string) (*Deployment, error) {
	data = stripJSONC(trimBOM(data))
	if err := checkSyntax(data); err != nil {
		return nil, invalidf("%v", err)
	}
	top, err := strictObject("top level", data, deployKeys)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Path: path}
	if d.PublicURL, err = publicURL(top); err != nil {
		return nil, err
	}
	if d.Database, err = database(top, getenv); err != nil {
		return nil, err
	}
	if err := d.readTenants(top); err != nil {
		return nil, err
	}
	if d.Auth, err = d.readAuth(top); err != nil {
		return nil, err
	}
	if raw, ok := lookup(top, "network"); ok {
		members, err := strictObject("network", raw, []string{"allowPrivate", "allow"})
		if err != nil {
			return nil, err
		}
		if err := optional(members, "network", "allowPrivate", &d.Network.AllowPrivate); err != nil {
			return nil, err
		}
		var ranges []string
		if err := optional(members, "network", "allow", &ranges); err != nil {
			return nil, invalidf("network.allow: must be a list of address ranges such as \"10.20.0.0/16\"")
		}
		for _, r := range ranges {
			p, err := netip.ParsePrefix(r)
			if err != nil {
				return nil, invalidf("network.allow: %q is not an address range such as \"10.20.0.0/16\"", r)
			}
			d.Network.Allow = append(d.Network.Allow, p.Masked())
		}
	}
	return d, nil
}

// strictObject reads the members of the object raw at path, refusing any
// key not in known: a misspelt security setting must not be silently
// ignored.
func strictObject(path string, raw json.RawMessage, known []string) ([]member, error) {
	members, err := decodeObject(raw)
	if err != nil {
		return nil, invalidf("%s: %v", path, err)
	}
	for _, m := range members {
		if !slices.Contains(known, m.Key) {
			return nil, unknownSetting(path, m.Key, known)
		}
	}
	return members, nil
}

func unknownSetting(path, key string, known []string) error {
	msg := fmt.Sprintf("%s: %q is not a setting", path, key)
	if c := names.Closest(key, known, 2); len(c) > 0 {
		msg += "; did you mean " + strings.Join(c, " or ") + "?"
	} else {
		msg += " (settings: " + strings.Join(known, ", ") + ")"
	}
	return invalidf("%s", msg)
}

// optional decodes the member key of members into v, if present and not
// null; path.key names it in the error.
func optional[T any](members []member, path, key string, v *T) error {
	raw, ok := lookup(members, key)
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidf("%s.%s: must be %s", path, key, kindOf(v))
	}
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case *bool:
		return "true or false"
	case *string:
		return "a string"
	case *int:
		return "a whole number"
	}
	return "valid"
}

func publicURL(top []member) (string, error) {
	var raw string
	if v, ok := lookup(top, "publicURL"); ok && json.Unmarshal(v, &raw) != nil {
		return "", invalidf("publicURL: must be a string")
	}
	if raw == "" {
		return "", invalidf("publicURL: required: the https URL callers reach the gateway at")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return "", invalidf("publicURL: must be an absolute URL such as https://mcp.example.com")
	}
	switch {
	case u.User != nil:
		return "", invalidf("publicURL: must not carry credentials (user:password@)")
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, "?#"):
		return "", invalidf("publicURL %q: must not have a query or fragment", mcpgate.RedactURL(u))
	case u.Scheme == "https":
	case u.Scheme == "http" && mcpgate.IsLoopbackHost(u.Hostname()):
		// Tests run the gateway on loopback without certificates.
	default:
		return "", invalidf("publicURL %q: must be https (http only for a loopback host, in tests)", mcpgate.RedactURL(u))
	}
	return strings.TrimSuffix(raw, "/"), nil
}

// database is the "database" setting with its ${VAR} references expanded,
// else $MCPGATE_DATABASE_URL. Its value is never put in an error: it may
// hold a password.
func database(top []member, getenv func(string) string) (string, error) {
	var raw string
	if v, ok := lookup(top, "database"); ok && json.Unmarshal(v, &raw) != nil {
		return "", invalidf("database: must be a string")
	}
	if raw == "" {
		if dsn := getenv(EnvDatabase); dsn != "" {
			return dsn, nil
		}
		return "", invalidf("database: required: a PostgreSQL URL, e.g. \"${%s}\" (or leave it out and set %s)", EnvDatabase, EnvDatabase)
	}
	dsn, err := mcpgate.ExpandRefs(raw, getenv)
	if err != nil {
		// ExpandRefs names the variable, never a value.
		return "", invalidf("database: %v", err)
	}
	if strings.TrimSpace(dsn) == "" {
		return "", invalidf("database: is empty once its references are expanded")
	}
	return dsn, nil
}

var authKeys = []string{"apiKeys", "oidc"}

func (d *Deployment) readAuth(top []member) (InboundAuth, error) {
	a := InboundAuth{APIKeys: true}
	raw, ok := lookup(top, "auth")
	if !ok {
		return a, nil
	}
	members, err := strictObject("auth", raw, authKeys)
	if err != nil {
		return a, err
	}
	if err := optional(members, "auth", "apiKeys", &a.APIKeys); err != nil {
		return a, err
	}
	if raw, ok := lookup(members, "oidc"); ok {
		if a.OIDC, err = d.readOIDC(raw); err != nil {
			return a, err
		}
	}
	if !a.APIKeys && a.OIDC == nil {
		return a, invalidf("auth: nobody could sign in: enable apiKeys or configure oidc")
	}
	return a, nil
}

var oidcKeys = []string{"issuer", "audience", "tenantClaim", "tenant", "userClaim"}

func (d *Deployment) readOIDC(raw json.RawMessage) (*OIDC, error) {
	const path = "auth.oidc"
	members, err := strictObject(path, raw, oidcKeys)
	if err != nil {
		return nil, err
	}
	o := &OIDC{}
	for i, v := range []*string{&o.Issuer, &o.Audience, &o.TenantClaim, &o.Tenant, &o.UserClaim} {
		if err := optional(members, path, oidcKeys[i], v); err != nil {
			return nil, err
		}
	}
	if o.Issuer == "" {
		return nil, invalidf("%s.issuer: required: the issuer URL, exactly as its tokens' iss says it", path)
	}
	u, err := url.Parse(o.Issuer)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		!(u.Scheme == "https" || u.Scheme == "http" && mcpgate.IsLoopbackHost(u.Hostname())) {
		return nil, invalidf("%s.issuer: must be an https URL without query or fragment (http only for a loopback host, in tests)", path)
	}
	if o.Audience == "" {
		return nil, invalidf("%s.audience: required: the aud value tokens for this gateway carry", path)
	}
	switch {
	case o.TenantClaim == "" && o.Tenant == "":
		return nil, invalidf("%s: set tenantClaim (the claim naming the tenant) or tenant (one tenant for every token)", path)
	case o.TenantClaim != "" && o.Tenant != "":
		return nil, invalidf("%s: tenantClaim and tenant: set one of them", path)
	case o.Tenant != "":
		if _, ok := d.tenants[o.Tenant]; !ok {
			return nil, invalidf("%s.tenant %q: no such tenant in tenants", path, o.Tenant)
		}
	}
	if o.UserClaim == "" {
		o.UserClaim = "sub"
	}
	return o, nil
}

var tenantKeys = []string{"name", "tenantClaimValue", "mcpServers", "limits"}

func (d *Deployment) readTenants(top []member) error {
	raw, ok := lookup(top, "tenants")
	if !ok {
		return invalidf("tenants: required: at least one tenant, keyed by tenant ID")
	}
	tenants, err := decodeObject(raw)
	if err != nil {
		return invalidf("tenants: %v (keyed by tenant ID)", err)
	}
	if len(tenants) == 0 {
		return invalidf("tenants: required: at least one tenant, keyed by tenant ID")
	}
	d.tenants = make(map[string]*Tenant, len(tenants))
	d.byClaim = make(map[string]string, len(tenants))
	for _, m := range tenants {
		t, err := readTenant(m.Key, m.Value)
		if err != nil {
			return err
		}
		claim := t.claimValue()
		if other, ok := d.byClaim[claim]; ok {
			return invalidf("tenants.%s.tenantClaimValue: %q already means tenant %q", t.ID, claim, other)
		}
		d.tenants[t.ID], d.byClaim[claim] = t, t.ID
	}
	return nil
}

func readTenant(id string, raw json.RawMessage) (*Tenant, error) {
	if mcpgate.ValidateID(id) != nil {
		return nil, invalidf("tenants: %q: a tenant ID must match ^[a-z0-9][a-z0-9_-]{0,31}$ (lower-case letters, digits, '_' and '-', at most 32, starting with a letter or digit)", id)
	}
	path := "tenants." + id
	members, err := strictObject(path, raw, tenantKeys)
	if err != nil {
		return nil, err
	}
	t := &Tenant{ID: id}
	if err := optional(members, path, "name", &t.Name); err != nil {
		return nil, err
	}
	if len(t.Name) > 128 {
		return nil, invalidf("%s.name: at most 128 bytes", path)
	}
	if err := optional(members, path, "tenantClaimValue", &t.TenantClaimValue); err != nil {
		return nil, err
	}
	if _, ok := lookup(members, "tenantClaimValue"); ok && t.TenantClaimValue == "" {
		return nil, invalidf("%s.tenantClaimValue: must not be empty (leave it out to use the tenant ID)", path)
	}
	if raw, ok := lookup(members, "limits"); ok {
		if t.Limits, err = readLimits(path+".limits", raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := lookup(members, "mcpServers"); ok {
		servers, err := decodeObject(raw)
		if err != nil {
			return nil, invalidf("%s.mcpServers: %v (keyed by server ID)", path, err)
		}
		for _, m := range servers {
			s, err := readTenantServer(m.Key, m.Value)
			if err != nil {
				return nil, mcpgate.Errorf(mcpgate.CategoryOf(err), "tenant %q: %w", id, err)
			}
			t.Servers = append(t.Servers, s)
		}
	}
	slices.SortFunc(t.Servers, func(a, b TenantServer) int { return strings.Compare(a.ID, b.ID) })
	return t, nil
}

// maxLimit keeps a limit a number people mean, not an overflow.
const maxLimit = 1_000_000

func readLimits(path string, raw json.RawMessage) (Limits, error) {
	var l Limits
	keys := []string{"requestsPerMinute", "concurrentCalls"}
	members, err := strictObject(path, raw, keys)
	if err != nil {
		return l, err
	}
	for i, v := range []*int{&l.RequestsPerMinute, &l.ConcurrentCalls} {
		if err := optional(members, path, keys[i], v); err != nil {
			return l, err
		}
		if *v < 0 || *v > maxLimit {
			return l, invalidf("%s.%s: must be between 0 (no limit) and %d", path, keys[i], maxLimit)
		}
	}
	return l, nil
}

// tenantServerKeys are the members a deployment's server entry may have
// beyond those of [mcpgate.ServerConfig]: "type" (checked as in the config
// file) and "signIn".
var tenantServerKeys = []string{"type", "signIn"}

// readTenantServer reads a server entry with today's rules, then those of
// a gateway many people share: no unknown members, no secrets in headers,
// and credentials the gateway holds itself only as a tenant's sign-in.
func readTenantServer(id string, raw json.RawMessage) (TenantServer, error) {
	e, err := decodeEntry(id, raw)
	if err != nil {
		return TenantServer{}, err
	}
	known := slices.Clone(tenantServerKeys)
	for _, f := range fields {
		known = append(known, f.key)
	}
	for _, m := range e.members {
		if !slices.Contains(known, m.Key) {
			return TenantServer{}, unknownSetting(fmt.Sprintf("server %q", id), m.Key, known)
		}
	}
	s := TenantServer{ServerConfig: e.cfg, SignIn: SignInUser}
	if raw, ok := lookup(e.members, "signIn"); ok {
		if err := json.Unmarshal(raw, &s.SignIn); err != nil || (s.SignIn != SignInUser && s.SignIn != SignInTenant) {
			return s, invalidf("server %q: signIn: must be \"user\" (each person signs in) or \"tenant\" (one sign-in for the tenant)", id)
		}
		if s.Auth == mcpgate.AuthNone {
			return s, invalidf("server %q: signIn: a server with auth none has no sign-in", id)
		}
	}
	if err := checkShared(s); err != nil {
		return s, err
	}
	return s, nil
}

// checkShared applies the rules of a gateway many people share to one
// server entry.
func checkShared(s TenantServer) error {
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		v := s.Headers[k]
		if strings.Contains(v, "${") {
			return invalidf("server %q: headers: %q: ${…} references are refused in a deployment: the gateway's environment would be sent on every person's requests; use auth oauth, or bearer with signIn \"tenant\"", s.ID, k)
		}
		if why := secretHeader(k, v); why != "" {
			return invalidf("server %q: headers: %q %s: a literal credential in the deployment file would be sent on every person's requests; use auth oauth, or bearer with signIn \"tenant\"", s.ID, k, why)
		}
	}
	own := ""
	switch {
	case s.BearerTokenEnv != "":
		own = "bearerTokenEnv (a token from the gateway's environment)"
	case s.Grant.Machine():
		own = fmt.Sprintf("grant %s (the gateway signs in as itself)", s.Grant)
	}
	if own != "" && s.SignIn != SignInTenant {
		return invalidf("server %q: %s gives every person of the tenant the same credential: say so with \"signIn\": \"tenant\"", s.ID, own)
	}
	return nil
}

// sensitiveHeaderWords are parts of header names that carry credentials.
var sensitiveHeaderWords = []string{"auth", "token", "secret", "key", "password", "passwd", "cookie", "session", "signature", "credential"}

// secretHeader says why a header looks like it carries a secret, or "".
// It errs on the side of refusing: a refused header costs an operator a
// minute, a leaked one costs a tenant its account.
func secretHeader(name, value string) string {
	lname := strings.ToLower(name)
	for _, w := range sensitiveHeaderWords {
		if strings.Contains(lname, w) {
			return "is named like a credential"
		}
	}
	v := strings.TrimSpace(value)
	if scheme, _, ok := strings.Cut(v, " "); ok && slices.Contains([]string{"bearer", "basic", "dpop", "token"}, strings.ToLower(scheme)) {
		return "holds a credential"
	}
	if looksRandom(v) {
		return "holds a value that looks like a credential (long and random)"
	}
	return ""
}

// looksRandom reports a long run of token characters mixing letters and
// digits, as API keys, JWTs and UUIDs are; words, hosts and version
// numbers are not.
func looksRandom(v string) bool {
	if utf8.RuneCountInString(v) < 20 {
		return false
	}
	var letters, digits int
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters++
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune("-_.+/=~:", r):
		default:
			return false // a space, say: text, not a token
		}
	}
	return letters > 0 && digits >= 3
}

func (t *Tenant) claimValue() string {
	if t.TenantClaimValue != "" {
		return t.TenantClaimValue
	}
	return t.ID
}

// DisplayName is the name people see.
func (t *Tenant) DisplayName() string {
	if t.Name != "" {
		return t.Name
	}
	return t.ID
}

// Server returns the tenant's server id.
func (t *Tenant) Server(id string) (TenantServer, bool) {
	i := slices.IndexFunc(t.Servers, func(s TenantServer) bool { return s.ID == id })
	if i < 0 {
		return TenantServer{}, false
	}
	return t.Servers[i], true
}

// ServerConfigs returns the tenant's servers as the manager takes them.
func (t *Tenant) ServerConfigs() []mcpgate.ServerConfig {
	out := make([]mcpgate.ServerConfig, len(t.Servers))
	for i, s := range t.Servers {
		out[i] = clone(s.ServerConfig)
	}
	return out
}

// TenantIDs returns every tenant's ID, sorted.
func (d *Deployment) TenantIDs() []string {
	return slices.Sorted(maps.Keys(d.tenants))
}

// Tenant returns a copy of the tenant id.
func (d *Deployment) Tenant(id string) (*Tenant, bool) {
	t, ok := d.tenants[id]
	if !ok {
		return nil, false
	}
	c := *t
	c.Servers = make([]TenantServer, len(t.Servers))
	for i, s := range t.Servers {
		c.Servers[i] = TenantServer{ServerConfig: clone(s.ServerConfig), SignIn: s.SignIn}
	}
	return &c, true
}

// HasTenant reports whether the tenant id is configured.
func (d *Deployment) HasTenant(id string) bool {
	_, ok := d.tenants[id]
	return ok
}

// TenantForClaim returns the ID of the tenant a token's tenant claim value
// means: the tenant whose TenantClaimValue it is, else the tenant with
// that ID (when it has no TenantClaimValue).
func (d *Deployment) TenantForClaim(value string) (string, bool) {
	id, ok := d.byClaim[value]
	return id, ok
}
