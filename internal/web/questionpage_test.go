package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcpgate/mcpgate/internal/testbin"
	"github.com/mcpgate/mcpgate/internal/web"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/serve"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
	"golang.org/x/net/html"
)

// qpage is QuestionPage on a loopback httptest server over a real SQLite
// store, as a replica of serve --http mounts it.
type qpage struct {
	t    *testing.T
	st   store.Store
	srv  *httptest.Server
	logs *testbin.Output
}

func newQPage(t *testing.T) *qpage {
	t.Helper()
	sealer, err := seal.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "mcpgate.db"), sealer)
	if err != nil {
		t.Fatal(err)
	}
	p := &qpage{t: t, st: st, logs: &testbin.Output{}}
	mux := http.NewServeMux()
	mux.Handle("/questions/{id}", web.QuestionPage(&web.QuestionPageOptions{
		Store:  st,
		Logger: slog.New(slog.NewTextHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}))
	p.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		p.srv.Close()
		st.Close()
	})
	return p
}

// on is the page for the subtest t: one store and server serve a table's
// cases, each under a question ID of its own.
func (p *qpage) on(t *testing.T) *qpage {
	q := *p
	q.t = t
	return &q
}

// put stores a question as serve.StoredQuestions does.
func (p *qpage) put(id, schema string) {
	p.t.Helper()
	p.putInteraction(&store.Interaction{ID: id, Tenant: "t", Server: "demo", Kind: store.KindQuestion,
		Message: "a question from demo", Payload: questionPayload(p.t, &store.Question{Server: "demo", Message: "Tell us about you", Schema: json.RawMessage(schema)}),
		CreatedAt: time.Now(), Expiry: time.Now().Add(time.Minute)})
}

func (p *qpage) putInteraction(in *store.Interaction) {
	p.t.Helper()
	if err := p.st.PutInteraction(context.Background(), in); err != nil {
		p.t.Fatal(err)
	}
}

func questionPayload(t *testing.T, q *store.Question) []byte {
	t.Helper()
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// answer is the stored question's answer, nil when there is none.
func (p *qpage) answer(id string) *store.Answer {
	p.t.Helper()
	in, err := p.st.Interaction(context.Background(), id)
	if err != nil {
		p.t.Fatalf("reading question %s: %v", id, err)
	}
	var q store.Question
	if err := json.Unmarshal(in.Payload, &q); err != nil {
		p.t.Fatal(err)
	}
	return q.Answer
}

type pageResponse struct {
	status int
	header http.Header
	body   string
	doc    *html.Node
}

func (p *qpage) do(req *http.Request) pageResponse {
	p.t.Helper()
	resp, err := p.srv.Client().Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		p.t.Fatalf("the page is not HTML: %v", err)
	}
	return pageResponse{status: resp.StatusCode, header: resp.Header, body: string(b), doc: doc}
}

func (p *qpage) get(id string) pageResponse {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.srv.URL+"/questions/"+id, nil)
	return p.do(req)
}

// post sends the form as a browser on the page does, with the headers
// given on top.
func (p *qpage) post(id string, form url.Values, header ...string) pageResponse {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.srv.URL+"/questions/"+id, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", p.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return p.do(req)
}

// The HTML the tests read.

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attrOf(n *html.Node, key string) string {
	v, _ := attr(n, key)
	return v
}

func hasAttr(n *html.Node, key string) bool {
	_, ok := attr(n, key)
	return ok
}

func elements(root *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for n := range root.Descendants() {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
	}
	return out
}

func byTag(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == tag }
}

// controls are the form controls named name.
func controls(doc *html.Node, name string) []*html.Node {
	return elements(doc, func(n *html.Node) bool {
		return (n.Data == "input" || n.Data == "select") && attrOf(n, "name") == name
	})
}

// control is the one control named name.
func control(t *testing.T, doc *html.Node, name string) *html.Node {
	t.Helper()
	c := controls(doc, name)
	if len(c) != 1 {
		t.Fatalf("want one control named %q, have %d", name, len(c))
	}
	return c[0]
}

func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func byID(doc *html.Node, id string) *html.Node {
	if e := elements(doc, func(n *html.Node) bool { return attrOf(n, "id") == id }); len(e) == 1 {
		return e[0]
	}
	return nil
}

// labelOf is the text that labels a control: its <label for>, or the
// legend of its fieldset.
func labelOf(t *testing.T, doc, c *html.Node) string {
	t.Helper()
	id := attrOf(c, "id")
	if id == "" {
		t.Fatalf("control %s has no id to be labelled by", attrOf(c, "name"))
	}
	l := elements(doc, func(n *html.Node) bool { return n.Data == "label" && attrOf(n, "for") == id })
	if len(l) != 1 {
		t.Fatalf("control %s (%s) has %d labels", attrOf(c, "name"), id, len(l))
	}
	return textOf(l[0])
}

