package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on what the page is sent and accepts.
const (
	maxBody        = 16 << 20 // an imported file (~/.claude.json grows large), a form
	maxText        = 2000     // one description or message
	maxName        = 200      // one name, URL, type
	connectTimeout = 45 * time.Second
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveIndex)
	mux.Handle("GET /static/", http.FileServerFS(staticFS))
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.HandleFunc("GET /login/start", s.serveLoginStart)
	mux.HandleFunc("POST /api/login", s.serveLoginTicket)
	mux.HandleFunc("GET /api/servers", s.serveServers)
	mux.HandleFunc("POST /api/servers", s.serveAdd)
	mux.HandleFunc("GET /api/servers/{id}/tools", s.serveTools)
	mux.HandleFunc("POST /api/servers/{id}/tools", s.serveToggleTool)
	mux.HandleFunc("POST /api/servers/{id}/{op}", s.serveOp)
	mux.HandleFunc("POST /api/import/preview", s.serveImportPreview)
	mux.HandleFunc("POST /api/import", s.serveImport)
	mux.HandleFunc("GET /api/pending", s.servePending)
	mux.HandleFunc("GET /api/log", s.serveLog)
	mux.HandleFunc("GET /api/log/export", s.serveLogExport)
	mux.HandleFunc("POST /api/pending/{id}", s.serveAnswer)
	return mux
}

// clean makes remote or stored text safe to show: control characters
// stripped, secrets redacted, bounded.
func clean(s string, max int) string { return mcpgate.Sanitize(s, max) }

// serverView is one server as the page shows it. It holds no secret.
type serverView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	URL       string     `json:"url"`
	Auth      string     `json:"auth"`
	Enabled   bool       `json:"enabled"`
	State     string     `json:"state"`
	Error     *errorView `json:"error,omitempty"`
	Tools     int        `json:"tools"`
	Prompts   int        `json:"prompts"`
	Resources int        `json:"resources"`
	Stale     bool       `json:"stale,omitempty"`
	// Cached says the counts are of the catalog a process last stored,
	// listed at CachedAt, not of a live session (the state is then never
	// ready). Counts are -1 when unknown: never 0 for "not loaded".
	Cached   bool      `json:"cached,omitempty"`
	CachedAt time.Time `json:"cachedAt,omitzero"`
	// Disabled are the tools switched off in the config.
	Disabled []string `json:"disabled"`
	// CanSignIn is set for servers that sign in with OAuth.
	CanSignIn bool       `json:"canSignIn"`
	SignedIn  bool       `json:"signedIn"`
	Login     *loginView `json:"login,omitempty"`
}

