// Package inbound decides who is calling `mcpgate serve --http`: every
// request carries a bearer credential, and [Authenticator.Authenticate]
// turns it into a [Principal] (tenant, user, how they proved it) or
// refuses it.
//
// # Credentials
//
// Two kinds are accepted, as the deployment file enables them (see
// [config.InboundAuth]):
//
//   - API keys, made by `mcpgate keys create`: "mgk_" + a 16-character ID +
//     "_" + a 52-character secret (256 random bits), in lower-case base32.
//     The ID finds the key in a [store.APIKeyStore]; only the SHA-256 of
//     the secret, bound to the ID, is stored, and it is compared in
//     constant time. A revoked key, or one whose tenant is no longer in
//     the deployment, is refused. See [NewKey].
//   - JWTs of the deployment's OpenID Connect issuer. go-oidc finds the
//     issuer's keys by discovery, caches them and fetches them again when
//     a token names a key it has not seen (the issuer rotated), at most
//     once per [Options.MinKeyRefresh]; only the issuer's asymmetric
//     algorithms are accepted, never "none" or an HMAC. Then iss must be
//     the issuer exactly, aud must include the audience, exp must be in
//     the future and nbf (when present) in the past, with a minute of
//     clock skew either way. The tenant claim must name a configured
//     tenant and the user claim must be a non-empty string. A
//     sender-constrained token (with a cnf claim) is refused: presented
//     as a bearer token, it is not being used by its holder.
//
// # Refusals
//
// Every refusal is [ErrUnauthenticated], whatever was wrong, so the
// caller learns nothing about which part failed; the front answers it
// with [Unauthorized] (401, WWW-Authenticate: Bearer, no body). The reason
// goes to [Options.Audit] with metadata only: the key's ID, never the
// key, the token or a claim the caller could have chosen. A failure of
// the gateway itself (the database, the issuer's discovery) is
// [ErrUnavailable] instead, which the front answers with 503: a caller
// whose credential is fine must not be told it is wrong.
//
//	auth, err := inbound.New(&inbound.Options{Deployment: d, Keys: pg.Keys(), Audit: logDecision})
//	...
//	p, err := auth.Authenticate(r)
//	switch {
//	case errors.Is(err, inbound.ErrUnauthenticated):
//		inbound.Unauthorized(w)
//		return
//	case err != nil:
//		http.Error(w, "try again later", http.StatusServiceUnavailable)
//		return
//	}
//	// serve p.Tenant's servers, with p.User's credentials
package inbound

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/store"
)

// ErrUnauthenticated is every refusal of a caller's credential: missing,
// malformed, unknown, wrong, revoked, expired, for another audience or
// tenant. It says nothing more, on purpose.
var ErrUnauthenticated = errors.New("unauthenticated")

// ErrUnavailable reports that a credential could not be checked because
// something the gateway depends on failed (the key store, the issuer's
// discovery). It is wrapped with the cause, which is for logs, not for
// the caller.
var ErrUnavailable = errors.New("authentication is unavailable")

// Via says how a caller proved who they are.
type Via string

// The kinds of credential.
const (
	ViaKey Via = "key"
	ViaJWT Via = "jwt"
)

// Principal is who is calling: every record and upstream credential the
// request touches is the tenant's, and the user's unless the server's
// sign-in is the tenant's (see [config.SignInTenant]).
type Principal struct {
	Tenant string
	// User is the user claim of a JWT, or the user an API key was made
	// for; a key made for no one is its own user, "key:" + its ID.
	User string
	Via  Via
	// KeyID is the API key's ID; empty for a JWT.
	KeyID string
}

// Reason is why a credential was refused, for the audit hook only.
type Reason string

