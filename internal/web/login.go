package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/oauth"
)

// loginState is the last sign-in started from the page for one server.
type loginState struct {
	state   string // "waiting", "done" or "failed"
	message string
	issuers []string // the choice to make, when the server has several
}

// loginView is a sign-in's progress as the page shows it: never a URL,
// state, code or token.
type loginView struct {
	State   string   `json:"state"`
	Message string   `json:"message"`
	Issuers []string `json:"issuers,omitempty"`
}

func (s *Server) setLogin(id string, l *loginState) {
	s.mu.Lock()
	s.logins[id] = l
	s.mu.Unlock()
	s.events.publish()
}

func (s *Server) forgetLogin(id string) {
	s.mu.Lock()
	delete(s.logins, id)
	s.mu.Unlock()
}

func (s *Server) loginView(id string) *loginView {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logins[id]
	if l == nil {
		return nil
	}
	return &loginView{State: l.state, Message: l.message, Issuers: l.issuers}
}

// loginTicket lets one new tab start one sign-in: the page gets it by a
// JSON POST (which the Origin check guards), so no link or image on
// another page, not even one on another loopback port whose requests
// carry the SameSite cookie, can start a sign-in.
type loginTicket struct {
	server, issuer string
	expiry         time.Time
}

// ticketTTL bounds the time between the button and its tab.
const ticketTTL = time.Minute

