// Package web is the settings page of `mcpgate ui`: a local page, served on
// a loopback address only, where a person sees every configured server with
// its true state and catalog, and adds, imports, removes, connects,
// disconnects and signs in to servers, and switches tools on and off.
//
// # Who may talk to it
//
// The page is reachable by anything on the machine, and by any web page the
// person visits (through their browser). So every request must prove it
// comes from the page the person opened:
//
//   - the Host header must be the listen address (127.0.0.1:PORT or
//     localhost:PORT), which defeats DNS rebinding;
//   - the request must carry the page's session: each address [Server.URL]
//     makes carries its own token as ?token=, which opens the page once and
//     within ten minutes (the address the browser is started with is on its
//     command line, which every user of the machine can read); that first
//     request gets an HttpOnly, SameSite=Strict cookie named for the port
//     (browsers send a cookie to every port of a host, so two pages would
//     overwrite each other's), holding a session secret no address ever
//     carries, and a redirect to a clean URL;
//   - an Origin header, when present, must be the page's own origin, and
//     changes are POSTs with a JSON body, which a foreign page cannot send
//     without a CORS preflight this server never answers (CSRF);
//   - a request the browser marks (Sec-Fetch-Site) as coming from another
//     origin is refused. Pages on other loopback ports count as the same
//     site, so the SameSite cookie goes along with their links and images;
//     this stops them, and a sign-in needs a single-use ticket the page
//     gets by a JSON POST, so no link can start one.
//
// Everything else gets 403. Responses carry a strict Content-Security-Policy
// (no inline script, nothing from another origin), X-Frame-Options DENY,
// Referrer-Policy no-referrer and Cache-Control no-store.
//
// # What it shows
//
// Every server ([manager.Status] with the attributed error in plain words
// and the next step), its catalog with a switch per tool, sign-in and
// sign-out, add, import (preview, then confirm), connect, disconnect,
// reconnect and remove; [Server.StateChanged] feeds /events, a stream of
// server-sent events, so open pages follow state changes (they poll when
// the stream fails). When the page starts and whenever it is opened, the
// enabled servers without a live session are connected in the background,
// a few at a time, so their real states stream in; with
// [Options].ConfigPath, changes other processes make to the config file
// appear within a second. A catalog a process stored is shown marked
// cached, never as ready, and a count never loaded is unknown, not 0. Form elicitations given to [Server.Elicit] become
// cards until answered or until the call ends. A drawer shows the request
// log ([Options].Log) and exports its last 50 entries.
//
// Server-provided text (names, descriptions, errors) is sanitized and
// bounded here and inserted by the page as text, never as markup. No token,
// code, verifier or secret is ever sent to the page: a sign-in starts at
// /login/start (with a single-use ticket from POST /api/login), which
// answers with a redirect to the authorization server,
// and the outcome reaches the page as a state change.
//
// # The question page
//
// [QuestionPage] is not part of the settings page: it is what `serve
// --http` shows at /questions/{id}, on any replica, for a question a
// server asked that the agent host could not show ([store.KindQuestion]).
// It has no session: the random ID in the link is the capability. It is
// a plain HTML form, drawn on the server with no script, and writes the
// answer with the same function as the cards do, so a question is
// answered once whichever way it is answered.
//
// # Example
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	srv, _ := web.New(&web.Options{Manager: m, OAuth: client, Config: load, Addr: ln.Addr().String()})
//	fmt.Println(srv.URL())
//	_ = srv.Serve(ctx, ln) // until ctx ends
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store"
)

// cookiePrefix, followed by the port, names the cookie that holds the
// page's session once it has been opened.
const cookiePrefix = "mcpgate_ui_"

// launchTTL is how long an address from [Server.URL] opens the page if
// it is not used; once used, it is spent.
const launchTTL = 10 * time.Minute

// timeNow is the clock, a seam for tests.
var timeNow = time.Now

// ErrNotLoopback is returned by [New] for a listen address that is not a
// loopback IP address: the page must never be reachable from the network.
var ErrNotLoopback = errors.New("the settings page listens on a loopback address only (127.0.0.1 or ::1)")

// Options configures a [Server]. The struct is copied by [New].
type Options struct {
	// Manager is the running manager; its state is what the page shows.
	Manager *manager.Manager
	// OAuth signs in and out; nil hides sign-in.
	OAuth *oauth.Client
	// Config loads the config file afresh; every change is made on a fresh
	// copy, saved, then applied to Manager with Update.
	Config func() (*config.File, error)
	// ConfigPath, when set, is the file Config loads. The page follows it,
	// so what other processes change there (mcpgate add, an editor) is
	// applied to Manager and shown at once.
	ConfigPath string
	// Addr is the address the server listens on (host:port, port not 0);
	// its host must be a loopback IP.
	Addr string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Log reads the last n requests sent to remote servers, oldest first
	// (every process's, from the store); nil means Manager.RecentRequests,
	// this process's only.
	Log func(ctx context.Context, n int) ([]manager.RequestLogEntry, error)
	// LoginTimeout bounds a sign-in; zero means 5 minutes.
	LoginTimeout time.Duration
	// Questions, when set, is the store where other processes (mcpgate
	// serve) leave form elicitations their host could not show; the page
	// shows them as cards too and writes the answers back.
	Questions store.Store
	// Tenant is the tenant of those questions; "" for a single user.
	Tenant string
}

