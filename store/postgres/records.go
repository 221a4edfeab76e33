package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/store"
)

// writeTimeout bounds a write that must happen whatever the caller's
// context does (the decision of an UpdateCredential).
const writeTimeout = 30 * time.Second

const credentialCols = `tenant, server, resource, issuer, client_id, redirect_uri, kind,
	access_token, token_type, refresh_token, expiry, scopes, step_up_scopes, step_up_count, updated_at, dpop_key, step_up_at`

func credentialName(tenant, server string) string {
	if tenant == "" {
		return fmt.Sprintf("credential for server %q", server)
	}
	return fmt.Sprintf("credential for server %q of tenant %q", server, tenant)
}

// querier is the pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// GetCredential implements [store.Store].
func (s *Store) GetCredential(ctx context.Context, tenant, server string) (*store.Credential, error) {
	return s.getCredential(ctx, s.pool, tenant, server)
}

func (s *Store) getCredential(ctx context.Context, q querier, tenant, server string) (*store.Credential, error) {
	var (
		c                            store.Credential
		expiry, updated, stepUpAt    *time.Time
		sealedAT, sealedRT, sealedDK string
		kind                         string
	)
	err := q.QueryRow(ctx, `SELECT `+credentialCols+` FROM credentials WHERE tenant = $1 AND server = $2`, tenant, server).
		Scan(&c.Tenant, &c.Server, &c.Resource, &c.Issuer, &c.ClientID, &c.RedirectURI, &kind,
			&sealedAT, &c.TokenType, &sealedRT, &expiry, &c.Scopes, &c.StepUpScopes, &c.StepUpCount, &updated, &sealedDK, &stepUpAt)
	if err != nil {
		return nil, notFound(err, credentialName(tenant, server))
	}
	c.Kind = store.CredentialKind(kind)
	c.Expiry, c.UpdatedAt, c.StepUpAt = fromTS(expiry), fromTS(updated), fromTS(stepUpAt)
	aad := c.Binding.AAD()
	name := credentialName(tenant, server)
	if c.AccessToken, err = s.open(name+": access token", sealedAT, aad); err != nil {
		return nil, err
	}
	if c.RefreshToken, err = s.open(name+": refresh token", sealedRT, aad); err != nil {
		return nil, err
	}
	if c.DPoPKey, err = s.open(name+": DPoP key", sealedDK, aad); err != nil {
		return nil, err
	}
	return &c, nil
}

func (s *Store) credentialArgs(c *store.Credential) ([]any, error) {
	aad := c.Binding.AAD()
	at, err := s.seal(c.AccessToken, aad)
	if err != nil {
		return nil, err
	}
	rt, err := s.seal(c.RefreshToken, aad)
	if err != nil {
		return nil, err
	}
	dk, err := s.seal(c.DPoPKey, aad)
	if err != nil {
		return nil, err
	}
	scopes, stepUp := c.Scopes, c.StepUpScopes
	if scopes == nil {
		scopes = []string{}
	}
	if stepUp == nil {
		stepUp = []string{}
	}
	return []any{c.Tenant, c.Server, c.Resource, c.Issuer, c.ClientID, c.RedirectURI, string(c.Kind),
		at, c.TokenType, rt, ts(c.Expiry), scopes, stepUp, c.StepUpCount, ts(c.UpdatedAt), dk, ts(c.StepUpAt)}, nil
}

// PutCredential implements [store.Store].
func (s *Store) PutCredential(ctx context.Context, c *store.Credential) error {
	if c.Server == "" {
		return errors.New("putting credential: no server ID")
	}
	args, err := s.credentialArgs(c)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return putCredential(ctx, tx, args, c.Tenant, c.Server)
	})
}