// fieldOf is the element holding a field's label, description and
// controls.
func fieldOf(t *testing.T, doc *html.Node, name string) *html.Node {
	t.Helper()
	f := elements(doc, func(n *html.Node) bool { return attrOf(n, "data-field") == name })
	if len(f) != 1 {
		t.Fatalf("want one field %q, have %d", name, len(f))
	}
	return f[0]
}

// checkedValues are the values of the ticked boxes or radios named name.
func checkedValues(doc *html.Node, name string) []string {
	var out []string
	for _, c := range controls(doc, name) {
		if hasAttr(c, "checked") {
			out = append(out, attrOf(c, "value"))
		}
	}
	return out
}

// selected is the selected option of a select.
func selected(sel *html.Node) []string {
	var out []string
	for _, o := range elements(sel, byTag("option")) {
		if hasAttr(o, "selected") {
			out = append(out, attrOf(o, "value"))
		}
	}
	return out
}

// everyKind is a form with a field of every kind the page draws.
const everyKind = `{"type":"object","properties":{
	"name":{"type":"string","title":"Your name","description":"As on your badge","minLength":2,"maxLength":40,"default":"Ada"},
	"email":{"type":"string","format":"email","title":"Email"},
	"site":{"type":"string","format":"uri"},
	"born":{"type":"string","format":"date"},
	"meet":{"type":"string","format":"date-time"},
	"ratio":{"type":"number","minimum":0,"maximum":1,"default":0.5},
	"age":{"type":"integer","minimum":0.5,"maximum":150.5},
	"agree":{"type":"boolean","title":"I agree","default":true},
	"news":{"type":"boolean"},
	"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
	"tone":{"type":"string","enum":["calm","loud"]},
	"city":{"type":"string","enum":["Oslo","Rome","Lima","Kyiv","Pune","Quito"],"default":"Rome"},
	"toppings":{"type":"array","title":"Toppings","items":{"type":"string","enum":["ham","olives","basil"]},"default":["olives"]}
},"required":["name","age","size","toppings"]}`

