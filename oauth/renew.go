package oauth

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
)

// Renewing a credential in the background: a refresh (RFC 6749 §6), or
// a machine grant asked again. The store's write lock (SQLite's covers
// the whole database) is never held across the network: discovery comes
// first, outside every lock; the token request is made under the
// credential's renewal lock, a named lock across processes that blocks
// nothing else in the store; and its outcome is committed in one short
// write.

// commitTimeout bounds the write of a renewal's outcome, which is made
// even when the caller has given up: a rotated refresh token that is not
// stored is lost.
const commitTimeout = 30 * time.Second

// errStalePreparation says the credential changed between the renewal's
// preparation and taking the lock (another issuer or client): prepare
// again for the new one.
var errStalePreparation = errors.New("the credential changed while its renewal was prepared")

// renewal is what renewing one credential needs from the network, found
// before the renewal lock is taken.
type renewal struct {
	issuer, clientID string // what it was prepared for
	asm              *authServer
	ca               *clientAuth // the client of a refresh; nil for a machine grant (machineToken finds it)
}

// renewLockName names the lock renewals of one credential take.
func renewLockName(tenant, server string) string { return "renew\x00" + tenant + "\x00" + server }

// renew renews cfg's credential, read as cred, which is no longer fresh
// or whose access token rejected the server refused. Under the renewal
// lock it reads the credential again: another process may have renewed
// it while this one waited (its tokens are then used and nothing is
// sent), and a rotating refresh token must be spent only once. The new
// credential (nil when there is none any more) is committed before the
// lock is released.
func (c *Client) renew(ctx context.Context, cfg *mcpgate.ServerConfig, cred *store.Credential, rejected string) (*store.Credential, error) {
	for attempt := 0; ; attempt++ {
		var prep *renewal
		if cfg.Grant.Machine() || cred.RefreshToken != "" {
			var err error
			if prep, err = c.prepareRenewal(ctx, cfg, cred); err != nil {
				return nil, err
			}
		}
		cur, err := c.renewLocked(ctx, cfg, prep, rejected)
		switch {
		case errors.Is(err, errStalePreparation) && attempt == 0:
			cred = cur
			continue
		case errors.Is(err, errStalePreparation):
			return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "login_required", Err: err,
				Message: "the sign-in for " + cfg.ID + " changed twice while it was being renewed; sign in again with: mcpgate auth " + cfg.ID}
		}
		return cur, err
	}
}

// prepareRenewal finds, outside every lock, the metadata of the
// authorization server cred came from and, for a refresh, the client that
// obtained it.
func (c *Client) prepareRenewal(ctx context.Context, cfg *mcpgate.ServerConfig, cred *store.Credential) (*renewal, error) {
	ctx, cancel := context.WithTimeout(ctx, c.renewTimeout)
	defer cancel()
	asm, err := c.serverMetadata(ctx, cfg, cred.Issuer)
	if err != nil {
		return nil, err
	}
	r := &renewal{issuer: cred.Issuer, clientID: cred.ClientID, asm: asm}
	if !cfg.Grant.Machine() {
		if r.ca, err = c.clientForRefresh(ctx, cfg, cred, asm); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// renewLocked takes the renewal lock, reads the credential again and, if
// it still needs renewing, renews it with prep and commits the outcome.
func (c *Client) renewLocked(ctx context.Context, cfg *mcpgate.ServerConfig, prep *renewal, rejected string) (*store.Credential, error) {
	// The holder's token request is bounded by renewTimeout; waiting much
	// longer means it is stuck.
	wait, cancel := context.WithTimeout(ctx, 2*c.renewTimeout+time.Second)
	unlock, err := c.opts.Store.Lock(wait, renewLockName(c.opts.Tenant, cfg.ID))
	cancel()
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, &mcpgate.Error{Category: mcpgate.CategoryTimeout, Err: err,
				Message: "waiting for another mcpgate to finish renewing the sign-in for " + cfg.ID}
		}
		return nil, storeError("taking the credential's renewal lock", err)
	}
	defer unlock()
	cur, err := c.opts.Store.GetCredential(ctx, c.opts.Tenant, cfg.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, storeError("reading the credential", err)
	case !bound(cur, cfg):
		return nil, nil
	case cur.AccessToken != rejected && c.fresh(cur):
		c.refreshed(cfg, "shared")
		return cur, nil // renewed by someone else meanwhile
	case !cfg.Grant.Machine() && cur.RefreshToken == "":
		return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "login_required",
			Message: "the sign-in for " + cfg.ID + " expired and cannot be refreshed; sign in again with: mcpgate auth " + cfg.ID}
	case prep == nil || prep.issuer != cur.Issuer || (!cfg.Grant.Machine() && prep.clientID != cur.ClientID):
		return cur, errStalePreparation
	}
	next, err := c.exchange(ctx, cfg, cur, prep)
	var me *mcpgate.Error
	dead := err != nil && !cfg.Grant.Machine() && errors.As(err, &me) && me.Code == "invalid_grant"
	switch {
	case dead:
		c.refreshed(cfg, "invalid_grant")
	case err != nil:
		c.refreshed(cfg, "failed")
		return nil, err
	default:
		c.refreshed(cfg, "ok")
	}
	committed, cerr := c.commit(ctx, cfg, cur, next)
	switch {
	case cerr != nil:
		return nil, cerr
	case dead && committed == nil:
		return nil, err
	}
	return committed, nil
}

