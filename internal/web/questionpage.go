package web

import (
	"cmp"
	"errors"
	"html/template"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
)

// QuestionPageOptions configures [QuestionPage]. The struct is copied.
type QuestionPageOptions struct {
	// Store holds the questions (serve.StoredQuestions puts them there);
	// required.
	Store store.Store
	// Logger receives diagnostics: never a question's ID, which opens
	// it, nor an answer. Nil discards them.
	Logger *slog.Logger
}

// maxAnswerBody bounds a posted answer.
const maxAnswerBody = 64 << 10

// radioChoices is the most choices a single choice shows as radio
// buttons; more become a drop-down list.
const radioChoices = 5

// inputPrefix starts the form name of each field's control, so that no
// field of a server's schema can be taken for the page's own "action".
const inputPrefix = "field."

// QuestionPage serves /questions/{id} (the id from r.PathValue): the
// question a server asked during a call that no agent host could show,
// as a form the person answers in their browser, on any replica sharing
// the store.
//
// GET shows the form, pre-filled with the schema's defaults; no script
// is needed. POST (a form, at most 64 KiB, from the page's own origin)
// takes the person's answer, action accept, decline or cancel: accepted
// values are read by each field's type and checked against the form; a
// wrong one shows the form again, with the person's values and what is
// wrong. The answer is written into the stored question, once: a second
// answer, from another tab or replica, is refused with 409. The call
// that asked reads it from the store.
//
// A question that is gone or expired, or an ID of another kind of
// interaction, is 404; one already answered is 410. A question whose form
// cannot be drawn is declined at once, so its call goes on, and the
// person is told so. Every response carries a strict
// Content-Security-Policy (no script at all) and is never cached.
func QuestionPage(opts *QuestionPageOptions) http.Handler {
	var o QuestionPageOptions
	if opts != nil {
		o = *opts
	}
	if o.Store == nil {
		panic("web: QuestionPage needs a Store")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &questionPage{opts: o}
}

type questionPage struct{ opts QuestionPageOptions }

func (p *questionPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		p.show(w, r)
	case http.MethodPost:
		p.answer(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		WriteNotice(w, http.StatusMethodNotAllowed, "Not allowed", "This page only shows a question and takes its answer.")
	}
}

func (p *questionPage) show(w http.ResponseWriter, r *http.Request) {
	q, fields, ok := p.lookup(w, r, http.StatusGone)
	if !ok {
		return
	}
	writeQuestion(w, http.StatusOK, q, fields, nil, "")
}

func (p *questionPage) answer(w http.ResponseWriter, r *http.Request) {
	if !SameOrigin(r) {
		WriteNotice(w, http.StatusForbidden, "Refused", "An answer must be sent from the question's own page. Open the link you were given and answer there.")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		WriteNotice(w, http.StatusUnsupportedMediaType, "Not a form", "An answer is sent with the question's form.")
		return
	}
	if r.ContentLength > maxAnswerBody {
		WriteNotice(w, http.StatusRequestEntityTooLarge, "Too long", "The answer is longer than any question needs.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxAnswerBody)
	if err := r.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			WriteNotice(w, http.StatusRequestEntityTooLarge, "Too long", "The answer is longer than any question needs.")
			return
		}
		WriteNotice(w, http.StatusBadRequest, "Not a form", "The answer could not be read. Open the link again and answer there.")
		return
	}
	action := r.PostForm.Get("action")
	switch action {
	case "accept", "decline", "cancel":
	default:
		WriteNotice(w, http.StatusBadRequest, "No answer", "Choose Submit, Decline or Cancel.")
		return
	}
	q, fields, ok := p.lookup(w, r, http.StatusConflict)
	if !ok {
		return
	}
	var content map[string]any
	if action == "accept" {
		var err error
		if content, err = formContent(fields, r.PostForm); err != nil {
			writeQuestion(w, http.StatusBadRequest, q, fields, r.PostForm, clean(err.Error(), maxText))
			return
		}
	}
	if err := answerStored(r.Context(), p.opts.Store, nil, r.PathValue("id"), action, content); err != nil {
		switch mcpgate.CategoryOf(err) {
		case mcpgate.CategoryInvalid:
			writeQuestion(w, http.StatusBadRequest, q, fields, r.PostForm, clean(err.Error(), maxText))
		case mcpgate.CategoryConflict: // answered since lookup, in another tab or replica
			answeredNotice(w, http.StatusConflict)
		case mcpgate.CategoryNotFound:
			goneNotice(w)
		default:
			p.failed(w, "writing an answer", q.Server, err)
		}
		return
	}
	server := clean(q.Server, maxName)
	switch action {
	case "accept":
		WriteNotice(w, http.StatusOK, "Answer sent", "Your answer went to "+server+". You can go back to your agent.")
	case "decline":
		WriteNotice(w, http.StatusOK, "Declined", server+" was told you declined. You can go back to your agent.")
	default:
		WriteNotice(w, http.StatusOK, "Cancelled", server+" was told you dismissed the question. You can go back to your agent.")
	}
}

// lookup reads the question the request names. When it cannot be
// answered (gone, answered, undrawable) it writes the notice that says
// so, answeredStatus for an answered one, and ok is false.
func (p *questionPage) lookup(w http.ResponseWriter, r *http.Request, answeredStatus int) (q *store.Question, fields []field, ok bool) {
	id := r.PathValue("id")
	if id == "" {
		goneNotice(w)
		return nil, nil, false
	}
	in, err := p.opts.Store.Interaction(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		goneNotice(w)
		return nil, nil, false
	}
	if err != nil {
		p.failed(w, "reading a question", "", err)
		return nil, nil, false
	}
	q, ok = storedQuestion(in)
	if !ok {
		goneNotice(w)
		return nil, nil, false
	}
	if q.Answer != nil {
		answeredNotice(w, answeredStatus)
		return nil, nil, false
	}
	fields, err = parseForm(q.Schema)
	if err != nil {
		p.opts.Logger.Warn("declining a question that cannot be shown", "server", clean(q.Server, maxName), "error", clean(err.Error(), maxText))
		declineUndrawable(r.Context(), p.opts.Store, p.opts.Logger, id)
		WriteNotice(w, http.StatusOK, "Declined",
			clean(q.Server, maxName)+" asked a question in a form this page cannot show, so it was declined and your agent's call goes on.")
		return nil, nil, false
	}
	return q, fields, true
}

func (p *questionPage) failed(w http.ResponseWriter, doing, server string, err error) {
	p.opts.Logger.Error(doing, "server", clean(server, maxName), "error", clean(err.Error(), maxText))
	WriteNotice(w, http.StatusInternalServerError, "Something went wrong", "The question could not be reached just now. Try again in a moment.")
}

func goneNotice(w http.ResponseWriter) {
	WriteNotice(w, http.StatusNotFound, "No such question",
		"This question is not waiting for an answer: the call that asked it has ended, or the link is wrong.")
}

func answeredNotice(w http.ResponseWriter, status int) {
	WriteNotice(w, status, "Already answered", "This question was already answered. You can go back to your agent.")
}

// SameOrigin reports whether a request comes from a page of this origin,
// or from no page at all: the browser's Sec-Fetch-Site, where sent, and
// Origin must say so.
//
// Origin "null" is what a browser sends for a form posted from a page
// whose Referrer-Policy is no-referrer, as this page's is, so it counts
// as this origin when Sec-Fetch-Site (which no page can set) says the
// request is same-origin; without that, it may come from anywhere (a
// sandboxed frame) and is refused.
//
// serve --http's sign-in page posts its form the same way.
func SameOrigin(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" && site != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" && site == "same-origin" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// formContent reads an accepted form's values as the content of an
// answer, typed by each field: numbers parsed, a boolean true when its box
// was ticked and false otherwise, a multi-select the list of its ticked
// values; an empty optional field is left out. Checking it against the
// form is [checkAnswer]'s.
func formContent(fields []field, form url.Values) (map[string]any, error) {
	content := map[string]any{}
	for _, f := range fields {
		vals := form[inputPrefix+f.Name]
		if f.Type != "array" && len(vals) > 1 {
			return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "%s must be one value", f.Name)
		}
		first := ""
		if len(vals) > 0 {
			first = vals[0]
		}
		switch f.Type {
		case "boolean":
			content[f.Name] = len(vals) > 0
		case "array":
			if len(vals) == 0 && !f.Required {
				continue
			}
			list := make([]any, 0, len(vals))
			for _, v := range vals {
				list = append(list, v)
			}
			content[f.Name] = list
		case "number", "integer":
			v := strings.TrimSpace(first)
			if v == "" {
				continue // checkAnswer says if it is required
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, mcpgate.Errorf(mcpgate.CategoryInvalid, "%s must be a number", f.Name)
			}
			content[f.Name] = n
		default:
			if first == "" && !f.Required {
				continue
			}
			content[f.Name] = first
		}
	}
	return content, nil
}

// fieldView is one field as the page's form draws it.
type fieldView struct {
	field
	ID    string // of its control, or of its group
	Input string // its control's name in the form
	// Control is text, number, checkbox, select, radio or checkboxes.
	Control string
	// InputType is the type of a text control: text, email, url or date.
	InputType string
	// Label is what the field is called on the page.
	Label    string
	Value    string
	Checked  bool
	Options  []optionView
	Min, Max string
	Step     string
	// MinLen and MaxLen bound a text's length.
	MinLen, MaxLen string
	// Hint says what text a format takes, where the browser may not.
	Hint    string
	Pattern string
	// DescribedBy names the elements that describe the control.
	DescribedBy string
}

type optionView struct {
	ID, Value, Title string
	Checked          bool
}

// rfc3339Pattern is an RFC 3339 date-time, for the browser to check as
// the person types.
const rfc3339Pattern = `\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+\-]\d{2}:\d{2})`

// fieldViews draws fields with the person's submitted values, or, when
// submitted is nil, the schema's defaults.
func fieldViews(fields []field, submitted url.Values) []fieldView {
	out := make([]fieldView, 0, len(fields))
	for i, f := range fields {
		v := fieldView{field: f, ID: "f" + strconv.Itoa(i), Input: inputPrefix + f.Name, Label: cmp.Or(f.Title, f.Name)}
		var values []string // what the control holds
		switch {
		case submitted != nil:
			values = submitted[v.Input]
		case f.Type == "array":
			values, _ = f.Default.([]string)
		case f.Type == "boolean":
			if b, _ := f.Default.(bool); b {
				values = []string{"true"}
			}
		case f.Default != nil:
			switch d := f.Default.(type) {
			case string:
				values = []string{d}
			case float64:
				values = []string{formatNumber(d)}
			}
		}
		if len(values) > 0 {
			v.Value = values[0]
		}
		switch {
		case f.Type == "boolean":
			v.Control, v.Checked = "checkbox", len(values) > 0
		case f.Type == "array":
			v.Control = "checkboxes"
		case len(f.Enum) > radioChoices:
			v.Control = "select"
		case len(f.Enum) > 0:
			v.Control = "radio"
		case f.Type == "number" || f.Type == "integer":
			v.Control, v.Step = "number", "any"
			if f.Type == "integer" {
				v.Step = "1"
			}
			// A browser steps an integer from its minimum, which must
			// then be whole too.
			if f.Minimum != nil {
				v.Min = formatNumber(whole(f.Type, *f.Minimum, math.Ceil))
			}
			if f.Maximum != nil {
				v.Max = formatNumber(whole(f.Type, *f.Maximum, math.Floor))
			}
		default:
			v.Control, v.InputType = "text", "text"
			if f.MinLength != nil {
				v.MinLen = strconv.Itoa(*f.MinLength)
			}
			if f.MaxLength != nil {
				v.MaxLen = strconv.Itoa(*f.MaxLength)
			}
			switch f.Format {
			case "email":
				v.InputType = "email"
			case "uri":
				v.InputType, v.Hint = "url", "A full address, like https://example.com/"
			case "date":
				v.InputType = "date"
			case "date-time":
				// No browser control takes a time with its offset from UTC
				// (datetime-local has none), and the form must say which.
				v.Hint, v.Pattern = "A date and time with its offset from UTC, like 2026-12-31T09:30:00Z or 2026-12-31T10:30:00+01:00", rfc3339Pattern
			}
		}
		var by []string
		if f.Description != "" {
			by = append(by, v.ID+"-desc")
		}
		if v.Hint != "" {
			by = append(by, v.ID+"-hint")
		}
		v.DescribedBy = strings.Join(by, " ")
		if len(f.Enum) > 0 {
			for j, e := range f.Enum {
				o := optionView{ID: v.ID + "-" + strconv.Itoa(j), Value: e, Title: e, Checked: slices.Contains(values, e)}
				if j < len(f.EnumTitles) {
					o.Title = f.EnumTitles[j]
				}
				v.Options = append(v.Options, o)
			}
		}
		out = append(out, v)
	}
	return out
}

func formatNumber(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// whole rounds a bound of an integer field with round.
func whole(typ string, bound float64, round func(float64) float64) float64 {
	if typ == "integer" {
		return round(bound)
	}
	return bound
}

// setPageHeaders are on every page [QuestionPage] and [WriteNotice] send:
// no script, no other origin, no framing, no caching, no referrer.
func setPageHeaders(w http.ResponseWriter) { PageHeaders(w, "'self'") }

// PageHeaders sets the headers of a server-rendered page without script:
// no other origin, no framing, no caching, no referrer, and forms may go
// to formAction only (a CSP source list: "'self'", or more for a form
// whose answer redirects elsewhere, as a sign-in's does).
func PageHeaders(w http.ResponseWriter, formAction string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
}

// WriteNotice writes a small page with a title and a message, escaped,
// in the look and with the security headers of [QuestionPage].
func WriteNotice(w http.ResponseWriter, status int, title, message string) {
	setPageHeaders(w)
	w.WriteHeader(status)
	_ = questionPages().ExecuteTemplate(w, "notice", map[string]string{"Title": title, "Message": message})
}

func writeQuestion(w http.ResponseWriter, status int, q *store.Question, fields []field, submitted url.Values, problem string) {
	setPageHeaders(w)
	w.WriteHeader(status)
	server := clean(q.Server, maxName)
	_ = questionPages().ExecuteTemplate(w, "question", map[string]any{
		"Title":   "A question from " + server,
		"Server":  server,
		"Message": clean(q.Message, maxText),
		"Fields":  fieldViews(fields, submitted),
		"Problem": problem,
	})
}

var questionPages = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(assets, "assets/question/*.html"))
})