// TestQuestionPageDrawsEveryKindOfField: a control of the right type per
// field, with its bounds, label, description, required marker and
// default, and the three buttons; no script.
func TestQuestionPageDrawsEveryKindOfField(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	p.put("q1", everyKind)
	r := p.get("q1")
	if r.status != http.StatusOK {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	doc := r.doc
	if h := textOf(elements(doc, byTag("h1"))[0]); !strings.Contains(h, "demo") {
		t.Errorf("the heading %q does not name the server", h)
	}
	if m := byID(doc, "message"); m == nil || textOf(m) != "Tell us about you" {
		t.Errorf("the message is not shown")
	}

	type want struct {
		name, tag, typ string
		attrs          map[string]string // "" means present, whatever its value
		absent         []string
		label          string // part of its label
		value          string
	}
	for _, w := range []want{
		{name: "name", tag: "input", typ: "text", attrs: map[string]string{"minlength": "2", "maxlength": "40", "required": ""}, label: "Your name (required)", value: "Ada"},
		{name: "email", tag: "input", typ: "email", absent: []string{"required"}, label: "Email"},
		{name: "site", tag: "input", typ: "url", label: "site"},
		{name: "born", tag: "input", typ: "date", label: "born"},
		{name: "meet", tag: "input", typ: "text", attrs: map[string]string{"pattern": ""}, label: "meet"},
		{name: "ratio", tag: "input", typ: "number", attrs: map[string]string{"min": "0", "max": "1", "step": "any"}, label: "ratio", value: "0.5"},
		{name: "age", tag: "input", typ: "number", attrs: map[string]string{"min": "1", "max": "150", "step": "1", "required": ""}, label: "age (required)"},
		{name: "agree", tag: "input", typ: "checkbox", attrs: map[string]string{"checked": "", "value": "true"}, absent: []string{"required"}, label: "I agree"},
		{name: "news", tag: "input", typ: "checkbox", absent: []string{"checked", "required"}, label: "news"},
		{name: "city", tag: "select", label: "city"},
	} {
		c := control(t, doc, "field."+w.name)
		if c.Data != w.tag || w.typ != "" && attrOf(c, "type") != w.typ {
			t.Errorf("%s: <%s type=%q>, want <%s type=%q>", w.name, c.Data, attrOf(c, "type"), w.tag, w.typ)
		}
		for k, v := range w.attrs {
			if got, ok := attr(c, k); !ok || v != "" && got != v {
				t.Errorf("%s: %s=%q (present %v), want %q", w.name, k, got, ok, v)
			}
		}
		for _, k := range w.absent {
			if hasAttr(c, k) {
				t.Errorf("%s has %s", w.name, k)
			}
		}
		if l := labelOf(t, doc, c); !strings.Contains(l, w.label) || !strings.Contains(w.label, "required") && strings.Contains(l, "required") {
			t.Errorf("%s is labelled %q, want %q", w.name, l, w.label)
		}
		if c.Data == "input" && attrOf(c, "value") != w.value && w.typ != "checkbox" {
			t.Errorf("%s holds %q, want %q", w.name, attrOf(c, "value"), w.value)
		}
	}

	// The description is tied to its control.
	name := control(t, doc, "field.name")
	if d := byID(doc, attrOf(name, "aria-describedby")); d == nil || textOf(d) != "As on your badge" {
		t.Errorf("the name's description is not tied to it")
	}
	meet := control(t, doc, "field.meet")
	if !strings.Contains(textOf(fieldOf(t, doc, "meet")), "offset from UTC") || attrOf(meet, "aria-describedby") == "" {
		t.Errorf("the date-time field does not say what it takes")
	}

	// A few choices are radios with their titles; required, so no "no answer".
	size := controls(doc, "field.size")
	var titles []string
	for _, c := range size {
		if attrOf(c, "type") != "radio" || !hasAttr(c, "required") {
			t.Errorf("size choice %q: type %q, required %v", attrOf(c, "value"), attrOf(c, "type"), hasAttr(c, "required"))
		}
		titles = append(titles, attrOf(c, "value")+"="+labelOf(t, doc, c))
	}
	if !slices.Equal(titles, []string{"s=Small", "l=Large"}) {
		t.Errorf("size choices %v", titles)
	}
	if legend := textOf(elements(fieldOf(t, doc, "size"), byTag("legend"))[0]); legend != "size (required)" {
		t.Errorf("size legend %q", legend)
	}
	// An optional one can be left unanswered, as it starts.
	var tones []string
	for _, c := range controls(doc, "field.tone") {
		tones = append(tones, attrOf(c, "value")+"="+labelOf(t, doc, c))
	}
	if !slices.Equal(tones, []string{"=No answer", "calm=calm", "loud=loud"}) || !slices.Equal(checkedValues(doc, "field.tone"), []string{""}) {
		t.Errorf("tone choices %v, checked %q", tones, checkedValues(doc, "field.tone"))
	}
	// Many choices are a select, with an empty choice for an optional
	// field, and the default selected.
	city := control(t, doc, "field.city")
	var opts []string
	for _, o := range elements(city, byTag("option")) {
		opts = append(opts, attrOf(o, "value"))
	}
	if !slices.Equal(opts, []string{"", "Oslo", "Rome", "Lima", "Kyiv", "Pune", "Quito"}) || !slices.Equal(selected(city), []string{"Rome"}) {
		t.Errorf("city options %q, selected %q", opts, selected(city))
	}
	// A multi-select is a box per choice, the default ticked.
	for _, c := range controls(doc, "field.toppings") {
		if attrOf(c, "type") != "checkbox" {
			t.Errorf("topping %q is a %q", attrOf(c, "value"), attrOf(c, "type"))
		}
		labelOf(t, doc, c)
	}
	if got := checkedValues(doc, "field.toppings"); !slices.Equal(got, []string{"olives"}) || len(controls(doc, "field.toppings")) != 3 {
		t.Errorf("toppings ticked %v", got)
	}

	// Submit, Decline and Cancel; only Submit asks the browser to check
	// the form.
	forms := elements(doc, byTag("form"))
	if len(forms) != 1 || attrOf(forms[0], "method") != "post" || hasAttr(forms[0], "action") {
		t.Fatalf("want one form posting to its own address")
	}
	var buttons []string
	for _, b := range elements(forms[0], byTag("button")) {
		if attrOf(b, "name") != "action" || attrOf(b, "type") != "submit" {
			t.Errorf("button %q is not a submit named action", textOf(b))
		}
		buttons = append(buttons, attrOf(b, "value")+"="+textOf(b))
		if v := attrOf(b, "value"); (v != "accept") != hasAttr(b, "formnovalidate") {
			t.Errorf("button %s: formnovalidate %v", v, hasAttr(b, "formnovalidate"))
		}
	}
	if !slices.Equal(buttons, []string{"accept=Submit", "decline=Decline", "cancel=Cancel"}) {
		t.Errorf("buttons %v", buttons)
	}
	if s := elements(doc, func(n *html.Node) bool { return n.Data == "script" || n.Data == "link" || n.Data == "img" }); len(s) > 0 {
		t.Errorf("the page loads or runs something: <%s>", s[0].Data)
	}
}

// TestQuestionPageEscapesTheQuestion: what a server wrote is text on the
// page, never markup.
func TestQuestionPageEscapesTheQuestion(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	p.putInteraction(&store.Interaction{ID: "q1", Tenant: "t", Server: "demo", Kind: store.KindQuestion, Message: "q",
		Payload: questionPayload(t, &store.Question{Server: "demo<b>", Message: "Hello " + evil,
			Schema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","title":"` + strings.ReplaceAll(evil, `"`, `\"`) + `","description":"` + evil + `","default":"\"><script>alert(3)</script>"}}}`)}),
		CreatedAt: time.Now(), Expiry: time.Now().Add(time.Minute)})
	r := p.get("q1")
	if r.status != http.StatusOK {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	if s := elements(r.doc, func(n *html.Node) bool { return n.Data == "script" || n.Data == "img" || n.Data == "b" }); len(s) > 0 {
		t.Fatalf("the server's text became markup: <%s> in %s", s[0].Data, r.body)
	}
	if m := textOf(byID(r.doc, "message")); !strings.Contains(m, "<script>alert(1)</script>") {
		t.Errorf("the message is not shown as text: %q", m)
	}
	if v := attrOf(control(t, r.doc, "field.x"), "value"); v != `"><script>alert(3)</script>` {
		t.Errorf("the default is %q", v)
	}
}

// TestQuestionPageNotices: what a link that cannot be answered shows.
func TestQuestionPageNotices(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	p.put("open", `{"type":"object","properties":{"x":{"type":"string"}}}`)
	answered := questionPayload(t, &store.Question{Server: "demo", Message: "m", Schema: json.RawMessage(`{"type":"object","properties":{}}`),
		Answer: &store.Answer{Action: "decline"}})
	p.putInteraction(&store.Interaction{ID: "answered", Tenant: "t", Server: "demo", Kind: store.KindQuestion, Payload: answered,
		CreatedAt: time.Now(), Expiry: time.Now().Add(time.Minute)})
	p.putInteraction(&store.Interaction{ID: "expired", Tenant: "t", Server: "demo", Kind: store.KindQuestion,
		Payload:   questionPayload(t, &store.Question{Server: "demo", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}),
		CreatedAt: time.Now().Add(-time.Hour), Expiry: time.Now().Add(-time.Minute)})
	p.putInteraction(&store.Interaction{ID: "login", Tenant: "t", Server: "demo", Kind: store.KindLogin, Payload: []byte(`{"user":"u"}`),
		CreatedAt: time.Now(), Expiry: time.Now().Add(time.Minute)})
	for _, c := range []struct {
		method, id string
		status     int
		title      string
	}{
		{"GET", "nosuch", http.StatusNotFound, "No such question"},
		{"GET", "expired", http.StatusNotFound, "No such question"},
		{"GET", "login", http.StatusNotFound, "No such question"},
		{"GET", "answered", http.StatusGone, "Already answered"},
		{"POST", "nosuch", http.StatusNotFound, "No such question"},
		{"POST", "login", http.StatusNotFound, "No such question"},
		{"POST", "answered", http.StatusConflict, "Already answered"},
		{"PUT", "open", http.StatusMethodNotAllowed, "Not allowed"},
		{"DELETE", "open", http.StatusMethodNotAllowed, "Not allowed"},
	} {
		var r pageResponse
		if c.method == "POST" {
			r = p.post(c.id, url.Values{"action": {"decline"}})
		} else {
			req, _ := http.NewRequest(c.method, p.srv.URL+"/questions/"+c.id, nil)
			r = p.do(req)
		}
		if r.status != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.id, r.status, c.status)
		}
		if h := elements(r.doc, byTag("h1")); len(h) != 1 || textOf(h[0]) != c.title {
			t.Errorf("%s %s: not a notice titled %q: %s", c.method, c.id, c.title, r.body)
		}
		if c.status == http.StatusMethodNotAllowed && r.header.Get("Allow") != "GET, HEAD, POST" {
			t.Errorf("%s: Allow %q", c.method, r.header.Get("Allow"))
		}
	}
	if a := p.answer("open"); a != nil {
		t.Errorf("a refused request answered the question: %+v", a)
	}
}