// serveLoginTicket answers the page's sign-in button with the address for
// its new tab.
func (s *Server) serveLoginTicket(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Server string `json:"server"`
		Issuer string `json:"issuer"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	cfg, err := s.opts.Manager.Config(req.Server)
	if err != nil {
		writeError(w, err)
		return
	}
	if s.opts.OAuth == nil || cfg.Auth != mcpgate.AuthOAuth {
		writeError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "server %q does not use OAuth; there is nothing to sign in to", cfg.ID))
		return
	}
	ticket, err := newToken()
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	now := timeNow()
	for t, tk := range s.tickets {
		if now.After(tk.expiry) {
			delete(s.tickets, t)
		}
	}
	s.tickets[ticket] = loginTicket{server: cfg.ID, issuer: req.Issuer, expiry: now.Add(ticketTTL)}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"url": "/login/start?ticket=" + ticket})
}

// takeTicket spends a sign-in ticket.
func (s *Server) takeTicket(ticket string) (loginTicket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tk, ok := s.tickets[ticket]
	delete(s.tickets, ticket)
	return tk, ok && !timeNow().After(tk.expiry)
}

// startWait bounds how long /login/start waits for the authorization URL
// (discovery and registration) before telling the person to look at the
// page.
var startWait = 30 * time.Second

// serveLoginStart is where the page's "Sign in" button sends a new tab,
// with a ticket from serveLoginTicket. It
// starts the login here, in the server process, and answers with a
// redirect to the authorization URL the login produced, so the person signs
// in in their own browser and the callback lands on this page's own origin
// (/callback, handed to the login by oauth.Client.CompleteRedirect); no
// state or code passes through the page's scripts. A login that ends
// before it needs the person (a concurrent sign-in, client credentials, an
// error) is shown in the tab and on the page.
func (s *Server) serveLoginStart(w http.ResponseWriter, r *http.Request) {
	tk, ok := s.takeTicket(r.URL.Query().Get("ticket"))
	if !ok {
		s.loginPage(w, http.StatusForbidden, "Start from the settings page", "This sign-in address was already used or has expired. Press Sign in on the settings page again.")
		return
	}
	id, issuer := tk.server, tk.issuer
	cfg, err := s.opts.Manager.Config(id)
	if err != nil {
		s.loginPage(w, http.StatusNotFound, "No such server", "This server is not configured.")
		return
	}
	if s.opts.OAuth == nil || cfg.Auth != mcpgate.AuthOAuth {
		s.loginPage(w, http.StatusBadRequest, "Nothing to sign in to", "Server "+id+" does not use OAuth.")
		return
	}
	urls := make(chan string, 1)
	done := make(chan *loginState, 1)
	s.setLogin(id, &loginState{state: "waiting", message: "Waiting for you to sign in in the new tab…"})
	s.goBackground(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, s.opts.LoginTimeout)
		defer cancel()
		res, err := s.opts.OAuth.Login(ctx, cfg, &oauth.LoginOptions{
			Issuer:      issuer,
			Timeout:     s.opts.LoginTimeout,
			RedirectURI: "http://" + s.opts.Addr + "/callback", // lands on this page's own origin
			Open: func(_ context.Context, authURL string) error {
				select {
				case urls <- authURL:
				default:
				}
				return nil
			},
		})
		l := loginOutcome(res, err)
		if err == nil {
			// The session (if any) still uses the old credential, or none.
			if err := s.opts.Manager.Reconnect(ctx, cfg.ID); err != nil {
				s.opts.Logger.Debug("reconnecting after sign-in", "server", cfg.ID, "error", clean(err.Error(), maxText))
			}
		}
		s.setLogin(cfg.ID, l)
		done <- l
	})
	t := time.NewTimer(startWait)
	defer t.Stop()
	select {
	case u := <-urls:
		if !isWebURL(u) {
			s.loginPage(w, http.StatusBadGateway, "Sign-in refused", "The authorization server's address is not an http or https URL.")
			return
		}
		http.Redirect(w, r, u, http.StatusFound)
	case l := <-done:
		title := "Signed in"
		if l.state != "done" {
			title = "Sign-in failed"
		}
		s.loginPage(w, http.StatusOK, title, l.message)
	case <-t.C:
		s.loginPage(w, http.StatusOK, "Still working", "The sign-in is taking long; the settings page shows how it ends.")
	case <-r.Context().Done():
	case <-s.ctx.Done():
		s.loginPage(w, http.StatusServiceUnavailable, "Stopped", "mcpgate ui is stopping.")
	}
}

// serveCallback hands the authorization server's redirect to the sign-in
// waiting for it; the card on the page shows how it ends.
func (s *Server) serveCallback(w http.ResponseWriter, r *http.Request) {
	if s.opts.OAuth == nil || !s.opts.OAuth.CompleteRedirect(r.URL.Query()) {
		s.loginPage(w, http.StatusBadRequest, "No sign-in is waiting", "This answer does not belong to a sign-in started on this page; start again from the settings page.")
		return
	}
	s.loginPage(w, http.StatusOK, "Signed in", "Return to the settings page: its card shows the outcome. You can close this tab.")
}

// loginOutcome says how a login ended, in words fit for the page.
func loginOutcome(res *oauth.LoginResult, err error) *loginState {
	if err == nil {
		msg := "Signed in"
		if res.Issuer != "" {
			msg += " with " + clean(res.Issuer, maxName)
		}
		if len(res.Scopes) > 0 {
			msg += " for " + clean(strings.Join(res.Scopes, " "), maxName)
		}
		if !res.Expiry.IsZero() {
			msg += ", until " + res.Expiry.Local().Format("2006-01-02 15:04")
		}
		if res.Refresh {
			msg += "; mcpgate renews it by itself"
		}
		return &loginState{state: "done", message: msg + "."}
	}
	l := &loginState{state: "failed", message: clean(err.Error(), maxText)}
	if e, ok := errors.AsType[*mcpgate.Error](err); ok && e.Code == "choose_issuer" {
		l.message = "This server accepts several authorization servers. Choose one and sign in again."
		l.issuers = issuersIn(e.Message)
	}
	return l
}

// issuersIn reads the authorization servers out of oauth's choose_issuer
// message ("…: https://a, https://b"), keeping only clean URLs.
func issuersIn(msg string) []string {
	i := strings.LastIndex(msg, ": ")
	if i < 0 {
		return nil
	}
	var out []string
	for _, p := range strings.Split(msg[i+2:], ", ") {
		if p = strings.TrimSpace(p); isWebURL(p) && len(p) <= maxName {
			out = append(out, p)
		}
	}
	return out
}

func isWebURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && !strings.ContainsAny(raw, " \t\r\n")
}
