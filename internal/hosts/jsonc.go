package hosts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

// jsonEditor edits JSON and JSONC through hujson's syntax tree, which
// keeps every comment, comma and space of the file: the entry is appended
// as the last member, indented like its siblings, and removing it gives
// back the bytes there were before.
type jsonEditor struct{}

func (jsonEditor) set(data []byte, h Host, entry []field) ([]byte, error) {
	root, obj, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	unit, compact := indentUnit(obj)
	style := jsonStyle{unit: unit, compact: compact, trailing: hasTrailingComma(obj)}
	ci := findMember(obj, h.Key)
	if ci < 0 {
		indent := memberIndent(obj, unit)
		servers := style.render([]field{{EntryName, rawJSON(style.render(entry, indent+unit))}}, indent)
		if err := appendMember(obj, h.Key, servers, indent, "", compact); err != nil {
			return nil, err
		}
		return root.Pack(), nil
	}
	parentIndent := lineIndent(obj.Members[ci].Name.BeforeExtra)
	if lit, ok := obj.Members[ci].Value.Value.(hujson.Literal); ok && lit.Kind() == 'n' {
		// "mcpServers": null is no servers: it becomes an object holding ours.
		v, err := hujson.Parse([]byte(style.render([]field{{EntryName, rawJSON(style.render(entry, parentIndent+unit))}}, parentIndent)))
		if err != nil {
			return nil, err
		}
		obj.Members[ci].Value.Value = v.Value
		return root.Pack(), nil
	}
	servers, ok := obj.Members[ci].Value.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object; fix the file and try again", h.Key)
	}
	indent := memberIndent(servers, parentIndent+unit)
	if len(servers.Members) > 0 {
		style.trailing = hasTrailingComma(servers)
	}
	text := style.render(entry, indent)
	if ei := findMember(servers, EntryName); ei >= 0 {
		v, err := hujson.Parse([]byte(text))
		if err != nil {
			return nil, err
		}
		servers.Members[ei].Value.Value = v.Value
		return root.Pack(), nil
	}
	if err := appendMember(servers, EntryName, text, indent, parentIndent, compact); err != nil {
		return nil, err
	}
	return root.Pack(), nil
}

func (jsonEditor) remove(data []byte, h Host) ([]byte, error) {
	root, obj, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	ci := findMember(obj, h.Key)
	if ci < 0 {
		return data, nil
	}
	servers, ok := obj.Members[ci].Value.Value.(*hujson.Object)
	if !ok {
		return data, nil
	}
	ei := findMember(servers, EntryName)
	if ei < 0 {
		return data, nil
	}
	removeMember(servers, ei)
	if len(servers.Members) == 0 {
		removeMember(obj, ci)
	}
	return root.Pack(), nil
}

func parseObject(data []byte) (*hujson.Value, *hujson.Object, error) {
	root, err := hujson.Parse(bytes.Clone(data)) // the tree shares what it parses, and edits of it must not reach data
	if err != nil {
		return nil, nil, errors.New("the file does not parse")
	}
	obj, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, nil, errors.New("the top level is not an object")
	}
	return &root, obj, nil
}

// findMember is the index of the last member named name (the one a JSON
// decoder keeps), or -1.
func findMember(obj *hujson.Object, name string) int {
	for i := len(obj.Members) - 1; i >= 0; i-- {
		if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && lit.Kind() == '"' && lit.String() == name {
			return i
		}
	}
	return -1
}

// indentUnit guesses the file's indentation from the top level's first
// member: its indent, or compact when the file is on one line.
func indentUnit(obj *hujson.Object) (unit string, compact bool) {
	if len(obj.Members) == 0 {
		return "  ", false
	}
	extra := obj.Members[0].Name.BeforeExtra
	if !bytes.Contains(extra, []byte("\n")) {
		return "", true
	}
	if unit = lineIndent(extra); unit == "" {
		unit = "  "
	}
	return unit, false
}

// memberIndent is the indent of obj's last member, or fallback when it
// has none.
func memberIndent(obj *hujson.Object, fallback string) string {
	if n := len(obj.Members); n > 0 {
		extra := obj.Members[n-1].Name.BeforeExtra
		if bytes.Contains(extra, []byte("\n")) {
			return lineIndent(extra)
		}
	}
	return fallback
}

