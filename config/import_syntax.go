package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/pelletier/go-toml/v2"
)

// syntax is how an imported file is written. TOML and YAML files are
// turned into JSON first, so every dialect is read by the same code.
type syntax int

const (
	syntaxJSON syntax = iota // JSON with comments and trailing commas
	syntaxTOML
	syntaxYAML
)

func (s syntax) String() string {
	return [...]string{"JSON", "TOML", "YAML"}[s]
}

// syntaxOf guesses how a file is written: from its extension, else from
// its first character (JSON starts with "{" once comments are skipped),
// else from what parses.
func syntaxOf(name string, data []byte) syntax {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".toml":
		return syntaxTOML
	case ".yaml", ".yml":
		return syntaxYAML
	case ".json", ".jsonc":
		return syntaxJSON
	}
	if first := firstSignificant(data); first == '{' || first == '[' {
		return syntaxJSON
	}
	var v map[string]any
	if toml.Unmarshal(data, &v) == nil {
		return syntaxTOML
	}
	return syntaxYAML
}

// firstSignificant is the first byte of data that is not blank or inside a
// comment of any of the three syntaxes.
func firstSignificant(data []byte) byte {
	for len(data) > 0 {
		data = bytes.TrimLeft(data, " \t\r\n")
		switch {
		case bytes.HasPrefix(data, []byte("//")), bytes.HasPrefix(data, []byte("#")):
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				return 0
			}
			data = data[i+1:]
		case bytes.HasPrefix(data, []byte("/*")):
			i := bytes.Index(data, []byte("*/"))
			if i < 0 {
				return 0
			}
			data = data[i+2:]
		case len(data) > 0:
			return data[0]
		}
	}
	return 0
}

// decodeDocument reads the top-level object of data written in s. Errors
// say where the file is malformed, in the person's own lines.
func decodeDocument(data []byte, s syntax) ([]member, error) {
	data = trimBOM(data)
	var doc []byte
	switch s {
	case syntaxJSON:
		doc = stripJSONC(data)
		if err := checkSyntax(doc); err != nil {
			return nil, invalidf("import: %v", err)
		}
	case syntaxTOML:
		var v map[string]any
		if err := toml.Unmarshal(data, &v); err != nil {
			return nil, invalidf("import: %s", tomlError(err))
		}
		var err error
		if doc, err = plainJSON(v); err != nil {
			return nil, invalidf("import: %v", err)
		}
	case syntaxYAML:
		var v any
		if err := yaml.UnmarshalWithOptions(data, &v, yaml.UseOrderedMap()); err != nil {
			return nil, invalidf("import: %s", yamlError(err))
		}
		var err error
		if doc, err = plainJSON(v); err != nil {
			return nil, invalidf("import: %v", err)
		}
	}
	top, err := decodeObject(doc)
	if err != nil {
		if errors.Is(err, errNotObject) && s != syntaxJSON {
			err = errors.New("must be a table of settings, not a single value or a list")
		}
		return nil, invalidf("import: top level: %v", err)
	}
	return top, nil
}

// tomlError gives a TOML syntax error's line and column and what is
// wrong, without the parser's package name.
func tomlError(err error) string {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return fmt.Sprintf("%d:%d: malformed TOML: %s", line, col, strings.TrimPrefix(de.Error(), "toml: "))
	}
	return "malformed TOML: " + strings.TrimPrefix(err.Error(), "toml: ")
}

// yamlError gives a YAML error's line and column and what is wrong.
func yamlError(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tok := ye.GetToken(); tok != nil && tok.Position != nil {
			return fmt.Sprintf("%d:%d: malformed YAML: %s", tok.Position.Line, tok.Position.Column, ye.GetMessage())
		}
		return "malformed YAML: " + ye.GetMessage()
	}
	return "malformed YAML"
}

// maxDocumentNodes bounds the values a TOML or YAML file may expand to.
// YAML aliases can repeat a value without repeating its text, so a small
// file can stand for an enormous one; agent configs hold a few hundred.
const maxDocumentNodes = 1 << 20

var errTooLarge = errors.New("the file expands to more than a million values (YAML aliases?); not an agent config")

// plainJSON writes a decoded TOML or YAML value as JSON, keeping the order
// of YAML mappings. Values JSON has no form for (dates, NaN) become
// strings: no setting mcpgate reads is one of them.
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	budget := maxDocumentNodes
	if err := writeAsJSON(&b, v, &budget); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeAsJSON(b *bytes.Buffer, v any, budget *int) error {
	if *budget--; *budget < 0 {
		return errTooLarge
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.Write(marshal(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.Write(marshal(strconv.FormatFloat(v, 'g', -1, 64)))
		} else {
			b.Write(marshal(v))
		}
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeAsJSON(b, e, budget); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any: // TOML tables: the order is lost, so sort
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(marshal(k))
			b.WriteByte(':')
			if err := writeAsJSON(b, v[k], budget); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.MapSlice:
		b.WriteByte('{')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			key, err := yamlKey(item.Key)
			if err != nil {
				return err
			}
			b.Write(marshal(key))
			b.WriteByte(':')
			if err := writeAsJSON(b, item.Value, budget); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case encoding.TextMarshaler: // TOML dates and times
		text, err := v.MarshalText()
		if err != nil {
			return fmt.Errorf("a date or time that cannot be written: %w", err)
		}
		b.Write(marshal(string(text)))
	default:
		b.Write(marshal(fmt.Sprint(v)))
	}
	return nil
}

// yamlKey turns a YAML mapping key into the string it reads as. A list or
// mapping as a key has no such string.
func yamlKey(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case nil:
		return "null", nil
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(k), nil
	}
	return "", errors.New("a mapping key that is a list or a mapping; keys must be names")
}

// decodeHostEntry decodes one entry's JSON into the dialect's struct, saying
// what is wrong in the file's terms.
func decodeHostEntry(raw json.RawMessage, v any) (reason string) {
	if _, err := decodeObject(raw); err != nil {
		return "not a server entry: " + err.Error()
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return "not a server entry: " + describeDecodeError(err)
	}
	return ""
}
