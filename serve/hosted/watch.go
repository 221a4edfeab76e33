package hosted

import (
	"context"
	"errors"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
)

// recheckTimeout bounds one reconnect made because a credential changed
// elsewhere.
const recheckTimeout = 30 * time.Second

// watch follows the changes every replica makes to the store until the
// gateway closes. A credential that appeared (a sign-in finished on
// another replica) or went away (a logout there, a sign-in the
// authorization server ended) is rechecked in every workspace that uses
// it; a catalog another replica stored is taken by every workspace that
// answers from the stored one (manager.TakeStoredCatalog); a lost
// connection to the store (an empty Kind) rechecks everything.
func (g *Gateway) watch(w store.Watcher) {
	for g.ctx.Err() == nil {
		err := w.Watch(g.ctx, g.changed)
		if g.ctx.Err() != nil {
			return
		}
		g.opts.Logger.Warn("following the store's changes stopped; retrying", "error", mcpgate.Sanitize(errString(err), 300))
		select {
		case <-g.ctx.Done():
			return
		case <-time.After(time.Second):
		}
		g.changed(store.Change{}) // what changed meanwhile is unknown
	}
}

func errString(err error) string {
	if err == nil {
		return "it ended"
	}
	return err.Error()
}

// changed handles one change: it finds the workspaces it concerns and
// rechecks their server in the background (fn must not block).
func (g *Gateway) changed(c store.Change) {
	switch c.Kind {
	case store.ChangeCredential:
		for _, ws := range g.spaces.matching(func(ws *workspace) bool { return ws.ownerOf(c.Server) == c.Tenant }) {
			ws.recheck(c.Server)
		}
	case store.ChangeCatalog:
		// A person's catalogs are stored under their own owner key.
		for _, ws := range g.spaces.matching(func(ws *workspace) bool { return ws.owner == c.Tenant }) {
			ws.takeCatalog(c.Server)
		}
	case "":
		for _, ws := range g.spaces.matching(func(*workspace) bool { return true }) {
			for _, s := range ws.tenant.Servers {
				if s.Auth == mcpgate.AuthOAuth {
					ws.recheck(s.ID)
				}
			}
		}
	}
}

// takeCatalog has the workspace's manager take the server's stored
// catalog, in the background: it does so only while the server answers
// from a stored one (another replica listed it), and reads only the store.
func (ws *workspace) takeCatalog(id string) {
	if _, ok := ws.tenant.Server(id); !ok {
		return
	}
	ws.g.wg.Add(1)
	go func() {
		defer ws.g.wg.Done()
		ctx, cancel := context.WithTimeout(ws.g.ctx, recheckTimeout)
		defer cancel()
		if err := ws.m.TakeStoredCatalog(ctx, id); err != nil && ws.g.ctx.Err() == nil {
			ws.g.opts.Logger.Warn("taking a catalog another replica stored", "server", id, "error", mcpgate.Sanitize(err.Error(), 300))
		}
	}()
}

// recheck makes the server's state agree with its credential in the
// store: a live session whose credential is gone reconnects (and so ends
// needs-auth), a server waiting for a sign-in that now has one reconnects
// (and is ready). One recheck per server runs at a time.
func (ws *workspace) recheck(id string) {
	if _, ok := ws.tenant.Server(id); !ok {
		return
	}
	ws.mu.Lock()
	if ws.rechecking[id] {
		ws.mu.Unlock()
		return
	}
	ws.rechecking[id] = true
	ws.mu.Unlock()
	ws.g.wg.Add(1)
	go func() {
		defer ws.g.wg.Done()
		defer func() {
			ws.mu.Lock()
			delete(ws.rechecking, id)
			ws.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(ws.g.ctx, recheckTimeout)
		defer cancel()
		st, err := ws.m.Status(id)
		if err != nil {
			return
		}
		_, err = ws.g.opts.Store.GetCredential(ctx, ws.ownerOf(id), id)
		has := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return // the store will say again
		}
		switch {
		case !has && st.State == mcpgate.StateReady:
		case has && st.State == mcpgate.StateNeedsAuth:
		default:
			return
		}
		_ = ws.m.Reconnect(ctx, id) // the outcome is the server's state
	}()
}