// errorView is the attributed error in plain words, with what to do next.
type errorView struct {
	Category   string `json:"category"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Code       string `json:"code,omitempty"`
	Message    string `json:"message"`
	// Next says what to do; Action is the button that does it: "signin",
	// "reconnect" or empty.
	Next   string `json:"next"`
	Action string `json:"action,omitempty"`
	// Scopes are what a step-up needs (insufficient_scope).
	Scopes []string `json:"scopes,omitempty"`
}

func (s *Server) serveServers(w http.ResponseWriter, r *http.Request) {
	sts := s.opts.Manager.Statuses()
	out := make([]serverView, 0, len(sts))
	for _, st := range sts {
		out = append(out, s.view(r.Context(), st))
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": out, "signIn": s.opts.OAuth != nil})
}

func (s *Server) view(ctx context.Context, st manager.Status) serverView {
	v := serverView{
		ID: st.ID, Name: clean(st.Name, maxName), URL: clean(mcpgate.ShowURL(st.URL), maxName), Auth: string(st.Auth),
		Enabled: st.Enabled, State: string(st.State),
		Tools: st.Tools, Prompts: st.Prompts, Resources: st.Resources, Stale: st.Stale,
		Cached: st.Cached, CachedAt: st.CachedAt,
		Disabled: []string{},
	}
	if st.ConnectionID == 0 && !st.Cached {
		// No session and no stored catalog: what the server offers is not
		// known, and must not read as "0 tools".
		v.Tools, v.Prompts, v.Resources = -1, -1, -1
	}
	cfg, err := s.opts.Manager.Config(st.ID)
	if err == nil {
		for _, t := range cfg.DisabledTools {
			v.Disabled = append(v.Disabled, clean(t, maxName))
		}
	}
	v.CanSignIn = s.opts.OAuth != nil && st.Auth == mcpgate.AuthOAuth
	var stepUp []string
	if v.CanSignIn && err == nil {
		if ci, err := s.opts.OAuth.Credential(ctx, cfg); err == nil && ci.Bound {
			v.SignedIn = true
			stepUp = ci.StepUpScopes
		}
	}
	if st.Error != nil {
		v.Error = explain(st, cfg.BearerTokenEnv, stepUp)
	}
	v.Login = s.loginView(st.ID)
	return v
}

// explain puts a server's error in plain words and says what to do next.
func explain(st manager.Status, tokenEnv string, stepUp []string) *errorView {
	e := st.Error
	v := &errorView{
		Category: string(e.Category), HTTPStatus: e.HTTPStatus,
		Code: mcpgate.SafeCode(e.Code), Message: clean(e.Message, maxText),
	}
	switch {
	case e.Code == "insufficient_scope":
		v.Scopes = stepUp
		v.Next = "The server needs more permission than this sign-in has"
		if len(stepUp) > 0 {
			v.Next += " (scope " + clean(strings.Join(stepUp, " "), maxName) + ")"
		}
		v.Next += ". Sign in again to grant it."
		v.Action = "signin"
	case st.State == mcpgate.StateNeedsAuth && st.Auth == mcpgate.AuthOAuth:
		v.Next = "Sign in to use this server."
		v.Action = "signin"
	case st.State == mcpgate.StateNeedsAuth && tokenEnv != "":
		v.Next = "The server refused the bearer token. Set $" + clean(tokenEnv, maxName) + " to a valid token where mcpgate runs, then reconnect."
	case st.State == mcpgate.StateNeedsAuth:
		v.Next = "The server refused the bearer token. Store a new one: mcpgate add " + st.ID + " " + clean(mcpgate.ShowURL(st.URL), maxName) + " --auth bearer --replace"
	default:
		v.Next = "Check the address and that the server is running, then reconnect."
		v.Action = "reconnect"
	}
	return v
}

// toolView is one catalog entry as the page shows it.
type toolView struct {
	Name        string      `json:"name"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description"`
	Params      []paramView `json:"params"`
	Annotations []string    `json:"annotations"`
	Enabled     bool        `json:"enabled"`
}

type paramView struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Description string `json:"description,omitempty"`
}