func putCredential(ctx context.Context, tx pgx.Tx, args []any, tenant, server string) error {
	_, err := tx.Exec(ctx, `INSERT INTO credentials (`+credentialCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		ON CONFLICT (tenant, server) DO UPDATE SET
			resource = EXCLUDED.resource, issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
			redirect_uri = EXCLUDED.redirect_uri, kind = EXCLUDED.kind, access_token = EXCLUDED.access_token,
			token_type = EXCLUDED.token_type, refresh_token = EXCLUDED.refresh_token, expiry = EXCLUDED.expiry,
			scopes = EXCLUDED.scopes, step_up_scopes = EXCLUDED.step_up_scopes, step_up_count = EXCLUDED.step_up_count,
			updated_at = EXCLUDED.updated_at, dpop_key = EXCLUDED.dpop_key, step_up_at = EXCLUDED.step_up_at`, args...)
	if err != nil {
		return fmt.Errorf("putting credential: %w", err)
	}
	return notify(ctx, tx, store.Change{Kind: store.ChangeCredential, Tenant: tenant, Server: server})
}

// DeleteCredential implements [store.Store].
func (s *Store) DeleteCredential(ctx context.Context, tenant, server string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return deleteCredential(ctx, tx, tenant, server)
	})
}

func deleteCredential(ctx context.Context, tx pgx.Tx, tenant, server string) error {
	tag, err := tx.Exec(ctx, `DELETE FROM credentials WHERE tenant = $1 AND server = $2`, tenant, server)
	if err != nil {
		return fmt.Errorf("deleting credential: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	return notify(ctx, tx, store.Change{Kind: store.ChangeCredential, Tenant: tenant, Server: server})
}

// inUpdateKey marks the context UpdateCredential gives its function, with
// the lock key it holds.
type inUpdateKey struct{}

// errNestedUpdate is returned by an UpdateCredential of a credential from
// inside the function of an UpdateCredential of the same one, which would
// wait for the lock its own caller holds.
var errNestedUpdate = errors.New("updating a credential from inside its own UpdateCredential would deadlock: return the decision instead")

// UpdateCredential implements [store.Store]. It holds the credential's
// advisory lock (see the package documentation) from before it reads the
// credential until fn's decision is committed.
func (s *Store) UpdateCredential(ctx context.Context, tenant, server string, fn store.UpdateFunc) (*store.Credential, error) {
	key := s.key("credential", tenant+"\x00"+server)
	if held, _ := ctx.Value(inUpdateKey{}).(int64); held == key {
		return nil, errNestedUpdate
	}
	release, err := s.lock(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("updating %s: %w", credentialName(tenant, server), err)
	}
	defer release()
	cur, err := s.getCredential(ctx, s.pool, tenant, server)
	if errors.Is(err, store.ErrNotFound) {
		cur = nil
	} else if err != nil {
		return nil, err
	}
	next, fnErr := fn(context.WithValue(ctx, inUpdateKey{}, key), cur)
	if next == cur {
		return cur, fnErr
	}
	if next != nil && (next.Tenant != tenant || next.Server != server) {
		return nil, errors.Join(fmt.Errorf("updating %s: the update returned the %s", credentialName(tenant, server), credentialName(next.Tenant, next.Server)), fnErr)
	}
	// The decision is written even if the caller gave up meanwhile: a
	// rotated refresh token must not be lost.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if next == nil {
		if err := s.DeleteCredential(wctx, tenant, server); err != nil {
			return nil, errors.Join(err, fnErr)
		}
		return nil, fnErr
	}
	args, err := s.credentialArgs(next)
	if err != nil {
		return nil, errors.Join(err, fnErr)
	}
	err = pgx.BeginFunc(wctx, s.pool, func(tx pgx.Tx) error { return putCredential(wctx, tx, args, tenant, server) })
	if err != nil {
		return nil, errors.Join(err, fnErr)
	}
	return next, fnErr
}

const registrationCols = `tenant, issuer, redirect_uri, client_id, client_secret,
	client_secret_expires_at, token_endpoint_auth_method, created_at`

// GetRegistration implements [store.Store].
func (s *Store) GetRegistration(ctx context.Context, tenant, issuer, redirectURI string) (*store.Registration, error) {
	var (
		r               store.Registration
		sealed          string
		expires, create *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT `+registrationCols+` FROM registrations
		WHERE tenant = $1 AND issuer = $2 AND redirect_uri = $3`, tenant, issuer, redirectURI).
		Scan(&r.Tenant, &r.Issuer, &r.RedirectURI, &r.ClientID, &sealed, &expires, &r.TokenEndpointAuthMethod, &create)
	what := fmt.Sprintf("client registration with %q", issuer)
	if err != nil {
		return nil, notFound(err, what)
	}
	r.ClientSecretExpiresAt, r.CreatedAt = fromTS(expires), fromTS(create)
	if r.ClientSecret, err = s.open(what+": client secret", sealed, r.AAD()); err != nil {
		return nil, err
	}
	return &r, nil
}

