package jsonscan

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Members yields, key by key, what decoding into a
// map[string]json.RawMessage keeps (the last of a key given twice), its
// keys unquoted as encoding/json unquotes them. FuzzDecodeObject (config)
// and FuzzEnvelope, FuzzReadParams and FuzzReadInput (serve) hold the
// scanning to encoding/json on any input.
func TestMembers(t *testing.T) {
	for _, obj := range []string{
		`{}`,
		` { "a" : 1 , "b":[1,{"c":"}"}], "d":"x\"y" } `[1:],
		`{"\u0061":true,"a":null,"k\u00e9":{"e":[[],{}]},"é":-1.5e3}`,
		"{\"k\xff\":\"v\"}",
	} {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(obj), &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]json.RawMessage{}
		for k, v := range Members([]byte(obj)) {
			got[string(k)] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: members %s, decoding %s", obj, got, want)
		}
	}
}

// Unquote reads a JSON string as encoding/json does, whatever comes
// first: an escape after a multi-byte character is unquoted too (the
// fast path once took "厜\b" as plain because its first byte was not
// ASCII, FuzzEnvelope).
func TestUnquote(t *testing.T) {
	for _, q := range []string{
		`""`, `"plain"`, `"é"`, `"厜\b"`, `"é\"x"`, `"x\u00e9"`, `"ab\\cd"`, `"é\\"`,
		"\"\xff\"", "\"é\xff\\n\"",
	} {
		var want string
		wantOK := json.Unmarshal([]byte(q), &want) == nil
		got, ok := Unquote([]byte(q))
		if ok != wantOK || got != want {
			t.Errorf("%s: Unquote %q %v, encoding/json %q %v", q, got, ok, want, wantOK)
		}
	}
}