// refreshed tells Options.OnRefresh of a renewal's outcome.
func (c *Client) refreshed(cfg *mcpgate.ServerConfig, outcome string) {
	if c.opts.OnRefresh != nil {
		c.opts.OnRefresh(c.opts.Tenant, cfg.ID, outcome)
	}
}

// exchange asks the authorization server for cur's next tokens: the
// refresh_token grant with resource (and a proof by the credential's DPoP
// key), or a machine grant again, keeping the key. An invalid_grant
// refresh (the refresh token expired, was revoked, or was rotated by
// someone who then lost the answer) is an error only a person can fix.
func (c *Client) exchange(ctx context.Context, cfg *mcpgate.ServerConfig, cur *store.Credential, prep *renewal) (*store.Credential, error) {
	ctx, cancel := context.WithTimeout(ctx, c.renewTimeout)
	defer cancel()
	if cfg.Grant.Machine() {
		return c.machineToken(ctx, cfg, cur.Resource, prep.asm, cur.Scopes, cur, challenge{})
	}
	var key *dpopKey
	if cur.DPoPKey != "" {
		// RFC 9449 §5: the refresh proves possession of the key the
		// credential is bound to.
		var err error
		if key, err = decodeDPoPKey(cur.DPoPKey); err != nil {
			return nil, &mcpgate.Error{Category: mcpgate.CategoryInternal, Message: "reading the credential's DPoP key: " + err.Error()}
		}
	}
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {cur.RefreshToken},
		"resource":      {cur.Resource},
	}
	tr, err := c.requestToken(ctx, prep.asm, form, prep.ca, key)
	if err != nil {
		var me *mcpgate.Error
		if errors.As(err, &me) && me.Code == "invalid_grant" {
			return nil, &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: me.HTTPStatus, Code: "invalid_grant",
				Message: "the sign-in for " + cfg.ID + " was revoked or expired; sign in again with: mcpgate auth " + cfg.ID, Err: err}
		}
		return nil, err
	}
	c.logf(cfg.ID, "refreshed the access token")
	next := c.credentialFrom(cur.Binding, tr, cur.Scopes, cur, key)
	if next.RefreshToken == "" {
		next.RefreshToken = cur.RefreshToken // RFC 6749 §6: without a new one, the old one stays valid
	}
	return next, nil
}

// commit writes a renewal's outcome in one short write: next replaces
// was, nil deletes it. A credential that changed since was was read (a
// sign-in or a logout, which do not take the renewal lock) is kept, and
// returned. The write is made even when ctx is done.
func (c *Client) commit(ctx context.Context, cfg *mcpgate.ServerConfig, was, next *store.Credential) (*store.Credential, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	out, err := c.opts.Store.UpdateCredential(ctx, c.opts.Tenant, cfg.ID, func(_ context.Context, cur *store.Credential) (*store.Credential, error) {
		if cur == nil || cur.AccessToken != was.AccessToken || cur.RefreshToken != was.RefreshToken {
			return cur, nil
		}
		return next, nil
	})
	if err != nil {
		return nil, storeError("storing the renewed credential", err)
	}
	return out, nil
}