// PutRegistration implements [store.Store].
func (s *Store) PutRegistration(ctx context.Context, r *store.Registration) error {
	if r.Issuer == "" {
		return errors.New("putting client registration: no issuer")
	}
	secret, err := s.seal(r.ClientSecret, r.AAD())
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO registrations (`+registrationCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (tenant, issuer, redirect_uri) DO UPDATE SET
			client_id = EXCLUDED.client_id, client_secret = EXCLUDED.client_secret,
			client_secret_expires_at = EXCLUDED.client_secret_expires_at,
			token_endpoint_auth_method = EXCLUDED.token_endpoint_auth_method, created_at = EXCLUDED.created_at`,
		r.Tenant, r.Issuer, r.RedirectURI, r.ClientID, secret, ts(r.ClientSecretExpiresAt), r.TokenEndpointAuthMethod, ts(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("putting client registration: %w", err)
	}
	return nil
}

// DeleteRegistration implements [store.Store].
func (s *Store) DeleteRegistration(ctx context.Context, tenant, issuer, redirectURI string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM registrations WHERE tenant = $1 AND issuer = $2 AND redirect_uri = $3`,
		tenant, issuer, redirectURI)
	if err != nil {
		return fmt.Errorf("deleting client registration: %w", err)
	}
	return nil
}

const flowCols = `state, tenant, server, verifier, issuer, client_id, redirect_uri, resource, scopes, expiry`

// stateKey is how a flow's state is stored: its SHA-256, so the database
// never holds a value that would let someone forge the callback.
func stateKey(state string) string {
	sum := sha256.Sum256([]byte("mcpgate-flow-state\x00" + state))
	return hex.EncodeToString(sum[:])
}

// PutFlow implements [store.Store]. A flow must have an expiry; expired
// flows are purged here and in TakeFlow.
func (s *Store) PutFlow(ctx context.Context, f *store.Flow) error {
	if f.State == "" || f.Expiry.IsZero() {
		return errors.New("putting login flow: a flow needs a state and an expiry")
	}
	verifier, err := s.seal(f.Verifier, f.AAD())
	if err != nil {
		return err
	}
	scopes := f.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := purge(ctx, tx, "flows"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO flows (`+flowCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (state) DO UPDATE SET tenant = EXCLUDED.tenant, server = EXCLUDED.server, verifier = EXCLUDED.verifier,
				issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id, redirect_uri = EXCLUDED.redirect_uri,
				resource = EXCLUDED.resource, scopes = EXCLUDED.scopes, expiry = EXCLUDED.expiry`,
			stateKey(f.State), f.Tenant, f.Server, verifier, f.Issuer, f.ClientID, f.RedirectURI, f.Resource, scopes, ts(f.Expiry))
		if err != nil {
			return fmt.Errorf("putting login flow: %w", err)
		}
		return nil
	})
}

// TakeFlow implements [store.Store]: one DELETE … RETURNING, so two
// replicas handling the same callback cannot both take the flow. A flow
// whose verifier does not open is deleted all the same and reported as
// [store.ErrSealed].
func (s *Store) TakeFlow(ctx context.Context, state string) (*store.Flow, error) {
	var (
		f      store.Flow
		sealed string
		key    string
		expiry *time.Time
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := purge(ctx, tx, "flows"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `DELETE FROM flows WHERE state = $1 RETURNING `+flowCols, stateKey(state)).
			Scan(&key, &f.Tenant, &f.Server, &sealed, &f.Issuer, &f.ClientID, &f.RedirectURI, &f.Resource, &f.Scopes, &expiry)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// The purge is rolled back with it, which costs nothing: the next
		// write purges again.
		return nil, notFound(err, "login flow")
	}
	if err != nil {
		return nil, fmt.Errorf("taking login flow: %w", err)
	}
	f.State = state
	f.Expiry = fromTS(expiry)
	if f.Verifier, err = s.open("login flow: verifier", sealed, f.AAD()); err != nil {
		return nil, err
	}
	return &f, nil
}

// purge deletes a table's expired rows.
func purge(ctx context.Context, tx pgx.Tx, table string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE expiry <= now()`); err != nil {
		return fmt.Errorf("purging expired %s: %w", table, err)
	}
	return nil
}