// serveTools connects the server if needed and lists its tools: the
// enabled ones with their details, then the disabled ones, which the
// manager no longer lists, by name.
func (s *Server) serveTools(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	cfg, err := s.opts.Manager.Config(id)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), connectTimeout)
	defer cancel()
	tools, err := s.opts.Manager.Tools(ctx, id)
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]toolView, 0, len(tools)+len(cfg.DisabledTools))
	for _, t := range tools {
		out = append(out, describeTool(t))
	}
	for _, name := range cfg.DisabledTools {
		out = append(out, toolView{Name: clean(name, maxName), Params: []paramView{}, Annotations: []string{}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
}

func describeTool(t *mcp.Tool) toolView {
	v := toolView{
		Name: clean(t.Name, maxName), Title: clean(t.Title, maxName),
		Description: clean(t.Description, maxText), Enabled: true,
		Params: []paramView{}, Annotations: []string{},
	}
	if a := t.Annotations; a != nil {
		if a.Title != "" && v.Title == "" {
			v.Title = clean(a.Title, maxName)
		}
		if a.ReadOnlyHint {
			v.Annotations = append(v.Annotations, "read-only")
		}
		if a.DestructiveHint != nil && *a.DestructiveHint && !a.ReadOnlyHint {
			v.Annotations = append(v.Annotations, "destructive")
		}
		if a.IdempotentHint {
			v.Annotations = append(v.Annotations, "idempotent")
		}
		if a.OpenWorldHint != nil && *a.OpenWorldHint {
			v.Annotations = append(v.Annotations, "open world")
		}
	}
	var schema struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if b, err := json.Marshal(t.InputSchema); err == nil {
		_ = json.Unmarshal(b, &schema) // a schema we cannot read shows no parameters
	}
	for name, p := range schema.Properties {
		typ := ""
		switch x := p.Type.(type) {
		case string:
			typ = x
		case []any:
			var parts []string
			for _, e := range x {
				parts = append(parts, fmt.Sprint(e))
			}
			typ = strings.Join(parts, " | ")
		}
		v.Params = append(v.Params, paramView{
			Name: clean(name, maxName), Type: clean(typ, maxName),
			Required: slices.Contains(schema.Required, name), Description: clean(p.Description, maxText),
		})
	}
	sort.Slice(v.Params, func(i, j int) bool {
		if v.Params[i].Required != v.Params[j].Required {
			return v.Params[i].Required
		}
		return v.Params[i].Name < v.Params[j].Name
	})
	return v
}

// change loads the config, lets f edit it, saves it and applies it to the
// manager, so the gateway and bridge see it at once.
func (s *Server) change(ctx context.Context, f func(*config.File) error) error {
	s.edit.Lock()
	defer s.edit.Unlock()
	cfg, err := s.opts.Config()
	if err != nil {
		return err
	}
	if err := f(cfg); err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	if err := s.opts.Manager.Update(ctx, cfg.Servers()); err != nil {
		return err
	}
	s.events.publish()
	return nil
}

type addRequest struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	Auth        string `json:"auth"`
	BearerToken string `json:"bearerToken"`
	// Headers are "Name: value" lines, as mcpgate add --header takes them.
	Headers string `json:"headers"`
}

// serveAdd adds a server by URL and starts connecting it. A refusal names
// the form field it is about ("field"), so the page can show it there.
func (s *Server) serveAdd(w http.ResponseWriter, r *http.Request) {
	var req addRequest
	if !readJSON(w, r, &req) {
		return
	}
	cfg := mcpgate.ServerConfig{
		ID: strings.TrimSpace(req.ID), URL: strings.TrimSpace(req.URL),
		Auth: mcpgate.AuthKind(req.Auth), Enabled: true,
	}
	if cfg.Auth == "" {
		cfg.Auth = mcpgate.AuthNone
	}
	token := strings.TrimSpace(req.BearerToken)
	if err := mcpgate.ValidateID(cfg.ID); err != nil {
		writeFieldError(w, err, "id")
		return
	}
	if err := mcpgate.ValidateURL(cfg.URL); err != nil {
		writeFieldError(w, err, "url")
		return
	}
	headers, err := parseHeaders(req.Headers)
	if err != nil {
		writeFieldError(w, err, "headers")
		return
	}
	cfg.Headers = headers
	if err := cfg.Validate(); err != nil {
		field := ""
		if len(headers) > 0 && strings.Contains(err.Error(), "headers:") {
			field = "headers"
		}
		writeFieldError(w, err, field)
		return
	}
	switch {
	case cfg.Auth == mcpgate.AuthBearer && (token == "" || strings.ContainsAny(token, "\r\n")):
		writeFieldError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "a bearer server needs its token (one line)"), "bearerToken")
		return
	case cfg.Auth != mcpgate.AuthBearer && token != "":
		writeFieldError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "a token is only used with auth bearer"), "bearerToken")
		return
	case cfg.Auth == mcpgate.AuthBearer && s.opts.OAuth == nil:
		writeError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "no credential store to keep the token in"))
		return
	}
	taken := false
	err = s.change(r.Context(), func(f *config.File) error {
		if _, ok := f.Server(cfg.ID); ok {
			// Before the token is stored: never another server's.
			taken = true
			return mcpgate.Errorf(mcpgate.CategoryConflict, "a server named %q is already configured; choose another name, or remove that one first", cfg.ID)
		}
		if err := f.Add(cfg, false); err != nil {
			return err
		}
		if token == "" {
			return nil
		}
		// Stored before the config is saved, so the first connect has it;
		// a failed save leaves an unused token, never a server without one.
		return s.opts.OAuth.SetBearer(r.Context(), cfg, token)
	})
	if err != nil {
		field := ""
		if taken {
			field = "id"
		}
		writeFieldError(w, err, field)
		return
	}
	s.connect(cfg.ID, false)
	writeJSON(w, http.StatusCreated, map[string]string{"id": cfg.ID})
}

