package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/store"
)

const credentialCols = `tenant, server, resource, issuer, client_id, redirect_uri, kind,
	access_token, token_type, refresh_token, expiry, scopes, step_up_scopes, step_up_count, updated_at, dpop_key, step_up_at`

func credentialName(tenant, server string) string {
	if tenant == "" {
		return fmt.Sprintf("credential for server %q", server)
	}
	return fmt.Sprintf("credential for server %q of tenant %q", server, tenant)
}

// GetCredential implements [store.Store].
func (s *Store) GetCredential(ctx context.Context, tenant, server string) (*store.Credential, error) {
	var c *store.Credential
	err := retry(ctx, func() (err error) {
		c, err = s.getCredential(ctx, s.db, tenant, server)
		return err
	})
	return c, err
}

func (s *Store) getCredential(ctx context.Context, q querier, tenant, server string) (*store.Credential, error) {
	row := q.QueryRowContext(ctx, `SELECT `+credentialCols+` FROM credentials WHERE tenant = ? AND server = ?`, tenant, server)
	var (
		c                            store.Credential
		expiry, updated, stepUpAt    sql.Null[int64]
		scopes, stepUpScopes         string
		sealedAT, sealedRT, sealedDK string
	)
	err := row.Scan(&c.Tenant, &c.Server, &c.Resource, &c.Issuer, &c.ClientID, &c.RedirectURI, &c.Kind,
		&sealedAT, &c.TokenType, &sealedRT, &expiry, &scopes, &stepUpScopes, &c.StepUpCount, &updated, &sealedDK, &stepUpAt)
	if err != nil {
		return nil, notFound(err, credentialName(tenant, server))
	}
	c.Expiry, c.UpdatedAt, c.StepUpAt = fromMicros(expiry), fromMicros(updated), fromMicros(stepUpAt)
	if c.Scopes, err = fromStrs(scopes); err != nil {
		return nil, err
	}
	if c.StepUpScopes, err = fromStrs(stepUpScopes); err != nil {
		return nil, err
	}
	aad := c.Binding.AAD()
	if c.AccessToken, err = s.open(credentialName(tenant, server)+": access token", sealedAT, aad); err != nil {
		return nil, err
	}
	if c.RefreshToken, err = s.open(credentialName(tenant, server)+": refresh token", sealedRT, aad); err != nil {
		return nil, err
	}
	if sealedDK != "" { // '' only in rows from before the column
		if c.DPoPKey, err = s.open(credentialName(tenant, server)+": DPoP key", sealedDK, aad); err != nil {
			return nil, err
		}
	}
	return &c, nil
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
	return s.write(ctx, func(t *tx) error {
		return t.putCredential(args)
	})
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
	return []any{c.Tenant, c.Server, c.Resource, c.Issuer, c.ClientID, c.RedirectURI, string(c.Kind),
		at, c.TokenType, rt, micros(c.Expiry), strs(c.Scopes), strs(c.StepUpScopes), c.StepUpCount, micros(c.UpdatedAt), dk, micros(c.StepUpAt)}, nil
}