// The reasons.
const (
	ReasonMissing     Reason = "missing"            // no Authorization header
	ReasonScheme      Reason = "scheme"             // not "Bearer"
	ReasonMalformed   Reason = "malformed"          // neither an API key nor a JWT, or a broken one
	ReasonDisabled    Reason = "disabled"           // a kind of credential the deployment does not accept
	ReasonUnknownKey  Reason = "unknown-key"        // no API key has this ID
	ReasonWrongSecret Reason = "wrong-secret"       // the key's ID exists, its secret does not match
	ReasonRevoked     Reason = "revoked"            // the key was revoked
	ReasonSignature   Reason = "signature"          // not signed by a published key of the issuer with its algorithms
	ReasonIssuer      Reason = "issuer"             // iss is another issuer
	ReasonAudience    Reason = "audience"           // aud does not include the gateway's audience
	ReasonExpired     Reason = "expired"            // exp has passed, or is missing
	ReasonNotYetValid Reason = "not-yet-valid"      // nbf is in the future
	ReasonClaim       Reason = "claim"              // the tenant or user claim is missing or not a usable string
	ReasonTenant      Reason = "tenant"             // no configured tenant by that claim, or the key's tenant is gone
	ReasonBound       Reason = "sender-constrained" // a token bound to a key (cnf), presented as a bearer token
	ReasonUnavailable Reason = "unavailable"        // not a refusal: the check itself failed (ErrUnavailable)
)

// Event is one decision, for the audit hook: metadata only, never a key,
// a token or a claim value the caller chose.
type Event struct {
	Time     time.Time
	Accepted bool
	// Reason is empty when Accepted.
	Reason Reason
	// Via is the kind of credential presented; empty when there was none
	// or it was neither kind.
	Via Via
	// KeyID is the ID of the API key presented, when it was well formed.
	KeyID string
	// Tenant and User are set once they are known from a verified
	// credential: always when Accepted.
	Tenant, User string
	// RemoteAddr is the request's.
	RemoteAddr string
}

// Options configure [New]. The struct is copied.
type Options struct {
	// Deployment gives the tenants and the accepted credentials
	// (Deployment.Auth). Required.
	Deployment *config.Deployment
	// Keys holds the API keys; required when the deployment accepts them.
	Keys store.APIKeyStore
	// HTTPClient fetches the issuer's discovery document and keys. nil
	// means a client of the Authenticator's own; a client without a
	// timeout gets one of 10 s, since go-oidc fetches keys in the
	// background with no deadline of its own.
	HTTPClient *http.Client
	// Audit, when set, is told of every decision, synchronously: it must
	// be quick and safe for concurrent use.
	Audit func(Event)
	// MinKeyRefresh bounds how often the issuer's keys are fetched again
	// for a token that names an unknown key; zero means 10 s. Without it,
	// a stream of forged tokens would make the gateway hammer the issuer.
	MinKeyRefresh time.Duration
}

// Authenticator checks inbound credentials. It is safe for concurrent
// use; [Authenticator.Close] releases its connections to the issuer.
type Authenticator struct {
	deploy *config.Deployment
	keys   store.APIKeyStore
	audit  func(Event)
	oidc   *issuer // nil when JWTs are not accepted

	mu      sync.Mutex
	touched map[string]time.Time // key ID → when its use was last recorded
}

// timeNow is the clock; tests move it.
var timeNow = time.Now

// touchEvery bounds how often one process records a key's use: the last
// use is for people reading `mcpgate keys list`, not worth a write per
// request.
const touchEvery = time.Minute

// New returns an Authenticator for the deployment. It makes no request:
// the issuer is discovered when the first JWT arrives, so the gateway
// starts (and serves API keys) while the issuer is unreachable.
func New(opts *Options) (*Authenticator, error) {
	if opts == nil || opts.Deployment == nil {
		return nil, errors.New("inbound: Options.Deployment is required")
	}
	o := *opts
	a := &Authenticator{deploy: o.Deployment, keys: o.Keys, audit: o.Audit, touched: make(map[string]time.Time)}
	if o.Deployment.Auth.APIKeys && o.Keys == nil {
		return nil, errors.New("inbound: the deployment accepts API keys: Options.Keys is required")
	}
	if oc := o.Deployment.Auth.OIDC; oc != nil {
		a.oidc = newIssuer(*oc, o.HTTPClient, o.MinKeyRefresh)
	}
	return a, nil
}

