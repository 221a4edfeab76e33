package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How a call answers a server's form elicitation (--elicit).
const (
	elicitAsk            = "ask"             // ask the person on the terminal
	elicitAcceptDefaults = "accept-defaults" // send the schema's defaults
	elicitDecline        = "decline"         // always decline: the person chose it
	// elicitNoTerminal declines because there is nobody to ask: no
	// terminal and no --elicit.
	elicitNoTerminal = "no-terminal"
)

// The actions of an elicitation result.
const (
	actionAccept  = "accept"
	actionDecline = "decline"
	actionCancel  = "cancel"
)

// elicitor answers form elicitations for the manager. It handles one at a
// time: a person can only answer one form at once.
type elicitor struct {
	mode string
	in   *lineReader // for elicitAsk
	out  io.Writer   // where questions and notes go (stderr)

	mu sync.Mutex
	// beforeAsk runs before the first question, so a spinner does not draw
	// over it.
	beforeAsk func()
}

func newElicitor(mode string, in *lineReader, out io.Writer) *elicitor {
	return &elicitor{mode: mode, in: in, out: out}
}

func (e *elicitor) setBeforeAsk(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.beforeAsk = f
}

// elicit has the signature of [manager.Options.Elicit].
func (e *elicitor) elicit(ctx context.Context, req *manager.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	server := firstLine(req.Server, 40)
	form, err := parseForm(req.Schema)
	if err != nil {
		fmt.Fprintf(e.out, "mcpgate: %s asked for input with a form mcpgate cannot show (%v); declined\n", server, err)
		return &mcp.ElicitResult{Action: actionDecline}, nil
	}
	switch e.mode {
	case elicitAcceptDefaults:
		content, err := form.defaults()
		if err != nil {
			fmt.Fprintf(e.out, "mcpgate: %s asked for input; declined: %v\n", server, err)
			return &mcp.ElicitResult{Action: actionDecline}, nil
		}
		fmt.Fprintf(e.out, "mcpgate: %s asked for input; accepted its defaults\n", server)
		return &mcp.ElicitResult{Action: actionAccept, Content: content}, nil
	case elicitAsk:
		if e.beforeAsk != nil {
			e.beforeAsk()
			e.beforeAsk = nil
		}
		return e.ask(ctx, server, req.Message, form)
	case elicitDecline:
		fmt.Fprintf(e.out, "mcpgate: %s asked for input; declined, as you chose with --elicit decline\n", server)
		return &mcp.ElicitResult{Action: actionDecline}, nil
	default:
		fmt.Fprintf(e.out, "mcpgate: %s asked for input; declined (no terminal to ask on; see --elicit)\n", server)
		return &mcp.ElicitResult{Action: actionDecline}, nil
	}
}

// ask shows the message and asks each field in order. Enter takes the
// default; "decline" or "cancel" at any question ends the form with that
// action; the end of input cancels.
func (e *elicitor) ask(ctx context.Context, server, message string, form *form) (*mcp.ElicitResult, error) {
	w := e.out
	fmt.Fprintf(w, "\nThe server %q asks:\n", server)
	for _, line := range strings.Split(strings.TrimSpace(sanitize(message)), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintln(w, `Press Enter to accept the [default]. Type "decline" to refuse or "cancel" to dismiss.`)
	content := map[string]any{}
	for _, f := range form.fields {
		for {
			fmt.Fprint(w, f.prompt())
			line, err := e.in.readLine(ctx)
			if err != nil {
				fmt.Fprintln(w)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				fmt.Fprintln(w, "(no more input: cancelled)")
				return &mcp.ElicitResult{Action: actionCancel}, nil
			}
			answer := strings.TrimSpace(line)
			switch answer {
			case actionDecline:
				fmt.Fprintln(w, "(declined)")
				return &mcp.ElicitResult{Action: actionDecline}, nil
			case actionCancel:
				fmt.Fprintln(w, "(cancelled)")
				return &mcp.ElicitResult{Action: actionCancel}, nil
			}
			v, set, err := f.parse(answer)
			if err != nil {
				fmt.Fprintf(w, "    %v\n", err)
				continue
			}
			if set {
				content[f.name] = v
			}
			break
		}
	}
	return &mcp.ElicitResult{Action: actionAccept, Content: content}, nil
}

// form is the restricted schema of a form elicitation: a flat object of
// string, number, integer, boolean and multi-select fields, in the order
// the server listed them.
type form struct {
	fields []*field
}

type field struct {
	name        string
	typ         string // string, number, integer, boolean, array
	title, desc string
	required    bool
	def         any // validated default, nil when there is none

	choices []choice // enum, oneOf, or the items of a multi-select
	format  string
	minLen  *int
	maxLen  *int
	minimum *float64
	maximum *float64
}

type choice struct{ value, label string }

// schemaProperty is the JSON of one property; every field is optional.
type schemaProperty struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Default     json.RawMessage `json:"default"`
	Enum        []any           `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []schemaConst   `json:"oneOf"`
	AnyOf       []schemaConst   `json:"anyOf"`
	Format      string          `json:"format"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Items       *schemaProperty `json:"items"`
}