// lineIndent is the whitespace that starts the last line of extra.
func lineIndent(extra []byte) string {
	tail := extra[bytes.LastIndexByte(extra, '\n')+1:]
	n := 0
	for n < len(tail) && (tail[n] == ' ' || tail[n] == '\t') {
		n++
	}
	return string(tail[:n])
}

// appendMember adds name: text as obj's last member, on a line of its own
// at indent, keeping a trailing comma if the object had one.
func appendMember(obj *hujson.Object, name, text, indent, closeIndent string, compact bool) error {
	v, err := hujson.Parse([]byte(text))
	if err != nil {
		return err
	}
	v.BeforeExtra, v.AfterExtra = nil, nil
	if !compact {
		v.BeforeExtra = []byte(" ")
	}
	m := hujson.ObjectMember{Name: hujson.Value{Value: hujson.String(name)}, Value: v}
	if !compact {
		m.Name.BeforeExtra = []byte("\n" + indent)
	}
	if n := len(obj.Members); n > 0 {
		if obj.Members[n-1].Value.AfterExtra != nil {
			m.Value.AfterExtra = []byte{} // the object has a trailing comma: so has the new last member
		}
	} else if !compact && len(bytes.TrimSpace(obj.AfterExtra)) == 0 {
		obj.AfterExtra = []byte("\n" + closeIndent)
	}
	obj.Members = append(obj.Members, m)
	return nil
}

// removeMember deletes obj's member i with the comments before it; the
// object keeps its trailing comma, or its lack of one.
func removeMember(obj *hujson.Object, i int) {
	n := len(obj.Members)
	trailing := obj.Members[n-1].Value.AfterExtra != nil
	obj.Members = slices.Delete(obj.Members, i, i+1)
	if i == n-1 && len(obj.Members) > 0 {
		last := &obj.Members[len(obj.Members)-1].Value
		switch {
		case trailing && last.AfterExtra == nil:
			last.AfterExtra = []byte{}
		case !trailing && last.AfterExtra != nil:
			obj.AfterExtra = append(last.AfterExtra, obj.AfterExtra...)
			last.AfterExtra = nil
		}
	}
	if len(obj.Members) == 0 && len(bytes.TrimSpace(obj.AfterExtra)) == 0 {
		obj.AfterExtra = nil
	}
}

func hasTrailingComma(obj *hujson.Object) bool {
	n := len(obj.Members)
	return n > 0 && obj.Members[n-1].Value.AfterExtra != nil
}

// rawJSON is JSON text that render writes as it is.
type rawJSON string

// jsonStyle is how a file is laid out, so what mcpgate adds looks like
// what is there: the indent unit, one line or many, trailing commas.
type jsonStyle struct {
	unit              string
	compact, trailing bool
}

// render writes fields as a JSON object whose members are at indent+unit
// and whose closing brace is at indent.
func (s jsonStyle) render(fields []field, indent string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(",")
		}
		if !s.compact {
			b.WriteString("\n" + indent + s.unit)
		}
		b.WriteString(jsonString(f.key))
		b.WriteString(":")
		if !s.compact {
			b.WriteString(" ")
		}
		b.WriteString(jsonValue(f.value, s.compact))
	}
	if !s.compact && len(fields) > 0 {
		if s.trailing {
			b.WriteString(",")
		}
		b.WriteString("\n" + indent)
	}
	b.WriteString("}")
	return b.String()
}

func jsonValue(v any, compact bool) string {
	if raw, ok := v.(rawJSON); ok {
		return string(raw)
	}
	sep := ", "
	if compact {
		sep = ","
	}
	return spell(v, jsonString, sep, "JSON")
}

// spell writes an entry's value in a host's format: strings by quote,
// lists as [a, b] with sep between, an empty map as {}. JSON, TOML and
// YAML's flow style write these alike.
func spell(v any, quote func(string) string, sep, format string) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = quote(s)
		}
		return "[" + strings.Join(parts, sep) + "]"
	case emptyMap:
		return "{}"
	}
	panic(fmt.Sprintf("hosts: no %s spelling for %T", format, v))
}

// jsonString quotes s as JSON does, without escaping <, > and & (which
// would only make paths harder to read).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
