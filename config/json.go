package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// member is one name/value pair of a JSON object. Objects are read as
// ordered members, not maps, so a rewrite keeps the order a person chose and
// every member mcpgate does not know.
type member struct {
	Key   string
	Value json.RawMessage
}

var errNotObject = errors.New("must be a JSON object")

// decodeObject reads the members of the JSON object data, in order. data
// must already be valid JSON (see [checkSyntax]), so the members are found
// by scanning for where each value ends rather than by a decoder, which
// for a file of 1,000 servers took longer than the rest of loading it. A
// key given twice is an error: encoding/json would silently keep the last
// one, and the person who wrote the file could not tell which counts.
func decodeObject(data []byte) ([]member, error) {
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errNotObject
	}
	var members []member
	var seen map[string]bool // for objects too long to search
	for i = jsonscan.SkipSpace(data, i+1); i < len(data) && data[i] == '"'; {
		end := jsonscan.StringEnd(data, i)
		key, err := unquote(data[i : end+1])
		if err != nil {
			return nil, err
		}
		if seen == nil && len(members) >= 16 {
			seen = make(map[string]bool, 2*len(members))
			for _, m := range members {
				seen[m.Key] = true
			}
		}
		if twice := seen[key] || seen == nil && slices.ContainsFunc(members, func(m member) bool { return m.Key == key }); twice {
			return nil, fmt.Errorf("%q is given twice", key)
		}
		if seen != nil {
			seen[key] = true
		}
		if i = jsonscan.SkipSpace(data, end+1); i >= len(data) || data[i] != ':' {
			return nil, errNotObject
		}
		i = jsonscan.SkipSpace(data, i+1)
		vend := jsonscan.ValueEnd(data, i)
		members = append(members, member{key, json.RawMessage(data[i:vend:vend])})
		if i = jsonscan.SkipSpace(data, vend); i < len(data) && data[i] == ',' {
			i = jsonscan.SkipSpace(data, i+1)
		}
	}
	if i >= len(data) || data[i] != '}' {
		return nil, errNotObject
	}
	return members, nil
}

// unquote reads the JSON string q, quotes included.
func unquote(q []byte) (string, error) {
	if bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}

// lookup returns the value of key, and whether it is present and not null.
func lookup(members []member, key string) (json.RawMessage, bool) {
	for _, m := range members {
		if m.Key == key {
			return m.Value, !isNull(m.Value)
		}
	}
	return nil, false
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// encodeObject writes members as one compact JSON object.
func encodeObject(members []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(m.Key))
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// marshal encodes v without HTML escaping, so a URL's & stays & in a file
// people read. v is always one of the plain types of a server entry.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("config: encoding %T: %v", v, err)) // strings, bools, slices and maps of strings always encode
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// indent pretty-prints a compact document the way people write JSON by hand.
func indent(compact []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// checkSyntax reports malformed JSON with the line and column where a text
// editor would show it.
func checkSyntax(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var raw json.RawMessage
	err := json.Unmarshal(data, &raw)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	line, col := lineCol(data, se.Offset)
	return fmt.Errorf("%d:%d: malformed JSON: %v", line, col, se)
}

// lineCol turns a [json.SyntaxError] offset, which counts the bytes read up
// to and including the offending one, into a 1-based line and column in
// characters.
func lineCol(data []byte, offset int64) (line, col int) {
	p := min(max(offset-1, 0), int64(len(data)))
	before := data[:p]
	start := bytes.LastIndexByte(before, '\n') + 1
	return 1 + bytes.Count(before, []byte("\n")), 1 + utf8.RuneCount(before[start:])
}

// trimBOM drops a UTF-8 byte order mark, which Windows editors like to
// write and encoding/json refuses.
func trimBOM(data []byte) []byte { return bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) }

// describeDecodeError explains a failed decode by the JSON path and kind of
// the value, not by Go type names a person cannot act on.
func describeDecodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: unexpected %s", te.Field, te.Value)
	}
	return err.Error()
}