type schemaConst struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// maxFormFields bounds what a server can make a person answer.
const maxFormFields = 50

func parseForm(raw json.RawMessage) (*form, error) {
	var top struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %v", err)
	}
	if top.Type != "" && top.Type != "object" {
		return nil, fmt.Errorf("schema type %q is not object", top.Type)
	}
	names, props, err := orderedProperties(top.Properties)
	if err != nil {
		return nil, err
	}
	if len(names) > maxFormFields {
		return nil, fmt.Errorf("%d fields, more than %d", len(names), maxFormFields)
	}
	f := &form{}
	for i, name := range names {
		fl, err := newField(name, props[i])
		if err != nil {
			return nil, fmt.Errorf("field %q: %v", firstLine(name, 40), err)
		}
		for _, r := range top.Required {
			fl.required = fl.required || r == name
		}
		f.fields = append(f.fields, fl)
	}
	// Required fields first: they are what the server cannot do without.
	// (The go-sdk client hands the schema over as a map, so the server's
	// own order is usually lost by now.)
	slices.SortStableFunc(f.fields, func(a, b *field) int {
		switch {
		case a.required == b.required:
			return 0
		case a.required:
			return -1
		}
		return 1
	})
	return f, nil
}

// orderedProperties decodes "properties" keeping the order of the JSON, so
// the questions come in the order the form was written.
func orderedProperties(raw json.RawMessage) ([]string, []*schemaProperty, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("properties is not an object")
	}
	var names []string
	var props []*schemaProperty
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("properties: %v", err)
		}
		name, _ := t.(string)
		p := &schemaProperty{}
		if err := dec.Decode(p); err != nil {
			return nil, nil, fmt.Errorf("property %q: %v", firstLine(name, 40), err)
		}
		names = append(names, name)
		props = append(props, p)
	}
	return names, props, nil
}

func newField(name string, p *schemaProperty) (*field, error) {
	if name == "" {
		return nil, errors.New("empty name")
	}
	f := &field{
		name: name, typ: p.Type, title: p.Title, desc: p.Description, format: p.Format,
		minLen: p.MinLength, maxLen: p.MaxLength, minimum: p.Minimum, maximum: p.Maximum,
	}
	switch p.Type {
	case "string":
		switch {
		case len(p.OneOf) > 0:
			f.choices = constChoices(p.OneOf)
		case len(p.Enum) > 0:
			f.choices = enumChoices(p.Enum, p.EnumNames)
		}
	case "number", "integer", "boolean":
	case "array":
		if p.Items == nil {
			return nil, errors.New("multi-select without items")
		}
		switch {
		case len(p.Items.AnyOf) > 0:
			f.choices = constChoices(p.Items.AnyOf)
		case len(p.Items.OneOf) > 0:
			f.choices = constChoices(p.Items.OneOf)
		case len(p.Items.Enum) > 0:
			f.choices = enumChoices(p.Items.Enum, nil)
		default:
			return nil, errors.New("multi-select without choices")
		}
		f.minLen, f.maxLen = p.MinItems, p.MaxItems
	default:
		return nil, fmt.Errorf("unsupported type %q", firstLine(p.Type, 20))
	}
	if len(p.Default) > 0 && string(p.Default) != "null" {
		var d any
		if err := json.Unmarshal(p.Default, &d); err == nil {
			// A default that breaks the field's own rules is no default.
			if v, err := f.check(d); err == nil {
				f.def = v
			}
		}
	}
	return f, nil
}