func (t *tx) putCredential(args []any) error {
	_, err := t.conn.ExecContext(t.ctx, `INSERT OR REPLACE INTO credentials (`+credentialCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	if err != nil {
		return fmt.Errorf("putting credential: %w", err)
	}
	return nil
}

// DeleteCredential implements [store.Store].
func (s *Store) DeleteCredential(ctx context.Context, tenant, server string) error {
	return s.write(ctx, func(t *tx) error {
		return t.deleteCredential(tenant, server)
	})
}

func (t *tx) deleteCredential(tenant, server string) error {
	_, err := t.conn.ExecContext(t.ctx, `DELETE FROM credentials WHERE tenant = ? AND server = ?`, tenant, server)
	if err != nil {
		return fmt.Errorf("deleting credential: %w", err)
	}
	return nil
}

// UpdateCredential implements [store.Store]. It holds the database's
// write lock (see the package documentation) from before it reads the
// credential until fn's decision is committed. fn's context carries a mark
// that makes writes to this Store fail at once rather than deadlock.
func (s *Store) UpdateCredential(ctx context.Context, tenant, server string, fn store.UpdateFunc) (*store.Credential, error) {
	var (
		result *store.Credential
		fnErr  error
	)
	err := s.write(ctx, func(t *tx) error {
		cur, err := s.getCredential(t.ctx, t.conn, tenant, server)
		if errors.Is(err, store.ErrNotFound) {
			cur = nil
		} else if err != nil {
			return err
		}
		var next *store.Credential
		next, fnErr = fn(context.WithValue(ctx, inUpdateKey{}, s), cur)
		switch {
		case next == cur:
			result = cur
			return nil
		case next == nil:
			return t.deleteCredential(tenant, server)
		case next.Tenant != tenant || next.Server != server:
			return fmt.Errorf("updating %s: the update returned the %s", credentialName(tenant, server), credentialName(next.Tenant, next.Server))
		}
		args, err := s.credentialArgs(next)
		if err != nil {
			return err
		}
		result = next
		return t.putCredential(args)
	})
	if err != nil {
		return nil, errors.Join(err, fnErr)
	}
	return result, fnErr
}

const registrationCols = `tenant, issuer, redirect_uri, client_id, client_secret,
	client_secret_expires_at, token_endpoint_auth_method, created_at`

// GetRegistration implements [store.Store].
func (s *Store) GetRegistration(ctx context.Context, tenant, issuer, redirectURI string) (*store.Registration, error) {
	var (
		r               store.Registration
		sealed          string
		expires, create sql.Null[int64]
	)
	err := retry(ctx, func() error {
		return s.db.QueryRowContext(ctx, `SELECT `+registrationCols+` FROM registrations
			WHERE tenant = ? AND issuer = ? AND redirect_uri = ?`, tenant, issuer, redirectURI).
			Scan(&r.Tenant, &r.Issuer, &r.RedirectURI, &r.ClientID, &sealed, &expires, &r.TokenEndpointAuthMethod, &create)
	})
	what := fmt.Sprintf("client registration with %q", issuer)
	if err != nil {
		return nil, notFound(err, what)
	}
	r.ClientSecretExpiresAt, r.CreatedAt = fromMicros(expires), fromMicros(create)
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
	return s.write(ctx, func(t *tx) error {
		_, err := t.conn.ExecContext(t.ctx, `INSERT OR REPLACE INTO registrations (`+registrationCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Tenant, r.Issuer, r.RedirectURI, r.ClientID, secret, micros(r.ClientSecretExpiresAt), r.TokenEndpointAuthMethod, micros(r.CreatedAt))
		if err != nil {
			return fmt.Errorf("putting client registration: %w", err)
		}
		return nil
	})
}

// DeleteRegistration implements [store.Store].
func (s *Store) DeleteRegistration(ctx context.Context, tenant, issuer, redirectURI string) error {
	return s.write(ctx, func(t *tx) error {
		_, err := t.conn.ExecContext(t.ctx, `DELETE FROM registrations WHERE tenant = ? AND issuer = ? AND redirect_uri = ?`,
			tenant, issuer, redirectURI)
		if err != nil {
			return fmt.Errorf("deleting client registration: %w", err)
		}
		return nil
	})
}

const flowCols = `state, tenant, server, verifier, issuer, client_id, redirect_uri, resource, scopes, expiry`

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
	return s.write(ctx, func(t *tx) error {
		if err := t.purge("flows"); err != nil {
			return err
		}
		_, err := t.conn.ExecContext(t.ctx, `INSERT OR REPLACE INTO flows (`+flowCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			stateKey(f.State), f.Tenant, f.Server, verifier, f.Issuer, f.ClientID, f.RedirectURI, f.Resource, strs(f.Scopes), micros(f.Expiry))
		if err != nil {
			return fmt.Errorf("putting login flow: %w", err)
		}
		return nil
	})
}

