package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFields bounds the fields of one elicitation form.
const maxFields = 32

// pending is a form elicitation waiting for the person on the page. It
// lives as long as the call that asked: the card disappears when the call
// ends, and survives a reload of the page.
type pending struct {
	ID      string  `json:"id"`
	Server  string  `json:"server"`
	Message string  `json:"message"`
	Fields  []field `json:"fields"`
	Created string  `json:"created"`

	answer chan *mcp.ElicitResult
}

// field is one property of a flat form schema, as the page draws it.
type field struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Type is string, number, integer, boolean, or array: a multi-select,
	// whose answer is a list of Enum values.
	Type string `json:"type"`
	// Format is what text a string holds: email, uri, date or date-time
	// (the formats MCP forms have), or "" for any text.
	Format string `json:"format,omitempty"`
	// Enum are the values to choose from; EnumTitles, when the schema
	// gives them (oneOf/anyOf of const and title, or enumNames), what the
	// page shows for each.
	Enum       []string `json:"enum,omitempty"`
	EnumTitles []string `json:"enumTitles,omitempty"`
	Default    any      `json:"default,omitempty"`
	Required   bool     `json:"required"`
	Minimum    *float64 `json:"minimum,omitempty"`
	Maximum    *float64 `json:"maximum,omitempty"`
	MinLength  *int     `json:"minLength,omitempty"`
	MaxLength  *int     `json:"maxLength,omitempty"`
	MinItems   *int     `json:"minItems,omitempty"`
	MaxItems   *int     `json:"maxItems,omitempty"`
}

// formats are the string formats MCP forms have: what the person is told
// a value must be, and the check of it.
var formats = map[string]struct {
	what  string
	valid func(string) bool
}{
	"email": {"an email address", func(s string) bool {
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s
	}},
	"uri": {"an absolute URL, like https://example.com/", func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "")
	}},
	"date": {"a date, like 2026-12-31", func(s string) bool {
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	}},
	"date-time": {"a date and time with its offset from UTC, like 2026-12-31T09:30:00Z", func(s string) bool {
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	}},
}

// maxChoices bounds the choices of one field.
const maxChoices = 100

// choiceSchema is where MCP forms put choices: enum (with the legacy
// enumNames), or oneOf/anyOf of {const, title}.
type choiceSchema struct {
	Enum      []string `json:"enum"`
	EnumNames []string `json:"enumNames"`
	OneOf     []option `json:"oneOf"`
	AnyOf     []option `json:"anyOf"`
}

type option struct {
	Const *string `json:"const"`
	Title string  `json:"title"`
}

// choices returns the values and, when given, their titles.
func (c choiceSchema) choices() (values, titles []string, err error) {
	opts := c.OneOf
	if len(opts) == 0 {
		opts = c.AnyOf
	}
	switch {
	case len(c.Enum) > 0:
		values = c.Enum
		if len(c.EnumNames) == len(c.Enum) {
			titles = c.EnumNames
		}
	case len(opts) > 0:
		for _, o := range opts {
			if o.Const == nil {
				return nil, nil, fmt.Errorf("a choice without a const value")
			}
			values = append(values, *o.Const)
			titles = append(titles, cmp.Or(o.Title, *o.Const))
		}
	}
	if len(values) > maxChoices {
		return nil, nil, fmt.Errorf("more than %d choices", maxChoices)
	}
	for _, v := range values {
		if clean(v, maxName) != v {
			return nil, nil, fmt.Errorf("a choice %q cannot be shown as it is", clean(v, maxName))
		}
	}
	for i, t := range titles {
		titles[i] = clean(t, maxName)
	}
	return values, titles, nil
}