func constChoices(cs []schemaConst) []choice {
	var out []choice
	for _, c := range cs {
		out = append(out, choice{value: fmt.Sprint(c.Const), label: c.Title})
	}
	return out
}

func enumChoices(values []any, names []string) []choice {
	var out []choice
	for i, v := range values {
		c := choice{value: fmt.Sprint(v)}
		if i < len(names) {
			c.label = names[i]
		}
		out = append(out, c)
	}
	return out
}

// defaults is the content accept-defaults sends: every default, or an
// error when a required field has none.
func (f *form) defaults() (map[string]any, error) {
	content := map[string]any{}
	for _, fl := range f.fields {
		switch {
		case fl.def != nil:
			content[fl.name] = fl.def
		case fl.required:
			return nil, fmt.Errorf("required field %q has no default", firstLine(fl.name, 40))
		}
	}
	return content, nil
}

// prompt is the question for one field, e.g.
//
//	name — Your name (string, required) [Ada]:
//
// A field with choices lists them, numbered, before the answer.
func (f *field) prompt() string {
	var b strings.Builder
	b.WriteString("  " + firstLine(f.name, 40))
	if label := firstLine(orString(f.title, f.desc), 120); label != "" {
		b.WriteString(" — " + label)
	}
	kind := f.typ
	switch {
	case f.typ == "array":
		kind = "choose any, comma-separated"
	case f.typ == "boolean":
		kind = "y/n"
	case len(f.choices) > 0:
		kind = "choose one"
	case f.format != "":
		kind += ", " + firstLine(f.format, 20)
	}
	if f.required {
		kind += ", required"
	}
	fmt.Fprintf(&b, " (%s)", kind)
	for i, c := range f.choices {
		fmt.Fprintf(&b, "\n      %d) %s", i+1, firstLine(c.value, 80))
		if c.label != "" && c.label != c.value {
			fmt.Fprintf(&b, " — %s", firstLine(c.label, 80))
		}
	}
	if len(f.choices) > 0 {
		b.WriteString("\n   ")
	}
	if f.def != nil {
		fmt.Fprintf(&b, " [%s]", firstLine(f.show(f.def), 80))
	}
	b.WriteString(": ")
	return b.String()
}

func (f *field) show(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "y"
		}
		return "n"
	case []string:
		return strings.Join(v, ", ")
	}
	return fmt.Sprint(v)
}

// parse turns a typed answer into the field's value. An empty answer takes
// the default; set is false when an optional field is left empty.
func (f *field) parse(answer string) (v any, set bool, err error) {
	if answer == "" {
		switch {
		case f.def != nil:
			return f.def, true, nil
		case f.required:
			return nil, false, errors.New("a value is required")
		}
		return nil, false, nil
	}
	var raw any = answer
	switch f.typ {
	case "number", "integer":
		n, err := strconv.ParseFloat(answer, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a number", answer)
		}
		raw = n
	case "boolean":
		switch strings.ToLower(answer) {
		case "y", "yes", "true", "1":
			raw = true
		case "n", "no", "false", "0":
			raw = false
		default:
			return nil, false, errors.New("answer y or n")
		}
	case "array":
		var picked []any
		for part := range strings.SplitSeq(answer, ",") {
			if part = strings.TrimSpace(part); part != "" {
				picked = append(picked, f.choiceByIndex(part))
			}
		}
		raw = picked
	default:
		raw = f.choiceByIndex(answer)
	}
	v, err = f.check(raw)
	return v, err == nil, err
}

