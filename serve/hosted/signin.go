package hosted

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/web"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/serve/ops"
	"github.com/mcpgate/mcpgate/store"
)

// signInTTL is how long a sign-in link works, and then how long the
// person has at the authorization server.
const signInTTL = 10 * time.Minute

// loginPayload is the Payload of a pending sign-in: who it is for, so the
// start page can say so. Nothing in it is secret.
type loginPayload struct {
	User string `json:"user"`
}

// webLogins implements gateway.Authenticator for a workspace: a sign-in
// is a link to this gateway's start page, which any replica serves.
type webLogins struct{ ws *workspace }

// StartLogin stores a pending sign-in for the server's credential and
// tells the model the link the person opens.
func (l *webLogins) StartLogin(ctx context.Context, cfg mcpgate.ServerConfig) (string, error) {
	ws := l.ws
	if cfg.Grant.Machine() {
		return "", errorf(mcpgate.CategoryInvalid, "server %q signs in without a person (grant %s); its requests sign in by themselves", cfg.ID, cfg.Grant)
	}
	payload, _ := json.Marshal(&loginPayload{User: ws.p.User})
	now := time.Now()
	in := &store.Interaction{ID: randomID(), Tenant: ws.ownerOf(cfg.ID), Server: cfg.ID, Kind: store.KindLogin,
		Message: "sign in to " + cfg.ID, Payload: payload, CreatedAt: now, Expiry: now.Add(signInTTL)}
	if err := ws.g.opts.Store.PutInteraction(ctx, in); err != nil {
		return "", mcpgate.Errorf(mcpgate.CategoryInternal, "storing the sign-in: %w", err)
	}
	link := ws.g.deploy.PublicURL + "/oauth/start/" + in.ID
	who := "the person"
	if in.Tenant == ws.p.Tenant {
		who = "the person (this sign-in is shared by everyone in " + ws.tenant.DisplayName() + ")"
	}
	return fmt.Sprintf("Give %s this link to sign in to %s in their browser: %s (it works once, for %d minutes). "+
		"When they have finished, call {\"action\":\"status\",\"server\":%q}.", who, cfg.ID, link, int(signInTTL.Minutes()), cfg.ID), nil
}

// Logout deletes the server's credential (revoking it where the
// authorization server allows); every replica's sessions with it end.
func (l *webLogins) Logout(ctx context.Context, cfg mcpgate.ServerConfig) error {
	ws := l.ws
	_, err := ws.client(cfg.ID).Logout(ctx, cfg)
	if err == nil {
		ws.g.opts.Audit.Record(ops.AuditEntry{Event: ops.EventLogout, Tenant: ws.p.Tenant, User: ws.p.User, Server: cfg.ID, TraceID: ops.TraceID(ctx)})
	}
	return err
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// pendingLogin finds the unexpired sign-in id, and the server it is for as
// the deployment has it now.
func (g *Gateway) pendingLogin(ctx context.Context, id string) (*store.Interaction, mcpgate.ServerConfig, *loginPayload, error) {
	in, err := g.opts.Store.Interaction(ctx, id)
	if err != nil || in.Kind != store.KindLogin {
		return nil, mcpgate.ServerConfig{}, nil, errGone
	}
	s, ok := g.server(in.Tenant, in.Server)
	if !ok {
		return nil, mcpgate.ServerConfig{}, nil, errGone
	}
	var p loginPayload
	_ = json.Unmarshal(in.Payload, &p) // only shown to the person
	return in, s.ServerConfig, &p, nil
}

var errGone = errors.New("this sign-in link has expired or was already used")

// serveStart is the page a sign-in link opens. GET shows whose sign-in it
// is and asks the person to go on (so a link someone else sent cannot sign
// them in unawares); POST, from that page only, begins the authorization
// and sends the browser to the authorization server.
func (g *Gateway) serveStart(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		in, cfg, p, err := g.pendingLogin(r.Context(), id)
		if err != nil {
			notice(w, http.StatusNotFound, "Sign-in link expired", "This sign-in link has expired or was already used. Ask your agent to sign in again.")
			return
		}
		tenant := TenantOf(in.Tenant)
		name := tenant
		if t, ok := g.deploy.Tenant(tenant); ok {
			name = t.DisplayName()
		}
		confirmPage(w, cfg.ID, name, p.User, in.Tenant == tenant)
	case http.MethodPost:
		if !web.SameOrigin(r) {
			notice(w, http.StatusForbidden, "Not allowed", "A sign-in can only be started from its own page.")
			return
		}
		in, cfg, p, err := g.pendingLogin(r.Context(), id)
		if err != nil {
			notice(w, http.StatusNotFound, "Sign-in link expired", "This sign-in link has expired or was already used. Ask your agent to sign in again.")
			return
		}
		// The link works once: the sign-in state begun now is what the
		// callback completes.
		if err := g.opts.Store.DeleteInteraction(r.Context(), in.Tenant, in.ID); err != nil {
			notice(w, http.StatusServiceUnavailable, "Try again", "The gateway could not start the sign-in just now. Reload this page to try again.")
			return
		}
		user := p.User
		audit := ops.AuditEntry{Tenant: TenantOf(in.Tenant), User: user, Server: cfg.ID, Remote: ops.RemoteAddr(r), TraceID: ops.TraceID(r.Context())}
		authURL, err := g.ownerClient(in.Tenant).Begin(r.Context(), cfg, &oauth.BeginOptions{RedirectURI: g.deploy.PublicURL + "/oauth/callback", Timeout: signInTTL})
		if err != nil {
			audit.Event, audit.Reason = ops.EventSignInFailed, ops.ReasonOf(err)
			g.opts.Audit.Record(audit)
			notice(w, http.StatusBadGateway, "Sign-in could not start", mcpgate.Sanitize(err.Error(), 400))
			return
		}
		audit.Event = ops.EventSignInStarted
		g.opts.Audit.Record(audit)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, authURL, http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		notice(w, http.StatusMethodNotAllowed, "Not allowed", "This page is opened, not sent to.")
	}
}