// TestQuestionPageSecurityHeaders: every response, page or notice,
// carries the same headers.
func TestQuestionPageSecurityHeaders(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	p.put("q1", `{"type":"object","properties":{"x":{"type":"string"}}}`)
	p.put("q2", `{"type":"object","properties":{"x":{"type":"string"}}}`)
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-store",
		"X-Frame-Options":         "DENY",
		"Content-Type":            "text/html; charset=utf-8",
	}
	del, _ := http.NewRequest(http.MethodDelete, p.srv.URL+"/questions/q1", nil)
	for what, r := range map[string]pageResponse{
		"the form":      p.get("q1"),
		"a 404":         p.get("nosuch"),
		"a 405":         p.do(del),
		"a 403":         p.post("q1", url.Values{"action": {"decline"}}, "Sec-Fetch-Site", "cross-site"),
		"a 400":         p.post("q1", url.Values{"action": {"maybe"}}),
		"a re-rendered": p.post("q1", url.Values{"action": {"accept"}, "field.x": {"a", "b"}}),
		"a success":     p.post("q2", url.Values{"action": {"cancel"}}),
	} {
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s (%d): %s %q, want %q", what, r.status, k, got, v)
			}
		}
	}
}

// TestQuestionPageAcceptTypesTheAnswer: each kind of field's form value
// reaches the store as the type its schema says.
func TestQuestionPageAcceptTypesTheAnswer(t *testing.T) {
	t.Parallel()
	page := newQPage(t)
	for i, c := range []struct {
		name   string
		schema string // one property named v, optional unless it says
		form   []string
		want   map[string]any
	}{
		{"text", `{"type":"string"}`, []string{"Ada Lovelace"}, map[string]any{"v": "Ada Lovelace"}},
		{"empty optional text", `{"type":"string"}`, []string{""}, map[string]any{}},
		{"email", `{"type":"string","format":"email"}`, []string{"ada@example.com"}, map[string]any{"v": "ada@example.com"}},
		{"url", `{"type":"string","format":"uri"}`, []string{"https://example.com/a"}, map[string]any{"v": "https://example.com/a"}},
		{"date", `{"type":"string","format":"date"}`, []string{"2026-12-31"}, map[string]any{"v": "2026-12-31"}},
		{"date-time", `{"type":"string","format":"date-time"}`, []string{"2026-12-31T09:30:00+01:00"}, map[string]any{"v": "2026-12-31T09:30:00+01:00"}},
		{"integer", `{"type":"integer","minimum":0}`, []string{"42"}, map[string]any{"v": 42.0}},
		{"number", `{"type":"number"}`, []string{" -0.25 "}, map[string]any{"v": -0.25}},
		{"empty optional number", `{"type":"number"}`, []string{""}, map[string]any{}},
		{"ticked box", `{"type":"boolean"}`, []string{"true"}, map[string]any{"v": true}},
		{"unticked box", `{"type":"boolean","default":true}`, nil, map[string]any{"v": false}},
		{"choice", `{"type":"string","enum":["a","b"]}`, []string{"b"}, map[string]any{"v": "b"}},
		{"no choice", `{"type":"string","enum":["a","b"]}`, []string{""}, map[string]any{}},
		{"multi-select", `{"type":"array","items":{"enum":["a","b","c"]}}`, []string{"a", "c"}, map[string]any{"v": []any{"a", "c"}}},
		{"empty optional multi-select", `{"type":"array","items":{"enum":["a","b","c"]}}`, nil, map[string]any{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, id := page.on(t), fmt.Sprintf("q%d", i)
			p.put(id, `{"type":"object","properties":{"v":`+c.schema+`}}`)
			form := url.Values{"action": {"accept"}}
			if c.form != nil {
				form["field.v"] = c.form
			}
			r := p.post(id, form)
			if r.status != http.StatusOK || !strings.Contains(textOf(r.doc), "Your answer went to demo") {
				t.Fatalf("POST: %d %s", r.status, r.body)
			}
			a := p.answer(id)
			if a == nil || a.Action != "accept" {
				t.Fatalf("stored answer %+v", a)
			}
			if d := cmp.Diff(c.want, a.Content, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("stored content (-want +got):\n%s", d)
			}
		})
	}
}

