package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// decodeObjectByDecoder is what decodeObject did with encoding/json's
// decoder before it scanned: the reference FuzzDecodeObject holds it to.
func decodeObjectByDecoder(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
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

// FuzzDecodeObject: on any valid JSON, decodeObject finds the members
// encoding/json's decoder finds, with the same keys and the same bytes,
// and refuses what it refuses.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"}"}], "d":"x\"y" } `, `[1]`, `"s"`, `{"a":1,"a":2}`,
		`{"\u0061":true,"b":null,"c":-1.5e3,"d":{"e":{"f":[[],{}]}}}`, "{\"k\xff\":\"v\"}",
		`{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"10":10,"11":11,"12":12,"13":13,"14":14,"15":15,"16":16,"17":17,"3":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		want, wantErr := decodeObjectByDecoder(data)
		got, err := decodeObject(data)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, the decoder's %v", err, wantErr)
		}
		if err != nil {
			if err.Error() != wantErr.Error() {
				t.Errorf("error %q, the decoder's %q", err, wantErr)
			}
			return
		}
		if !slices.EqualFunc(got, want, func(a, b member) bool { return a.Key == b.Key && bytes.Equal(a.Value, b.Value) }) {
			t.Errorf("members %q, the decoder's %q", got, want)
		}
	})
}

// BenchmarkLoad1000 loads a config file of 1,000 servers, as a fresh
// `mcpgate serve` does before it can answer.
func BenchmarkLoad1000(b *testing.B) {
	servers := map[string]any{}
	for i := range 1000 {
		servers[fmt.Sprintf("server-%d", i)] = map[string]any{"url": fmt.Sprintf("https://mcp%d.example.com/mcp", i), "auth": "none",
			"headers": map[string]string{"X-Team": "platform"}, "disabledTools": []string{"delete_everything"}}
	}
	data, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parse("config.json", data); err != nil {
			b.Fatal(err)
		}
	}
}