// choiceByIndex lets a person answer a choice by its number.
func (f *field) choiceByIndex(answer string) string {
	if i, err := strconv.Atoi(answer); err == nil && i >= 1 && i <= len(f.choices) {
		if !f.isChoice(answer) {
			return f.choices[i-1].value
		}
	}
	return answer
}

func (f *field) isChoice(v string) bool {
	for _, c := range f.choices {
		if c.value == v {
			return true
		}
	}
	return false
}

// check validates a value (decoded JSON or parsed input) against the
// field and returns it in the type the content carries.
func (f *field) check(v any) (any, error) {
	switch f.typ {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("want text")
		}
		n := utf8.RuneCountInString(s)
		if f.minLen != nil && n < *f.minLen {
			return nil, fmt.Errorf("at least %d characters", *f.minLen)
		}
		if f.maxLen != nil && n > *f.maxLen {
			return nil, fmt.Errorf("at most %d characters", *f.maxLen)
		}
		if len(f.choices) > 0 && !f.isChoice(s) {
			return nil, errors.New("pick one of the listed choices")
		}
		if err := checkFormat(f.format, s); err != nil {
			return nil, err
		}
		return s, nil
	case "number", "integer":
		n, ok := v.(float64)
		if !ok {
			return nil, errors.New("want a number")
		}
		if f.minimum != nil && n < *f.minimum {
			return nil, fmt.Errorf("at least %v", *f.minimum)
		}
		if f.maximum != nil && n > *f.maximum {
			return nil, fmt.Errorf("at most %v", *f.maximum)
		}
		if f.typ == "integer" {
			if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
				return nil, errors.New("want a whole number")
			}
			return int64(n), nil
		}
		return n, nil
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, errors.New("want y or n")
		}
		return b, nil
	case "array":
		items, ok := v.([]any)
		if !ok {
			return nil, errors.New("want a list")
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if !ok || !f.isChoice(s) {
				return nil, fmt.Errorf("%v is not one of the listed choices", it)
			}
			out = append(out, s)
		}
		if f.minLen != nil && len(out) < *f.minLen {
			return nil, fmt.Errorf("choose at least %d", *f.minLen)
		}
		if f.maxLen != nil && len(out) > *f.maxLen {
			return nil, fmt.Errorf("choose at most %d", *f.maxLen)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported type %q", f.typ)
}

func checkFormat(format, s string) error {
	switch format {
	case "email":
		if _, err := mail.ParseAddress(s); err != nil || strings.ContainsAny(s, "<> ") {
			return errors.New("want an email address")
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || !u.IsAbs() {
			return errors.New("want an absolute URI")
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return errors.New("want a date like 2025-06-18")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return errors.New("want a date and time like 2025-06-18T14:30:00Z")
		}
	}
	return nil
}

func orString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// lineReader reads lines from a stream that cannot be interrupted (a
// terminal), so that a question can still be abandoned when its context
// ends. One goroutine reads ahead at most one line; close ends it unless it
// is blocked in Read, where only input or the process ending can reach it.
type lineReader struct {
	r         *bufio.Reader
	start     sync.Once
	lines     chan string
	quit      chan struct{}
	closeOnce sync.Once
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReader(r), lines: make(chan string), quit: make(chan struct{})}
}

func (l *lineReader) readLine(ctx context.Context) (string, error) {
	l.begin()
	select {
	case line, ok := <-l.lines:
		if !ok {
			return "", io.EOF // or a read error: either way, no answer will come
		}
		return line, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (l *lineReader) loop() {
	defer close(l.lines)
	for {
		s, err := l.r.ReadString('\n')
		if s != "" {
			select {
			case l.lines <- strings.TrimRight(s, "\r\n"):
			case <-l.quit:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// begin starts reading ahead; readLine calls it, a consumer of channel
// calls it once it wants lines.
func (l *lineReader) begin() { l.start.Do(func() { go l.loop() }) }

// channel delivers the lines, without their line ends, once begin has been
// called; it is closed at the end of input (or on a read error). A line is
// read only when the previous one has been taken.
func (l *lineReader) channel() <-chan string { return l.lines }

func (l *lineReader) close() { l.closeOnce.Do(func() { close(l.quit) }) }