// Server is the settings page. Its methods are safe for concurrent use.
type Server struct {
	opts    Options
	session string          // the cookie's value; never in an address
	cookie  string          // the cookie's name, with the port
	hosts   map[string]bool // acceptable Host headers
	origins map[string]bool // acceptable Origin headers
	handler http.Handler
	events  *hub

	// edit serializes changes to the config file.
	edit sync.Mutex

	mu       sync.Mutex
	launches map[string]time.Time   // unused address tokens and when they expire
	tickets  map[string]loginTicket // unused sign-in tickets, by ticket
	logins   map[string]*loginState // by server ID
	pending  []*pending             // elicitations waiting, oldest first
	queued   map[string]bool        // servers waiting for or holding a background connect
	closed   bool                   // Close has begun: no new background work

	// ctx bounds background work (connects, sign-ins); cancelled by Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// slots bounds the background connects run at once.
	slots chan struct{}
}

// New returns a settings page for opts.Addr with a fresh random token.
func New(opts *Options) (*Server, error) {
	o := *opts
	if o.Manager == nil || o.Config == nil {
		return nil, errors.New("web: Manager and Config are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LoginTimeout <= 0 {
		o.LoginTimeout = 5 * time.Minute
	}
	ap, err := netip.ParseAddrPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("web: listen address %q: %w", o.Addr, err)
	}
	if !ap.Addr().IsLoopback() {
		return nil, ErrNotLoopback
	}
	if ap.Port() == 0 {
		return nil, fmt.Errorf("web: listen address %q has no port", o.Addr)
	}
	session, err := newToken()
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(int(ap.Port()))
	s := &Server{
		opts:     o,
		session:  session,
		cookie:   cookiePrefix + port,
		launches: map[string]time.Time{},
		tickets:  map[string]loginTicket{},
		hosts:    map[string]bool{ap.String(): true, net.JoinHostPort("localhost", port): true},
		origins:  map[string]bool{},
		events:   newHub(),
		logins:   map[string]*loginState{},
		queued:   map[string]bool{},
		slots:    make(chan struct{}, maxOpenConnects),
	}
	if ap.Addr().Is4() {
		s.hosts[net.JoinHostPort("127.0.0.1", port)] = true
	}
	for h := range s.hosts {
		s.origins["http://"+h] = true
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.handler = s.guard(s.routes())
	return s, nil
}

// newToken is 32 random bytes, base64url without padding.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("web: making the page token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// URL makes an address to open the page with: it carries a fresh token
// that opens the page once, within ten minutes. Make one for each use
// (one to print, one for the browser), so each is spent on its own.
func (s *Server) URL() string {
	token, err := newToken()
	if err != nil {
		return "http://" + s.opts.Addr + "/" // opens nothing: no token
	}
	s.mu.Lock()
	now := timeNow()
	for t, exp := range s.launches {
		if now.After(exp) {
			delete(s.launches, t)
		}
	}
	s.launches[token] = now.Add(launchTTL)
	s.mu.Unlock()
	return "http://" + s.opts.Addr + "/?token=" + token
}

// redeem spends an address token, reporting whether it was valid.
func (s *Server) redeem(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := false
	for t, exp := range s.launches {
		// Every one is compared, in constant time, so timing says nothing.
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 && !timeNow().After(exp) {
			ok = true
			delete(s.launches, t)
		}
	}
	return ok
}

// Handler serves the page, with every request checked (see the package
// documentation).
func (s *Server) Handler() http.Handler { return s.handler }

// StateChanged tells open pages that a server changed state; give it to
// manager.Options.OnStateChange. It never blocks.
func (s *Server) StateChanged(manager.Status) { s.events.publish() }

// Serve serves on ln until ctx ends, then closes the event streams, waits
// for background work and shuts the HTTP server down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if s.opts.Questions != nil {
		s.goBackground(s.watchStoredQuestions)
	}
	if s.opts.ConfigPath != "" {
		s.goBackground(s.watchConfig)
	}
	s.connectEnabled()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	return err
}

// Close ends the event streams and background work (a sign-in still
// waiting for the person is abandoned) and waits for them.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.events.close()
	s.wg.Wait()
}

// watchStoredQuestions tells open pages when the questions other processes
// stored change, since no event of this process announces them.
func (s *Server) watchStoredQuestions(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var ids []string
		for _, p := range s.storedQuestions(ctx) {
			ids = append(ids, p.ID)
		}
		if now := strings.Join(ids, ","); now != last {
			last = now
			s.events.publish()
		}
	}
}

// goBackground runs f in the background, bounded by the server's life;
// once Close has begun, f is not started.
func (s *Server) goBackground(f func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
}

// guard refuses what does not come from the page (see the package
// documentation) and sets the security headers on every answer.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")

		if !s.hosts[r.Host] {
			forbid(w, "this page answers only on its own address")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !s.origins[o] {
			forbid(w, "requests from other sites are refused")
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" &&
			r.URL.Path != "/callback" {
			forbid(w, "requests from other pages are refused; open the address mcpgate ui printed")
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/callback" {
			// The authorization server's redirect back to this page. It is
			// a cross-site navigation, so the SameSite=Strict cookie is not
			// sent; the login's state, checked by oauth, guards it instead.
			s.serveCallback(w, r)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/" && r.URL.Query().Has("token") {
			if !s.redeem(r.URL.Query().Get("token")) {
				forbid(w, "this address was already used or has expired; run mcpgate ui again for a new one")
				return
			}
			http.SetCookie(w, &http.Cookie{
				Name: s.cookie, Value: s.session, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode,
			})
			// A clean address: the token leaves the address bar and history.
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(s.cookie)
		if err != nil || !s.validSession(c.Value) {
			forbid(w, "missing or wrong page token; open the address mcpgate ui printed")
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				forbid(w, "changes must be sent as JSON")
				return
			}
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) validSession(v string) bool {
	return subtle.ConstantTimeCompare([]byte(v), []byte(s.session)) == 1
}

func forbid(w http.ResponseWriter, msg string) {
	http.Error(w, "forbidden: "+msg, http.StatusForbidden)
}