// TestQuestionPageAcceptsAWholeForm: every kind at once, as a browser
// sends the form drawn from everyKind.
func TestQuestionPageAcceptsAWholeForm(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	p.put("q", everyKind)
	r := p.post("q", url.Values{"action": {"accept"},
		"field.name": {"Grace"}, "field.email": {""}, "field.site": {""}, "field.born": {"1906-12-09"}, "field.meet": {""},
		"field.ratio": {"0.75"}, "field.age": {"85"}, "field.size": {"l"}, "field.tone": {""}, "field.city": {""}, "field.toppings": {"ham", "basil"},
		"field.agree": {"true"}, "unknown": {"ignored"}})
	if r.status != http.StatusOK {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	want := map[string]any{"name": "Grace", "born": "1906-12-09", "ratio": 0.75, "age": 85.0, "size": "l",
		"toppings": []any{"ham", "basil"}, "agree": true, "news": false}
	if a := p.answer("q"); a == nil || a.Action != "accept" || !cmp.Equal(a.Content, want) {
		t.Errorf("stored %+v, want content %v", a, want)
	}
}

// TestQuestionPageWrongAnswerKeepsTheForm: a value the form does not
// allow shows the form again, status 400, saying what is wrong and
// holding what the person entered; nothing is stored.
func TestQuestionPageWrongAnswerKeepsTheForm(t *testing.T) {
	t.Parallel()
	good := url.Values{"action": {"accept"}, "field.name": {"Grace"}, "field.age": {"85"}, "field.size": {"l"},
		"field.city": {"Lima"}, "field.toppings": {"ham", "basil"}, "field.news": {"true"}, "field.ratio": {"0.1"}}
	page := newQPage(t)
	for i, c := range []struct {
		name   string
		change url.Values
		says   string
	}{
		{"too short", url.Values{"field.name": {"G"}}, "name must be of the allowed length"},
		{"missing required", url.Values{"field.name": {""}}, "name is required"},
		{"not a number", url.Values{"field.age": {"eighty"}}, "age must be a number"},
		{"not whole", url.Values{"field.age": {"8.5"}}, "age must be a whole number"},
		{"out of range", url.Values{"field.ratio": {"2"}}, "ratio must be within the allowed range"},
		{"not a choice", url.Values{"field.size": {"xl"}}, "size must be one of the choices"},
		{"not an email", url.Values{"field.email": {"grace at navy"}}, "email must be an email address"},
		{"not a url", url.Values{"field.site": {"navy.mil"}}, "site must be an absolute URL"},
		{"not a date", url.Values{"field.born": {"9 Dec 1906"}}, "born must be a date"},
		{"no offset", url.Values{"field.meet": {"2026-12-31T09:30"}}, "meet must be a date and time with its offset"},
		{"twice", url.Values{"field.name": {"Grace", "Ada"}}, "name must be one value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, id := page.on(t), fmt.Sprintf("q%d", i)
			p.put(id, everyKind)
			form := url.Values{}
			for k, v := range good {
				form[k] = v
			}
			for k, v := range c.change {
				form[k] = v
			}
			r := p.post(id, form)
			if r.status != http.StatusBadRequest {
				t.Fatalf("POST: %d, want 400: %s", r.status, r.body)
			}
			problem := byID(r.doc, "problem")
			if problem == nil || attrOf(problem, "role") != "alert" || !strings.Contains(textOf(problem), c.says) {
				t.Fatalf("the page does not say %q: %s", c.says, r.body)
			}
			// The form is there again, with the person's values.
			if v := attrOf(control(t, r.doc, "field.name"), "value"); v != form.Get("field.name") {
				t.Errorf("name holds %q, want %q", v, form.Get("field.name"))
			}
			if v := attrOf(control(t, r.doc, "field.age"), "value"); v != form.Get("field.age") {
				t.Errorf("age holds %q, want %q", v, form.Get("field.age"))
			}
			if got := checkedValues(r.doc, "field.toppings"); !slices.Equal(got, []string{"ham", "basil"}) {
				t.Errorf("toppings ticked %v, want the person's, not the default", got)
			}
			if got := checkedValues(r.doc, "field.size"); c.change.Has("field.size") && len(got) != 0 || !c.change.Has("field.size") && !slices.Equal(got, []string{"l"}) {
				t.Errorf("size picked %v", got)
			}
			if !hasAttr(control(t, r.doc, "field.news"), "checked") || hasAttr(control(t, r.doc, "field.agree"), "checked") {
				t.Errorf("the boxes are not as the person left them")
			}
			if got := selected(control(t, r.doc, "field.city")); !slices.Equal(got, []string{"Lima"}) {
				t.Errorf("city selected %v", got)
			}
			if a := p.answer(id); a != nil {
				t.Errorf("a wrong answer was stored: %+v", a)
			}
			// Put right, the same question takes the answer.
			if r := p.post(id, good); r.status != http.StatusOK {
				t.Errorf("the corrected answer: %d %s", r.status, r.body)
			}
		})
	}
}

