// Package store defines where mcpgate keeps what must survive a process:
// credentials, OAuth client registrations, in-flight login state, pending
// interactions, the request log and each server's last valid catalog
// ([CatalogStore]). Backends live in sub-packages
// (store/sqlite, later store/postgres); store/storetest is the one
// behavioural suite every backend passes; store/seal encrypts the secret
// fields.
//
// Every secret field (tokens, client secrets, PKCE verifiers, DPoP keys) is sealed by
// the backend with AES-256-GCM before it is written, with the record's
// binding as additional data, so a sealed value copied to another row does
// not open.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// ErrNotFound is returned when a record does not exist (or has expired).
var ErrNotFound = errors.New("not found")

// ErrSealed is returned when a sealed value cannot be opened: wrong key, or
// a value moved to a record with another binding.
var ErrSealed = errors.New("sealed value cannot be opened with this key and binding")

// Binding is what a credential is bound to. A credential is only ever sent
// to the server it was bound to, obtained from the issuer it names, for the
// client and redirect URI it names.
type Binding struct {
	Tenant      string `json:"tenant,omitempty"` // "" for a single user
	Server      string `json:"server"`           // server ID
	Resource    string `json:"resource"`         // the MCP server URL (RFC 8707 resource)
	Issuer      string `json:"issuer,omitempty"` // authorization server; "" for bearer tokens
	ClientID    string `json:"clientId,omitempty"`
	RedirectURI string `json:"redirectUri,omitempty"`
}

// AAD is the additional data sealed values of this binding are bound to.
func (b Binding) AAD() []byte {
	return []byte(strings.Join([]string{"mcpgate-credential-v1", b.Tenant, b.Server, b.Resource, b.Issuer, b.ClientID, b.RedirectURI}, "\x00"))
}

// CredentialKind says what a credential holds.
type CredentialKind string

// Credential kinds.
const (
	KindOAuth  CredentialKind = "oauth"
	KindBearer CredentialKind = "bearer"
)

// Credential is one server's login for one tenant. The primary key is
// (Tenant, Server).
type Credential struct {
	Binding
	Kind         CredentialKind
	AccessToken  string // sealed at rest
	TokenType    string
	RefreshToken string // sealed at rest
	Expiry       time.Time
	Scopes       []string // granted scopes
	// StepUpScopes are the scopes a 403 insufficient_scope challenge asked
	// for; the next login requests them. StepUpCount counts the logins made
	// for step-ups in a row, StepUpAt is when the last of them was made.
	StepUpScopes []string
	StepUpCount  int
	StepUpAt     time.Time
	UpdatedAt    time.Time
	// DPoPKey is the private key the tokens are bound to when TokenType is
	// DPoP (RFC 9449), PKCS #8 DER in base64url; sealed at rest. It lives
	// as long as the credential: refreshes prove possession of the same
	// key.
	DPoPKey string
}

// Registration is an OAuth client registered with (or configured for) an
// authorization server. The primary key is (Tenant, Issuer, RedirectURI).
type Registration struct {
	Tenant                  string
	Issuer                  string
	RedirectURI             string
	ClientID                string
	ClientSecret            string // sealed at rest
	ClientSecretExpiresAt   time.Time
	TokenEndpointAuthMethod string // client_secret_basic, client_secret_post, none, private_key_jwt
	CreatedAt               time.Time
}

// AAD binds a registration's sealed secret to its key.
func (r *Registration) AAD() []byte {
	return []byte(strings.Join([]string{"mcpgate-registration-v1", r.Tenant, r.Issuer, r.RedirectURI, r.ClientID, r.TokenEndpointAuthMethod}, "\x00"))
}

// Flow is the state of one interactive login between sending the person to
// the authorization server and the callback. The primary key is State.
type Flow struct {
	State       string // random, unguessable; the key
	Tenant      string
	Server      string
	Verifier    string // PKCE code verifier, sealed at rest
	Issuer      string
	ClientID    string
	RedirectURI string
	Resource    string
	Scopes      []string
	Expiry      time.Time
}

// AAD binds a flow's sealed verifier to its state.
func (f *Flow) AAD() []byte {
	return []byte(strings.Join([]string{"mcpgate-flow-v1", f.State, f.Tenant, f.Server, f.Issuer, f.ClientID, f.RedirectURI, f.Resource, strings.Join(f.Scopes, " ")}, "\x00"))
}

// Interaction is something waiting for a person: a login to finish or a
// form elicitation to answer. Its ID and Message are never secrets.
type Interaction struct {
	ID        string
	Tenant    string
	Server    string
	Kind      string // "login" or "elicitation"
	Message   string
	Payload   []byte // JSON, kind-specific; never secret
	CreatedAt time.Time
	Expiry    time.Time
}

// MaxLogEntries is how many request log entries a store keeps per tenant;
// appending more deletes the oldest.
const MaxLogEntries = 1000