// TakeFlow implements [store.Store]. A flow whose verifier does not open
// is deleted all the same and reported as [store.ErrSealed].
func (s *Store) TakeFlow(ctx context.Context, state string) (*store.Flow, error) {
	var (
		f       store.Flow
		sealed  string
		scopes  string
		expiry  sql.Null[int64]
		takeErr error
	)
	err := s.write(ctx, func(t *tx) error {
		// Purging first makes an expired flow not found.
		if err := t.purge("flows"); err != nil {
			return err
		}
		// The state is not named in errors: it guards the callback.
		var key string
		err := t.conn.QueryRowContext(t.ctx, `DELETE FROM flows WHERE state = ? RETURNING `+flowCols, stateKey(state)).
			Scan(&key, &f.Tenant, &f.Server, &sealed, &f.Issuer, &f.ClientID, &f.RedirectURI, &f.Resource, &scopes, &expiry)
		if errors.Is(err, sql.ErrNoRows) {
			takeErr = notFound(err, "login flow")
			return nil // commit the purge
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("taking login flow: %w", err)
	}
	if takeErr != nil {
		return nil, takeErr
	}
	f.State = state
	f.Expiry = fromMicros(expiry)
	if f.Scopes, err = fromStrs(scopes); err != nil {
		return nil, err
	}
	if f.Verifier, err = s.open("login flow: verifier", sealed, f.AAD()); err != nil {
		return nil, err
	}
	return &f, nil
}

// stateKey is how a flow's state is stored: its SHA-256, so the file never
// holds a value that would let someone forge the callback, not even in a
// freed page after the row is gone.
func stateKey(state string) string {
	sum := sha256.Sum256([]byte("mcpgate-flow-state\x00" + state))
	return hex.EncodeToString(sum[:])
}

// purge deletes the table's expired rows.
func (t *tx) purge(table string) error {
	_, err := t.conn.ExecContext(t.ctx, `DELETE FROM `+table+` WHERE expiry <= ?`, time.Now().UnixMicro())
	if err != nil {
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
	return s.write(ctx, func(t *tx) error {
		if err := t.purge("interactions"); err != nil {
			return err
		}
		_, err := t.conn.ExecContext(t.ctx, `INSERT OR REPLACE INTO interactions (`+interactionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			i.Tenant, i.ID, i.Server, i.Kind, i.Message, i.Payload, micros(i.CreatedAt), micros(i.Expiry))
		if err != nil {
			return fmt.Errorf("putting interaction: %w", err)
		}
		return nil
	})
}

// Interactions implements [store.Store]. Interactions created at the same
// time are ordered by ID.
func (s *Store) Interactions(ctx context.Context, tenant string) ([]*store.Interaction, error) {
	var list []*store.Interaction
	err := retry(ctx, func() error {
		list = nil
		rows, err := s.db.QueryContext(ctx, `SELECT `+interactionCols+` FROM interactions
			WHERE tenant = ? AND expiry > ? ORDER BY created_at, id`, tenant, time.Now().UnixMicro())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				i               store.Interaction
				created, expiry sql.Null[int64]
			)
			if err := rows.Scan(&i.Tenant, &i.ID, &i.Server, &i.Kind, &i.Message, &i.Payload, &created, &expiry); err != nil {
				return err
			}
			i.CreatedAt, i.Expiry = fromMicros(created), fromMicros(expiry)
			list = append(list, &i)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("listing interactions: %w", err)
	}
	return list, nil
}

// Interaction implements [store.Store].
func (s *Store) Interaction(ctx context.Context, id string) (*store.Interaction, error) {
	var found []*store.Interaction
	err := retry(ctx, func() error {
		found = nil
		rows, err := s.db.QueryContext(ctx, `SELECT `+interactionCols+` FROM interactions
			WHERE id = ? AND expiry > ? LIMIT 2`, id, time.Now().UnixMicro())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				i               store.Interaction
				created, expiry sql.Null[int64]
			)
			if err := rows.Scan(&i.Tenant, &i.ID, &i.Server, &i.Kind, &i.Message, &i.Payload, &created, &expiry); err != nil {
				return err
			}
			i.CreatedAt, i.Expiry = fromMicros(created), fromMicros(expiry)
			found = append(found, &i)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("reading interaction: %w", err)
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("interaction: %w", store.ErrNotFound)
	}
	return found[0], nil
}

// DeleteInteraction implements [store.Store].
func (s *Store) DeleteInteraction(ctx context.Context, tenant, id string) error {
	return s.write(ctx, func(t *tx) error {
		if err := t.purge("interactions"); err != nil {
			return err
		}
		_, err := t.conn.ExecContext(t.ctx, `DELETE FROM interactions WHERE tenant = ? AND id = ?`, tenant, id)
		if err != nil {
			return fmt.Errorf("deleting interaction: %w", err)
		}
		return nil
	})
}