// TestQuestionPageDeclineAndCancel: those answers carry no content, and
// need no valid form.
func TestQuestionPageDeclineAndCancel(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			p := newQPage(t)
			p.put("q", everyKind)
			r := p.post("q", url.Values{"action": {action}, "field.age": {"not a number"}})
			if r.status != http.StatusOK || !strings.Contains(textOf(r.doc), "go back to your agent") {
				t.Fatalf("POST: %d %s", r.status, r.body)
			}
			if a := p.answer("q"); a == nil || a.Action != action || a.Content != nil {
				t.Errorf("stored %+v, want %s without content", a, action)
			}
		})
	}
}

// TestQuestionPageRefusesOtherSites: an answer a page of another site
// makes the person's browser send is refused, whichever header gives it
// away, and nothing is stored.
func TestQuestionPageRefusesOtherSites(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	p.put("q", `{"type":"object","properties":{"x":{"type":"string"}}}`)
	for _, h := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "https://evil.example"},
		{"Origin", "http://" + strings.Replace(hostOf(p.srv.URL), "127.0.0.1", "localhost", 1)},
		{"Origin", "null", "Sec-Fetch-Site", ""},
		{"Origin", "null", "Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "cross-site", "Origin", ""},
		{"Origin", "https://evil.example", "Sec-Fetch-Site", ""},
	} {
		r := p.post("q", url.Values{"action": {"accept"}, "field.x": {"yes"}}, h...)
		if r.status != http.StatusForbidden {
			t.Errorf("%v: %d, want 403", h, r.status)
		}
	}
	if a := p.answer("q"); a != nil {
		t.Fatalf("a cross-site answer was stored: %+v", a)
	}
	// What a browser sends from the page itself is let through: Chromium
	// sends Origin null, since the page's Referrer-Policy is no-referrer.
	for i, h := range [][]string{
		{"Origin", "null", "Sec-Fetch-Site", "same-origin"},
		{"Origin", p.srv.URL, "Sec-Fetch-Site", "same-origin"},
		{"Origin", "", "Sec-Fetch-Site", ""},
		{"Origin", "", "Sec-Fetch-Site", "none"},
	} {
		id := "ok" + string(rune('0'+i))
		p.put(id, `{"type":"object","properties":{"x":{"type":"string"}}}`)
		if r := p.post(id, url.Values{"action": {"accept"}, "field.x": {"yes"}}, h...); r.status != http.StatusOK {
			t.Errorf("%v: %d %s", h, r.status, r.body)
		}
	}
}