// ownerClient is an authorization client for the owner key's credentials:
// the tenant's shared client, or a new one for a person.
func (g *Gateway) ownerClient(owner string) *oauth.Client {
	if TenantOf(owner) == owner {
		return g.tenantClient(owner)
	}
	return g.oauthClient(owner)
}

// serveCallback completes a sign-in on whichever replica the browser comes
// back to: the flow is in the store.
func (g *Gateway) serveCallback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		notice(w, http.StatusMethodNotAllowed, "Not allowed", "This page is opened by your browser after a sign-in.")
		return
	}
	done, err := g.base.Finish(r.Context(), r.URL.Query(), func(owner, id string) (mcpgate.ServerConfig, bool) {
		s, ok := g.server(owner, id)
		return s.ServerConfig, ok
	})
	audit := ops.AuditEntry{Remote: ops.RemoteAddr(r), TraceID: ops.TraceID(r.Context())}
	if done != nil {
		tenant, user, _ := strings.Cut(done.Tenant, ":")
		audit.Tenant, audit.User, audit.Server = tenant, user, done.Server
	}
	if err != nil {
		if done != nil {
			audit.Event, audit.Reason = ops.EventSignInFailed, ops.ReasonOf(err)
			g.opts.Audit.Record(audit)
		}
		notice(w, http.StatusBadRequest, "Sign-in failed", mcpgate.Sanitize(err.Error(), 400)+" Ask your agent to sign in again.")
		return
	}
	audit.Event = ops.EventSignInCompleted
	g.opts.Audit.Record(audit)
	notice(w, http.StatusOK, "Signed in to "+done.Server, "You are signed in to "+done.Server+". You can close this page and go back to your agent.")
}

var pages = template.Must(template.New("").Parse(`
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · mcpgate</title><style>
:root{color-scheme:light dark;font-family:system-ui,sans-serif}
body{max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
h1{font-size:1.4rem}code{font-size:.95em}
button{font:inherit;padding:.5rem 1.2rem;border-radius:.4rem;border:1px solid #888;cursor:pointer}
.primary{background:#2563eb;color:#fff;border-color:#2563eb}
.muted{color:#777;font-size:.9rem}
</style></head><body>{{end}}
{{define "confirm"}}{{template "head" .}}<h1>Sign in to {{.Server}}</h1>
<p>Your agent asked to sign in to <strong>{{.Server}}</strong> through the mcpgate gateway of <strong>{{.Tenant}}</strong>,
{{if .Shared}}for everyone in {{.Tenant}}: the account you sign in with will serve all of them.{{else}}for <strong>{{.User}}</strong>.{{end}}</p>
<p>Go on only if you asked for this. Someone else's link would connect your account to them.</p>
<form method="post"><button class="primary" type="submit">Continue to sign in</button></form>
<p class="muted">The link works once and expires ten minutes after it was made.</p></body></html>{{end}}
`))

// notice shows a page with a title and a message.
func notice(w http.ResponseWriter, status int, title, message string) {
	web.WriteNotice(w, status, title, message)
}

func confirmPage(w http.ResponseWriter, server, tenant, user string, shared bool) {
	// The form's answer redirects to the authorization server.
	web.PageHeaders(w, "'self' https: http:")
	_ = pages.ExecuteTemplate(w, "confirm", map[string]any{"Title": "Sign in to " + server, "Server": server, "Tenant": tenant, "User": user, "Shared": shared})
}
