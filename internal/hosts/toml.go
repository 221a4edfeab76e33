package hosts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
)

// tomlEditor edits a TOML file as text, line by line: the entry is the
// table [KEY.mcpgate] (with any [KEY.mcpgate.*] subtables), appended at the
// end of the file or replaced where it is. Everything outside those lines
// is kept byte for byte; verify parses the result to be sure.
type tomlEditor struct{}

// tomlHeader matches a table header line, capturing its dotted name.
var tomlHeader = lazyregexp.New(`^\s*\[\s*([^\[\]]*?)\s*\]\s*(#.*)?$`)

func (tomlEditor) set(data []byte, h Host, entry []field) ([]byte, error) {
	table := renderTOML(h.Key, entry)
	lines := splitLines(string(data))
	start, end, err := tomlTable(lines, h.Key)
	if err != nil {
		return nil, err
	}
	if start >= 0 {
		out := append(append(append([]string{}, lines[:start]...), splitLines(table)...), lines[end:]...)
		return []byte(strings.Join(out, "")), nil
	}
	text := string(data)
	if text != "" {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "\n"
	}
	return []byte(text + table), nil
}

func (tomlEditor) remove(data []byte, h Host) ([]byte, error) {
	lines := splitLines(string(data))
	start, end, err := tomlTable(lines, h.Key)
	if err != nil || start < 0 {
		return data, err
	}
	// The blank line install put before the table goes with it.
	if start > 0 && strings.TrimSpace(lines[start-1]) == "" {
		start--
	}
	out := append(append([]string{}, lines[:start]...), lines[end:]...)
	return []byte(strings.Join(out, "")), nil
}

// tomlTable finds the lines [start, end) of the entry's table and its
// subtables; start is -1 when there is no such header. The comments and
// blank lines just before the next table belong to that table.
func tomlTable(lines []string, key string) (start, end int, err error) {
	start = -1
	for i, line := range lines {
		m := tomlHeader().FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil || strings.HasPrefix(strings.TrimSpace(line), "[[") {
			if start >= 0 && strings.HasPrefix(strings.TrimSpace(line), "[[") {
				return start, trimTail(lines, start, i), nil
			}
			continue
		}
		parts, ok := tomlKeyParts(m[1])
		ours := ok && len(parts) >= 2 && parts[0] == key && parts[1] == EntryName
		if start < 0 {
			if ours {
				if len(parts) > 2 {
					return -1, -1, errors.New("the mcpgate entry's subtables come before its table; edit it by hand")
				}
				start = i
			}
			continue
		}
		if !ours {
			return start, trimTail(lines, start, i), nil
		}
	}
	if start < 0 {
		return -1, -1, nil
	}
	return start, trimTail(lines, start, len(lines)), nil
}

// trimTail moves end back over blank and comment lines, but not past the
// header at start.
func trimTail(lines []string, start, end int) int {
	for end > start+1 {
		s := strings.TrimSpace(lines[end-1])
		if s != "" && !strings.HasPrefix(s, "#") {
			break
		}
		end--
	}
	return end
}

// tomlKeyParts splits a dotted TOML key (bare or quoted parts).
func tomlKeyParts(s string) ([]string, bool) {
	var parts []string
	for {
		s = strings.TrimLeft(s, " \t")
		var part string
		switch {
		case strings.HasPrefix(s, `"`):
			i := 1
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return nil, false
			}
			unq, err := strconv.Unquote(s[:i+1])
			if err != nil {
				return nil, false
			}
			part, s = unq, s[i+1:]
		case strings.HasPrefix(s, "'"):
			end := strings.Index(s[1:], "'")
			if end < 0 {
				return nil, false
			}
			part, s = s[1:end+1], s[end+2:]
		default:
			n := strings.IndexAny(s, ". \t")
			if n < 0 {
				n = len(s)
			}
			part, s = s[:n], s[n:]
		}
		parts = append(parts, part)
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return parts, true
		}
		if s[0] != '.' {
			return nil, false
		}
		s = s[1:]
	}
}

func renderTOML(key string, entry []field) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s.%s]\n", tomlKey(key), tomlKey(EntryName))
	for _, f := range entry {
		fmt.Fprintf(&b, "%s = %s\n", tomlKey(f.key), tomlValue(f.value))
	}
	return b.String()
}

var bareKey = lazyregexp.New(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey().MatchString(k) {
		return k
	}
	return tomlString(k)
}

func tomlValue(v any) string { return spell(v, tomlString, ", ", "TOML") }

// tomlString is a TOML basic string: JSON's escapes are TOML's, except
// that TOML has no \/ and writes other control characters as \uXXXX, as
// jsonString does.
func tomlString(s string) string { return jsonString(s) }

// splitLines splits s into lines that keep their "\n".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