// TestQuestionPageRefusesWhatIsNotAnAnswer: a body too big, not a form, or
// without an action.
func TestQuestionPageRefusesWhatIsNotAnAnswer(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	p.put("q", `{"type":"object","properties":{"x":{"type":"string"}}}`)
	big := url.Values{"action": {"accept"}, "field.x": {strings.Repeat("a", 64<<10)}}.Encode()
	send := func(body io.Reader, contentType string) pageResponse {
		req, _ := http.NewRequest(http.MethodPost, p.srv.URL+"/questions/q", body)
		req.Header.Set("Content-Type", contentType)
		return p.do(req)
	}
	const form = "application/x-www-form-urlencoded"
	for _, c := range []struct {
		name   string
		r      pageResponse
		status int
	}{
		{"too big", send(strings.NewReader(big), form), http.StatusRequestEntityTooLarge},
		// Without a length up front, the limit stops the read.
		{"too big, chunked", send(io.MultiReader(strings.NewReader(big)), form), http.StatusRequestEntityTooLarge},
		{"JSON", send(strings.NewReader(`{"action":"accept"}`), "application/json"), http.StatusUnsupportedMediaType},
		{"no action", send(strings.NewReader("field.x=a"), form), http.StatusBadRequest},
		{"another action", send(strings.NewReader("action=maybe"), form), http.StatusBadRequest},
	} {
		if c.r.status != c.status {
			t.Errorf("%s: %d, want %d", c.name, c.r.status, c.status)
		}
	}
	if a := p.answer("q"); a != nil {
		t.Fatalf("stored %+v", a)
	}
	// Just under the limit is an answer.
	ok := url.Values{"action": {"accept"}, "field.x": {strings.Repeat("a", 64<<10-len("action=accept&field.x="))}}.Encode()
	if r := send(strings.NewReader(ok), form); r.status != http.StatusOK {
		t.Errorf("64 KiB: %d", r.status)
	}
}

// TestQuestionPageAnswersOnce: of answers sent at once (two tabs, two
// replicas), one is stored and the others are told it was answered.
func TestQuestionPageAnswersOnce(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	p.put("q", `{"type":"object","properties":{"x":{"type":"string"}}}`)
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i] = p.post("q", url.Values{"action": {"accept"}, "field.x": {string(rune('a' + i))}}).status
		})
	}
	wg.Wait()
	winner := -1
	for i, s := range statuses {
		switch {
		case s == http.StatusOK && winner < 0:
			winner = i
		case s != http.StatusConflict:
			t.Errorf("answer %d: %d", i, s)
		}
	}
	if winner < 0 {
		t.Fatalf("no answer was taken: %v", statuses)
	}
	if a := p.answer("q"); a == nil || a.Content["x"] != string(rune('a'+winner)) {
		t.Errorf("stored %+v, but answer %d was the one told it went through", a, winner)
	}
	if r := p.post("q", url.Values{"action": {"decline"}}); r.status != http.StatusConflict {
		t.Errorf("answering later: %d, want 409", r.status)
	}
	if r := p.get("q"); r.status != http.StatusGone {
		t.Errorf("opening it later: %d, want 410", r.status)
	}
}