// Close releases the idle connections of the Authenticator's own HTTP
// client. Authenticate must not be called after.
func (a *Authenticator) Close() {
	if a.oidc != nil {
		a.oidc.close()
	}
}

// maxCredential bounds the Authorization header: a JWT with many claims
// is a few KiB.
const maxCredential = 16 << 10

// Authenticate returns who is calling, from the request's Authorization
// header (only there: never a query parameter or a cookie). Every refusal
// is [ErrUnauthenticated]; a failure to check is [ErrUnavailable].
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	ev := Event{Time: timeNow(), RemoteAddr: r.RemoteAddr}
	p, reason, err := a.authenticate(r.Context(), r, &ev)
	switch {
	case err != nil:
		ev.Reason = ReasonUnavailable
	case reason != "":
		ev.Reason = reason
		err = ErrUnauthenticated
	default:
		ev.Accepted, ev.Tenant, ev.User = true, p.Tenant, p.User
	}
	if a.audit != nil {
		a.audit(ev)
	}
	if err != nil {
		return Principal{}, err
	}
	return p, nil
}

// authenticate returns the principal, or the reason for refusing, or an
// error when the check itself failed.
func (a *Authenticator) authenticate(ctx context.Context, r *http.Request, ev *Event) (Principal, Reason, error) {
	values := r.Header.Values("Authorization")
	switch {
	case len(values) == 0:
		return Principal{}, ReasonMissing, nil
	case len(values) > 1 || len(values[0]) > maxCredential:
		return Principal{}, ReasonMalformed, nil
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, ReasonScheme, nil
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || strings.ContainsAny(token, " \t") {
		return Principal{}, ReasonMalformed, nil
	}
	if strings.HasPrefix(token, KeyPrefix) {
		ev.Via = ViaKey
		if !a.deploy.Auth.APIKeys {
			return Principal{}, ReasonDisabled, nil
		}
		return a.apiKey(ctx, token, ev)
	}
	if strings.Count(token, ".") == 2 {
		ev.Via = ViaJWT
		if a.oidc == nil {
			return Principal{}, ReasonDisabled, nil
		}
		return a.jwt(ctx, token, ev)
	}
	return Principal{}, ReasonMalformed, nil
}

func (a *Authenticator) apiKey(ctx context.Context, token string, ev *Event) (Principal, Reason, error) {
	id, secret, ok := parseKey(token)
	if !ok {
		return Principal{}, ReasonMalformed, nil
	}
	ev.KeyID = id
	k, err := a.keys.APIKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, ReasonUnknownKey, nil
	}
	if err != nil {
		return Principal{}, "", errors.Join(ErrUnavailable, err)
	}
	if !matches(k.Hash, id, secret) {
		return Principal{}, ReasonWrongSecret, nil
	}
	if k.Revoked() {
		return Principal{}, ReasonRevoked, nil
	}
	if !a.deploy.HasTenant(k.Tenant) {
		return Principal{}, ReasonTenant, nil
	}
	a.touch(ctx, id)
	user := k.User
	if user == "" {
		user = "key:" + id
	}
	return Principal{Tenant: k.Tenant, User: user, Via: ViaKey, KeyID: id}, "", nil
}

// touch records a key's use, at most once per touchEvery in this process.
// A failed write is not the caller's problem: the key was good.
func (a *Authenticator) touch(ctx context.Context, id string) {
	now := timeNow()
	a.mu.Lock()
	last, seen := a.touched[id]
	if seen && now.Sub(last) < touchEvery {
		a.mu.Unlock()
		return
	}
	a.touched[id] = now
	a.mu.Unlock()
	_ = a.keys.TouchAPIKey(ctx, id, now)
}

// Unauthorized answers a refused request: 401 with WWW-Authenticate:
// Bearer and nothing else, whatever the reason.
func Unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	w.WriteHeader(http.StatusUnauthorized)
}
