// Package jsonscan finds the parts of valid JSON in place, without
// decoding it: where a string or value ends, and the members of an
// object. It is for hot or large inputs already checked with
// [json.Valid], where decoding into maps would scan and copy everything
// again (a config file of 1,000 servers; each line a host sends).
package jsonscan

import (
	"encoding/json"
	"iter"
	"unicode/utf8"
)

// Members yields the members of obj, in order: each key unquoted as
// encoding/json unquotes it and its value's bytes, both within obj (no
// copy) unless the key had to be unquoted. A key given twice is yielded
// twice; a caller that keeps the last has what decoding into a
// map[string]json.RawMessage holds. obj must be valid JSON (json.Valid)
// and begin with '{'.
func Members(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		i := SkipSpace(obj, 1)
		for i < len(obj) && obj[i] == '"' {
			end := StringEnd(obj, i)
			key := obj[i+1 : end]
			if !Plain(key) {
				s, ok := Unquote(obj[i : end+1])
				if !ok {
					return
				}
				key = []byte(s)
			}
			i = SkipSpace(obj, end+1)
			if i >= len(obj) || obj[i] != ':' {
				return
			}
			i = SkipSpace(obj, i+1)
			vend := ValueEnd(obj, i)
			if !yield(key, obj[i:vend:vend]) {
				return
			}
			if i = SkipSpace(obj, vend); i < len(obj) && obj[i] == ',' {
				i = SkipSpace(obj, i+1)
			}
		}
	}
}

// Unquote reads the JSON string q (quotes included) as encoding/json
// does: a plain one directly, any other through encoding/json, which also
// replaces invalid UTF-8. It reports false for what is not a string.
func Unquote(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' {
		return "", false
	}
	if Plain(q[1 : len(q)-1]) {
		return string(q[1 : len(q)-1]), true
	}
	var s string
	return s, json.Unmarshal(q, &s) == nil
}

// Plain reports whether the inside of a valid JSON string needs no
// unquoting: no escape, and valid UTF-8 (control characters cannot occur
// in valid JSON strings).
func Plain(b []byte) bool {
	ascii := true
	for _, c := range b {
		if c == '\\' || c == '"' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(b)
}

// SkipSpace returns the offset of the first byte at or after i that is
// not JSON whitespace.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// StringEnd returns the offset of the quote closing the string that opens
// at data[start], or the last offset if the string never closes (data
// need not be valid JSON: JSONC is scanned with it too).
func StringEnd(data []byte, start int) int {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// ValueEnd returns the offset just past the valid JSON value that starts
// at data[i].
func ValueEnd(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return StringEnd(data, i) + 1
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = StringEnd(data, i)
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