// TestQuestionPageDeclinesUndrawable: a form the page cannot draw is
// declined as soon as the link is opened, so the call goes on; the person
// is told, and the log never has the link's ID.
func TestQuestionPageDeclinesUndrawable(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	const id = "nestedQuestionID1234"
	p.put(id, `{"type":"object","properties":{"address":{"type":"object","properties":{"street":{"type":"string"}}}}}`)
	r := p.get(id)
	if r.status != http.StatusOK || !strings.Contains(textOf(r.doc), "declined") || len(elements(r.doc, byTag("form"))) != 0 {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	if a := p.answer(id); a == nil || a.Action != "decline" {
		t.Errorf("stored %+v, want decline", a)
	}
	if r := p.get(id); r.status != http.StatusGone {
		t.Errorf("opening it again: %d, want 410", r.status)
	}
	if logs := p.logs.String(); !strings.Contains(logs, "cannot be shown") || strings.Contains(logs, id) {
		t.Errorf("logs: %s", logs)
	}
}

// TestQuestionPageAndCardAnswerOnce: the settings page's card and the
// question page write through one function: once one has answered, the
// other is refused.
func TestQuestionPageAndCardAnswerOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.putQuestion("shared", `{"type":"object","properties":{"colour":{"type":"string"}}}`)
	srv := httptest.NewServer(questionMux(e.st))
	defer srv.Close()
	p := &qpage{t: t, st: e.st, srv: srv}
	if r := p.post("shared", url.Values{"action": {"accept"}, "field.colour": {"red"}}); r.status != http.StatusOK {
		t.Fatalf("page: %d %s", r.status, r.body)
	}
	if code, body := e.do("POST", "/api/pending/~shared", map[string]any{"action": "accept", "content": map[string]any{"colour": "blue"}}); code != http.StatusConflict {
		t.Errorf("the card after the page: %d %s, want 409", code, body)
	}
	if a := p.answer("shared"); a == nil || a.Content["colour"] != "red" {
		t.Errorf("stored %+v", a)
	}
}

func questionMux(st store.Store) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/questions/{id}", web.QuestionPage(&web.QuestionPageOptions{Store: st}))
	return mux
}

// TestQuestionPageAnswersAStoredQuestion: the whole way. serve's
// StoredQuestions stores a server's question and announces it; the person
// opens the page, fills in the form and sends it; Ask returns the typed
// answer to the call that asked.
func TestQuestionPageAnswersAStoredQuestion(t *testing.T) {
	t.Parallel()
	p := newQPage(t)
	announced := make(chan string, 1)
	q := &serve.StoredQuestions{Store: p.st, Tenant: "t", Poll: 10 * time.Millisecond, Timeout: time.Minute,
		Answerable: func(context.Context) bool { return true },
		Announced:  func(_ context.Context, in *store.Interaction) { announced <- in.ID },
	}
	type result struct {
		content map[string]any
		action  string
		err     error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		res, err := q.Ask(ctx, &manager.ElicitRequest{Server: "demo", Message: "Which plan?", Schema: json.RawMessage(`{"type":"object","properties":{
			"plan":{"type":"string","enum":["free","pro"]},
			"seats":{"type":"integer","minimum":1},
			"annual":{"type":"boolean"},
			"extras":{"type":"array","items":{"enum":["sso","audit"]}}
		},"required":["plan","seats"]}`)})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{content: res.Content, action: res.Action}
	}()
	var id string
	select {
	case id = <-announced:
	case r := <-done:
		t.Fatalf("Ask returned before announcing: %+v", r)
	}
	page := p.get(id)
	if page.status != http.StatusOK || textOf(byID(page.doc, "message")) != "Which plan?" {
		t.Fatalf("GET: %d %s", page.status, page.body)
	}
	if r := p.post(id, url.Values{"action": {"accept"}, "field.plan": {"pro"}, "field.seats": {"3"}, "field.extras": {"sso", "audit"}}); r.status != http.StatusOK {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := map[string]any{"plan": "pro", "seats": 3.0, "annual": false, "extras": []any{"sso", "audit"}}
	if r.action != "accept" || !cmp.Equal(r.content, want) {
		t.Errorf("Ask returned %s %v, want accept %v", r.action, r.content, want)
	}
	if _, err := p.st.Interaction(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the question outlived its call: %v", err)
	}
}