// parseForm reads a form elicitation's requested schema: an object of
// flat properties (MCP elicitation): text, numbers, yes/no, single choices
// and multi-selects. Anything else is refused, and the elicitation
// declined.
func parseForm(raw json.RawMessage) ([]field, error) {
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			choiceSchema
			Type        string        `json:"type"`
			Format      string        `json:"format"`
			Title       string        `json:"title"`
			Description string        `json:"description"`
			Default     any           `json:"default"`
			Minimum     *float64      `json:"minimum"`
			Maximum     *float64      `json:"maximum"`
			MinLength   *int          `json:"minLength"`
			MaxLength   *int          `json:"maxLength"`
			MinItems    *int          `json:"minItems"`
			MaxItems    *int          `json:"maxItems"`
			Items       *choiceSchema `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("reading the requested schema: %w", err)
	}
	if schema.Type != "object" || len(schema.Properties) > maxFields {
		return nil, fmt.Errorf("the requested schema is not a flat object of at most %d fields", maxFields)
	}
	out := make([]field, 0, len(schema.Properties))
	for name, p := range schema.Properties {
		f := field{
			Name: clean(name, maxName), Title: clean(p.Title, maxName), Description: clean(p.Description, maxText),
			Type: p.Type, Required: slices.Contains(schema.Required, name),
			Minimum: p.Minimum, Maximum: p.Maximum, MinLength: p.MinLength, MaxLength: p.MaxLength,
		}
		if f.Name != name {
			return nil, fmt.Errorf("field name %q cannot be shown as it is", f.Name)
		}
		var err error
		switch p.Type {
		case "string":
			f.Enum, f.EnumTitles, err = p.choices()
			if _, known := formats[p.Format]; known && len(f.Enum) == 0 {
				f.Format = p.Format
			}
		case "number", "integer", "boolean":
		case "array":
			if p.Items == nil {
				return nil, fmt.Errorf("field %q is a list without choices", f.Name)
			}
			f.Enum, f.EnumTitles, err = p.Items.choices()
			if err == nil && len(f.Enum) == 0 {
				err = fmt.Errorf("a list without choices")
			}
			f.MinItems, f.MaxItems = p.MinItems, p.MaxItems
		default:
			return nil, fmt.Errorf("field %q has type %q", clean(name, maxName), clean(p.Type, maxName))
		}
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		switch d := p.Default.(type) {
		case string:
			f.Default = clean(d, maxText)
		case []any:
			var picked []string
			for _, v := range d {
				if s, ok := v.(string); ok && slices.Contains(f.Enum, s) {
					picked = append(picked, s)
				}
			}
			f.Default = picked
		case nil:
		default:
			f.Default = d
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Elicit asks the person on the page; give it to manager.Options.Elicit.
// It waits until the person answers on the page, the call ends (ctx), or
// the page stops, which declines.
func (s *Server) Elicit(ctx context.Context, req *manager.ElicitRequest) (*mcp.ElicitResult, error) {
	fields, err := parseForm(req.Schema)
	if err != nil {
		s.opts.Logger.Warn("declining an elicitation", "server", req.Server, "error", clean(err.Error(), maxText))
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	// The call that asked ends by its timeout at the latest. The manager
	// does not tie ctx to that call (only to the session), so the card is
	// bounded here too, or it would outlive a cancelled call.
	timeout := mcpgate.DefaultCallTimeout
	if cfg, err := s.opts.Manager.Config(req.Server); err == nil && cfg.Timeout > 0 {
		timeout = cfg.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	p := &pending{
		ID: base64.RawURLEncoding.EncodeToString(b), Server: req.Server, Message: clean(req.Message, maxText),
		Fields: fields, Created: time.Now().UTC().Format(time.RFC3339), answer: make(chan *mcp.ElicitResult, 1),
	}
	s.mu.Lock()
	s.pending = append(s.pending, p)
	s.mu.Unlock()
	s.events.publish()
	defer func() {
		s.mu.Lock()
		s.pending = slices.DeleteFunc(s.pending, func(q *pending) bool { return q == p })
		s.mu.Unlock()
		s.events.publish()
	}()
	select {
	case res := <-p.answer:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.ctx.Done():
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
}

func (s *Server) servePending(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := slices.Clone(s.pending)
	s.mu.Unlock()
	out = append(out, s.storedQuestions(r.Context())...)
	if out == nil {
		out = []*pending{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"pending": out})
}

// storedPrefix marks the IDs of questions other processes stored.
const storedPrefix = "~"

// storedQuestions lists the unanswered questions other processes left in
// the store, as cards.
func (s *Server) storedQuestions(ctx context.Context) []*pending {
	if s.opts.Questions == nil {
		return nil
	}
	list, err := s.opts.Questions.Interactions(ctx, s.opts.Tenant)
	if err != nil {
		return nil
	}
	var out []*pending
	for _, in := range list {
		q, fields, ok := question(in)
		if !ok {
			if q, ok := storedQuestion(in); ok && q.Answer == nil {
				declineUndrawable(ctx, s.opts.Questions, s.opts.Logger, in.ID)
			}
			continue
		}
		if q.Answer != nil {
			continue
		}
		out = append(out, &pending{ID: storedPrefix + in.ID, Server: q.Server, Message: clean(q.Message, maxText),
			Fields: fields, Created: in.CreatedAt.UTC().Format(time.RFC3339)})
	}
	return out
}

// declineUndrawable answers "decline" to a stored question whose form
// cannot be drawn, so the call that asked goes on at once instead of
// waiting its whole timeout for a form nobody sees.
func declineUndrawable(ctx context.Context, st store.Store, logger *slog.Logger, id string) {
	err := writeAnswer(ctx, st, id, func(*store.Interaction, *store.Question) (*store.Answer, error) {
		return &store.Answer{Action: "decline"}, nil
	})
	if err != nil && mcpgate.CategoryOf(err) != mcpgate.CategoryConflict {
		logger.Debug("declining a question that cannot be shown", "error", clean(err.Error(), maxText))
	}
}

// storedQuestion reads the question an interaction holds; ok is false for
// an interaction of another kind.
func storedQuestion(in *store.Interaction) (q *store.Question, ok bool) {
	if in.Kind != store.KindQuestion {
		return nil, false
	}
	q = new(store.Question)
	if json.Unmarshal(in.Payload, q) != nil {
		return nil, false
	}
	return q, true
}

// question reads a stored question and its form; ok is false when it is
// not a question, or its form cannot be drawn.
func question(in *store.Interaction) (q *store.Question, fields []field, ok bool) {
	q, ok = storedQuestion(in)
	if !ok {
		return nil, nil, false
	}
	fields, err := parseForm(q.Schema)
	if err != nil {
		return nil, nil, false
	}
	return q, fields, true
}

// Errors of writing an answer, in the words the person sees.
var (
	errQuestionGone     = mcpgate.Errorf(mcpgate.CategoryNotFound, "this question is no longer waiting (the call ended)")
	errQuestionAnswered = mcpgate.Errorf(mcpgate.CategoryConflict, "this question was already answered")
)

// answerLockName names the store's lock under which every answer is
// written. The store has no compare-and-swap, so two answers to one
// question (two tabs, two replicas) are serialized by it: the second
// re-reads the first. One name for all questions, because the SQLite
// store leaves a file behind for each name it has locked; answers are
// rare and quick.
const answerLockName = "mcpgate-question-answer"

// writeAnswer writes into the stored question id the answer decide makes
// of it, re-reading the question under [answerLockName] just before, so
// that a question is answered once: a second answer is
// CategoryConflict, a question that is gone (or expired, or not a
// question) CategoryNotFound. The process that asked picks the answer up.
func writeAnswer(ctx context.Context, st store.Store, id string, decide func(*store.Interaction, *store.Question) (*store.Answer, error)) error {
	if st == nil {
		return errQuestionGone
	}
	unlock, err := st.Lock(ctx, answerLockName)
	if err != nil {
		return fmt.Errorf("waiting to write an answer: %w", err)
	}
	defer unlock()
	in, err := st.Interaction(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return errQuestionGone
	}
	if err != nil {
		return fmt.Errorf("reading the question: %w", err)
	}
	q, ok := storedQuestion(in)
	if !ok {
		return errQuestionGone
	}
	if q.Answer != nil {
		return errQuestionAnswered
	}
	if q.Answer, err = decide(in, q); err != nil {
		return err
	}
	if in.Payload, err = json.Marshal(q); err != nil {
		return fmt.Errorf("writing the answer: %w", err)
	}
	if err := st.PutInteraction(ctx, in); err != nil {
		return fmt.Errorf("writing the answer: %w", err)
	}
	return nil
}

// answerStored writes the person's answer, checked against the form, into
// a stored question. tenant, when not nil, is the only tenant whose
// question may be answered.
func answerStored(ctx context.Context, st store.Store, tenant *string, id, action string, content map[string]any) error {
	return writeAnswer(ctx, st, id, func(in *store.Interaction, q *store.Question) (*store.Answer, error) {
		if tenant != nil && in.Tenant != *tenant {
			return nil, errQuestionGone
		}
		fields, err := parseForm(q.Schema)
		if err != nil {
			return nil, errQuestionGone
		}
		ans := &store.Answer{Action: action}
		if action == "accept" {
			if ans.Content, err = checkAnswer(fields, content); err != nil {
				return nil, err
			}
		}
		return ans, nil
	})
}

// serveAnswer takes the person's answer to a card, checks it against the
// form and hands it to the waiting call.
func (s *Server) serveAnswer(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	id := r.PathValue("id")
	if stored, ok := strings.CutPrefix(id, storedPrefix); ok {
		switch req.Action {
		case "accept", "decline", "cancel":
		default:
			writeError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "action must be accept, decline or cancel"))
			return
		}
		if err := answerStored(r.Context(), s.opts.Questions, &s.opts.Tenant, stored, req.Action, req.Content); err != nil {
			writeError(w, err)
			return
		}
		s.events.publish()
		writeJSON(w, http.StatusOK, map[string]string{"id": id})
		return
	}
	s.mu.Lock()
	i := slices.IndexFunc(s.pending, func(p *pending) bool { return p.ID == id })
	var p *pending
	if i >= 0 {
		p = s.pending[i]
	}
	s.mu.Unlock()
	if p == nil {
		writeError(w, mcpgate.Errorf(mcpgate.CategoryNotFound, "this question is no longer waiting (the call ended)"))
		return
	}
	res := &mcp.ElicitResult{Action: req.Action}
	switch req.Action {
	case "decline", "cancel":
	case "accept":
		content, err := checkAnswer(p.Fields, req.Content)
		if err != nil {
			writeError(w, err)
			return
		}
		res.Content = content
	default:
		writeError(w, mcpgate.Errorf(mcpgate.CategoryInvalid, "action must be accept, decline or cancel"))
		return
	}
	select {
	case p.answer <- res:
	default: // answered already, in another tab
		writeError(w, mcpgate.Errorf(mcpgate.CategoryConflict, "this question was already answered"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id})
}

// checkAnswer validates an accepted form: only known fields, the right
// types, required ones present, within their bounds.
func checkAnswer(fields []field, content map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for name := range content {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.Name == name }) {
			return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "%q is not a field of this form", clean(name, maxName))
		}
	}
	for _, f := range fields {
		v, ok := content[f.Name]
		if !ok || v == nil || v == "" && f.Type != "string" {
			if f.Required {
				return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "%s is required", f.Name)
			}
			continue
		}
		bad := func(what string) error {
			return mcpgate.Errorf(mcpgate.CategoryInvalid, "%s must be %s", f.Name, what)
		}
		switch f.Type {
		case "string":
			str, ok := v.(string)
			if !ok {
				return nil, bad("text")
			}
			if f.Required && str == "" {
				return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "%s is required", f.Name)
			}
			if len(f.Enum) > 0 && !slices.Contains(f.Enum, str) {
				return nil, bad("one of the choices")
			}
			n := len([]rune(str))
			if f.MinLength != nil && n < *f.MinLength || f.MaxLength != nil && n > *f.MaxLength {
				return nil, bad("of the allowed length")
			}
			if str != "" && f.Format != "" && !formats[f.Format].valid(str) {
				return nil, bad(formats[f.Format].what)
			}
		case "number", "integer":
			num, ok := v.(float64)
			if !ok || math.IsNaN(num) || math.IsInf(num, 0) {
				return nil, bad("a number")
			}
			if f.Type == "integer" && num != math.Trunc(num) {
				return nil, bad("a whole number")
			}
			if f.Minimum != nil && num < *f.Minimum || f.Maximum != nil && num > *f.Maximum {
				return nil, bad("within the allowed range")
			}
		case "boolean":
			if _, ok := v.(bool); !ok {
				return nil, bad("yes or no")
			}
		case "array":
			list, ok := v.([]any)
			if !ok {
				return nil, bad("a list of choices")
			}
			seen := map[string]bool{}
			for _, e := range list {
				s, ok := e.(string)
				if !ok || !slices.Contains(f.Enum, s) || seen[s] {
					return nil, bad("a list of different choices")
				}
				seen[s] = true
			}
			if f.MinItems != nil && len(list) < *f.MinItems || f.MaxItems != nil && len(list) > *f.MaxItems {
				return nil, bad("of the allowed number of choices")
			}
		}
		out[f.Name] = v
	}
	return out, nil
}
