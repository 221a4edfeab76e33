package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
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
// must already be valid JSON (see [checkSyntax]). A key given twice is an
// error: encoding/json would silently keep the last one, and the person who
// wrote the file could not tell which counts.
func decodeObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	var members []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // a valid object has a string here
		if seen[key] {
			return nil, fmt.Errorf("%q is given twice", key)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		members = append(members, member{key, value})
	}
	return members, nil
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