const interactionCols = `tenant, id, server, kind, message, payload, created_at, expiry`

// PutInteraction implements [store.Store]. An interaction must have an
// expiry; expired interactions are purged here and in DeleteInteraction.
func (s *Store) PutInteraction(ctx context.Context, i *store.Interaction) error {
	if i.ID == "" || i.Expiry.IsZero() {
		return errors.New("putting interaction: an interaction needs an ID and an expiry")
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := purge(ctx, tx, "interactions"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO interactions (`+interactionCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (tenant, id) DO UPDATE SET server = EXCLUDED.server, kind = EXCLUDED.kind, message = EXCLUDED.message,
				payload = EXCLUDED.payload, created_at = EXCLUDED.created_at, expiry = EXCLUDED.expiry`,
			i.Tenant, i.ID, i.Server, i.Kind, i.Message, i.Payload, ts(i.CreatedAt), ts(i.Expiry))
		if err != nil {
			return fmt.Errorf("putting interaction: %w", err)
		}
		return notify(ctx, tx, store.Change{Kind: store.ChangeInteraction, Tenant: i.Tenant, Server: i.Server})
	})
}

// Interactions implements [store.Store]. Interactions created at the same
// time are ordered by ID.
func (s *Store) Interactions(ctx context.Context, tenant string) ([]*store.Interaction, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+interactionCols+` FROM interactions
		WHERE tenant = $1 AND expiry > now() ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("listing interactions: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanInteraction)
	if err != nil {
		return nil, fmt.Errorf("listing interactions: %w", err)
	}
	return list, nil
}

// Interaction implements [store.Store].
func (s *Store) Interaction(ctx context.Context, id string) (*store.Interaction, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+interactionCols+` FROM interactions
		WHERE id = $1 AND expiry > now() LIMIT 2`, id)
	if err != nil {
		return nil, fmt.Errorf("reading interaction: %w", err)
	}
	found, err := pgx.CollectRows(rows, scanInteraction)
	if err != nil {
		return nil, fmt.Errorf("reading interaction: %w", err)
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("interaction: %w", store.ErrNotFound)
	}
	return found[0], nil
}

func scanInteraction(row pgx.CollectableRow) (*store.Interaction, error) {
	var (
		i               store.Interaction
		created, expiry *time.Time
	)
	if err := row.Scan(&i.Tenant, &i.ID, &i.Server, &i.Kind, &i.Message, &i.Payload, &created, &expiry); err != nil {
		return nil, err
	}
	i.CreatedAt, i.Expiry = fromTS(created), fromTS(expiry)
	return &i, nil
}

// DeleteInteraction implements [store.Store].
func (s *Store) DeleteInteraction(ctx context.Context, tenant, id string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := purge(ctx, tx, "interactions"); err != nil {
			return err
		}
		var server string
		err := tx.QueryRow(ctx, `DELETE FROM interactions WHERE tenant = $1 AND id = $2 RETURNING server`, tenant, id).Scan(&server)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("deleting interaction: %w", err)
		}
		return notify(ctx, tx, store.Change{Kind: store.ChangeInteraction, Tenant: tenant, Server: server})
	})
}
