package config

import (
	"bytes"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// stripJSONC turns JSON with comments and trailing commas (VS Code's
// settings.json) into JSON. Comments and trailing commas outside strings are
// overwritten with spaces rather than removed, keeping every newline and
// byte offset, so a later syntax error still points at the right line and
// column of the person's file. An unterminated block comment is left as it
// is for the parser to report where it starts.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	comma := -1 // offset of a comma that may turn out to be trailing
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			i = jsonscan.StringEnd(out, i)
			comma = -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(out[i : i+end])
			i += end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			end += 4 // the "/*" before and the "*/" itself
			blank(out[i : i+end])
			i += end - 1
		case c == ',':
			comma = i
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			// Whitespace and comments between a comma and a closing
			// bracket still make the comma trailing.
		default:
			comma = -1
		}
	}
	return out
}

// blank overwrites b with spaces, keeping line breaks.
func blank(b []byte) {
	for i, c := range b {
		if c != '\n' && c != '\r' {
			b[i] = ' '
		}
	}
}