// LogEntry is one request mcpgate sent to a remote server: metadata only,
// never a payload, header, token or query string. ID orders entries; the
// store assigns it.
type LogEntry struct {
	ID       int64
	Tenant   string
	Time     time.Time // when the request was sent
	Server   string    // server ID
	Method   string    // JSON-RPC method, or the HTTP method for a request without one
	Tool     string    // tool name of a tools/call
	Duration time.Duration
	// Outcome is "ok", or the category of the failure: "http", "auth",
	// "remote" (a JSON-RPC error), "network", "timeout", "cancelled",
	// "protocol".
	Outcome    string
	HTTPStatus int // 0 when no response arrived
	BytesIn    int64
	BytesOut   int64
}

// KindLogin is the Kind of an interaction holding a sign-in a person was
// asked to begin, through a link to the gateway's page (serve --http).
// Its Payload names who it is for; the sign-in's own state is a [Flow],
// made when the person begins it.
const KindLogin = "login"

// KindQuestion is the Kind of an interaction holding a form elicitation
// that no agent host could show, for the settings page of any process.
const KindQuestion = "elicitation"

// Question is the Payload of a KindQuestion interaction: what the remote
// server asked (for the person, never a model) and, once answered, the
// answer.
type Question struct {
	Server  string          `json:"server"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema"`
	Answer  *Answer         `json:"answer,omitempty"`
}

// Answer is the person's answer to a question: accept (with content),
// decline or cancel.
type Answer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// UILockName names the lock the settings page holds while it runs, so
// another process knows a stored question can be answered.
func UILockName(tenant string) string { return "ui-open\x00" + tenant }

// UpdateFunc decides a credential's next value under its lock. cur is the
// credential as stored after the lock was taken (nil if none). Returning
// cur itself changes nothing; nil deletes; anything else is written. A
// non-nil error is returned by UpdateCredential after the change (if any)
// is committed, so a deletion can carry its reason. fn may read the store
// but must not write to it: a backend's lock may cover more than this one
// credential.
type UpdateFunc func(ctx context.Context, cur *Credential) (next *Credential, err error)

// Store is implemented by every backend. All methods are safe for
// concurrent use by many goroutines and, for the same data directory or
// database, by many processes.
type Store interface {
	// GetCredential returns ErrNotFound when there is none.
	GetCredential(ctx context.Context, tenant, server string) (*Credential, error)
	PutCredential(ctx context.Context, c *Credential) error
	// DeleteCredential succeeds when there is nothing to delete.
	DeleteCredential(ctx context.Context, tenant, server string) error
	// UpdateCredential runs fn holding the credential's lock, which excludes
	// every other UpdateCredential of the same (tenant, server) in this and
	// every other process sharing the store, and commits its decision. The
	// lock may cover more than this credential (SQLite's is the whole
	// database's write lock), so fn must decide quickly: no network I/O.
	// Work that waits on the network (a token refresh) runs under Lock and
	// commits its outcome with UpdateCredential. It returns the committed
	// value with fn's error; once fn has returned, its decision is
	// committed even if ctx is cancelled.
	UpdateCredential(ctx context.Context, tenant, server string, fn UpdateFunc) (*Credential, error)

	// Lock takes a named lock shared by every process using the store,
	// waiting until it is free or ctx is done. Unlike UpdateCredential it
	// blocks nothing else, so it may be held across the network (a token
	// refresh) or for minutes (an interactive login). A lock whose holder
	// dies is released.
	Lock(ctx context.Context, name string) (unlock func(), err error)

	// GetRegistration returns ErrNotFound when there is none.
	GetRegistration(ctx context.Context, tenant, issuer, redirectURI string) (*Registration, error)
	PutRegistration(ctx context.Context, r *Registration) error
	DeleteRegistration(ctx context.Context, tenant, issuer, redirectURI string) error

	// PutFlow stores a flow; its Expiry must be set.
	PutFlow(ctx context.Context, f *Flow) error
	// TakeFlow returns and deletes the flow; a flow is taken at most once,
	// and an expired one is ErrNotFound.
	TakeFlow(ctx context.Context, state string) (*Flow, error)

	// PutInteraction stores an interaction; its Expiry must be set.
	PutInteraction(ctx context.Context, i *Interaction) error
	// Interactions lists a tenant's unexpired interactions, oldest first.
	Interactions(ctx context.Context, tenant string) ([]*Interaction, error)
	// Interaction finds an unexpired interaction by its ID alone, whatever
	// its tenant (an interaction's ID is random, and the link a person
	// opens carries only it); ErrNotFound when there is none, or when two
	// tenants' interactions share the ID.
	Interaction(ctx context.Context, id string) (*Interaction, error)
	// DeleteInteraction succeeds when there is nothing to delete.
	DeleteInteraction(ctx context.Context, tenant, id string) error

	// AppendLog adds entries to the request log in one short write, then
	// deletes each tenant's oldest entries beyond [MaxLogEntries].
	AppendLog(ctx context.Context, entries []*LogEntry) error
	// RecentLog returns a tenant's last entries (all kept ones when last
	// is zero or less), in the order they were appended.
	RecentLog(ctx context.Context, tenant string, last int) ([]*LogEntry, error)

	Close() error
}