// parseHeaders reads "Name: value" lines; blank lines are skipped.
func parseHeaders(text string) (map[string]string, error) {
	var out map[string]string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "headers, line %d: want Name: value", i+1)
		}
		for existing := range out {
			if strings.EqualFold(existing, name) {
				return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "headers, line %d: %s is given twice", i+1, clean(name, maxName))
			}
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = value
	}
	return out, nil
}

// connect connects (or reconnects) in the background; the page learns the
// outcome as a state change.
func (s *Server) connect(id string, re bool) {
	s.goBackground(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, connectTimeout)
		defer cancel()
		var err error
		if re {
			err = s.opts.Manager.Reconnect(ctx, id)
		} else {
			err = s.opts.Manager.Connect(ctx, id)
		}
		if err != nil {
			s.opts.Logger.Debug("connecting", "server", id, "error", clean(err.Error(), maxText))
		}
		s.events.publish()
	})
}

// serveOp is connect, disconnect, reconnect, remove and logout.
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	cfg, err := s.opts.Manager.Config(id)
	if err != nil {
		writeError(w, err)
		return
	}
	var body struct{}
	if !readJSON(w, r, &body) {
		return
	}
	switch r.PathValue("op") {
	case "connect":
		s.connect(id, false)
	case "reconnect":
		s.connect(id, true)
	case "disconnect":
		err = s.opts.Manager.Disconnect(r.Context(), id)
	case "remove":
		err = s.change(r.Context(), func(f *config.File) error { return f.Remove(id) })
		if err == nil && s.opts.OAuth != nil {
			// As `mcpgate remove` does: a server added later under this
			// name must not start with the old sign-in or token.
			s.forgetLogin(id)
			if _, lerr := s.opts.OAuth.Logout(r.Context(), cfg); lerr != nil {
				err = fmt.Errorf("the server is removed, but its stored credential could not be deleted: %w", lerr)
			}
		}
	case "logout":
		if s.opts.OAuth == nil || cfg.Auth != mcpgate.AuthOAuth {
			err = mcpgate.Errorf(mcpgate.CategoryInvalid, "server %q does not sign in", id)
			break
		}
		if _, err = s.opts.OAuth.Logout(r.Context(), cfg); err == nil {
			s.forgetLogin(id)
			// The live session still holds the old token; the next
			// connect finds no sign-in and says so.
			err = s.opts.Manager.Disconnect(r.Context(), id)
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.events.publish()
	writeJSON(w, http.StatusAccepted, map[string]string{"id": id})
}

// serveToggleTool switches one tool on or off.
func (s *Server) serveToggleTool(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req struct {
		Tool    string `json:"tool"`
		Enabled bool   `json:"enabled"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if req.Tool == "" || len(req.Tool) > maxName {
		writeError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "a tool name is required"))
		return
	}
	if err := s.change(r.Context(), func(f *config.File) error { return f.SetToolEnabled(id, req.Tool, req.Enabled) }); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tool": req.Tool, "enabled": req.Enabled})
}

type importRequest struct {
	Text    string `json:"text"`
	Replace bool   `json:"replace"`
	// AllowEnv names the environment variables the imported headers may
	// read: every one the preview listed, or the import is refused.
	AllowEnv []string `json:"allowEnv"`
}

type importView struct {
	Format  string         `json:"format"`
	Servers []importServer `json:"servers"`
	Skipped []importNote   `json:"skipped"`
	Notes   []importNote   `json:"notes"`
	// Env is every variable the servers' headers read, for the page to
	// ask the person before it sends them as AllowEnv.
	Env []string `json:"env"`
}

// importNote is a skipped entry and its reason, or a note for a server.
type importNote struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type importServer struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	URL    string `json:"url"`
	Auth   string `json:"auth"`
	Exists bool   `json:"exists"`
	// Headers are the names of the headers it sends; Env the variables
	// they read, whose values go to this server with every request.
	Headers []string `json:"headers"`
	Env     []string `json:"env"`
}

func (s *Server) parseImport(w http.ResponseWriter, r *http.Request) (*config.ImportResult, *importRequest, bool) {
	var req importRequest
	if !readJSON(w, r, &req) {
		return nil, nil, false
	}
	res, err := config.ParseImport([]byte(req.Text), config.FormatAuto)
	if err != nil {
		writeError(w, err)
		return nil, nil, false
	}
	return res, &req, true
}

// serveImportPreview says what an import would bring in and what it skips.
func (s *Server) serveImportPreview(w http.ResponseWriter, r *http.Request) {
	res, _, ok := s.parseImport(w, r)
	if !ok {
		return
	}
	v := importView{Format: string(res.Format), Servers: []importServer{}, Skipped: []importNote{}, Notes: []importNote{}, Env: []string{}}
	uses := res.EnvUses()
	for _, c := range res.Servers {
		_, err := s.opts.Manager.Config(c.ID)
		is := importServer{
			ID: c.ID, Name: clean(c.DisplayName(), maxName), URL: clean(mcpgate.ShowURL(c.URL), maxName), Auth: string(c.Auth), Exists: err == nil,
			Headers: slices.Sorted(maps.Keys(c.Headers)), Env: []string{},
		}
		for _, u := range uses {
			if u.Server == c.ID && !slices.Contains(is.Env, u.Variable) {
				is.Env = append(is.Env, u.Variable)
			}
			if !slices.Contains(v.Env, u.Variable) {
				v.Env = append(v.Env, u.Variable)
			}
		}
		slices.Sort(is.Env)
		v.Servers = append(v.Servers, is)
	}
	slices.Sort(v.Env)
	for _, sk := range res.Skipped {
		v.Skipped = append(v.Skipped, importNote{Name: clean(sk.Name, maxName), Text: clean(sk.Reason, maxText)})
	}
	for _, n := range res.Notes {
		v.Notes = append(v.Notes, importNote{Name: clean(n.Name, maxName), Text: clean(n.Text, maxText)})
	}
	writeJSON(w, http.StatusOK, v)
}

// serveImport imports everything or nothing.
func (s *Server) serveImport(w http.ResponseWriter, r *http.Request) {
	res, req, ok := s.parseImport(w, r)
	if !ok {
		return
	}
	if len(res.Servers) == 0 {
		writeError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "nothing to import: the file has no remote server"))
		return
	}
	if err := res.CheckEnv(req.AllowEnv); err != nil {
		writeError(w, err)
		return
	}
	if err := s.change(r.Context(), func(f *config.File) error { return f.Import(res, req.Replace) }); err != nil {
		writeError(w, err)
		return
	}
	ids := make([]string, 0, len(res.Servers))
	for _, c := range res.Servers {
		ids = append(ids, c.ID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"imported": ids})
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the request is not valid JSON"})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the page retries on a broken answer
}

// writeError maps an error's category to a status once, and sends its
// sanitized message.
func writeError(w http.ResponseWriter, err error) { writeFieldError(w, err, "") }

// writeFieldError is writeError naming the form field the error is about
// ("" for none).
func writeFieldError(w http.ResponseWriter, err error, field string) {
	status := http.StatusInternalServerError
	switch mcpgate.CategoryOf(err) {
	case mcpgate.CategoryInvalid:
		status = http.StatusBadRequest
	case mcpgate.CategoryNotFound:
		status = http.StatusNotFound
	case mcpgate.CategoryAuth, mcpgate.CategoryDisabled, mcpgate.CategoryConflict:
		// The server's state (or the config) is in the way; not this
		// page's token, which guard checked.
		status = http.StatusConflict
	case mcpgate.CategoryTimeout:
		status = http.StatusGatewayTimeout
	default:
		if _, ok := errors.AsType[*mcpgate.Error](err); ok {
			status = http.StatusBadGateway
		}
	}
	body := map[string]string{"error": clean(err.Error(), maxText)}
	if field != "" {
		body["field"] = field
	}
	writeJSON(w, status, body)
}
