package hosts

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
)

// yamlEditor edits block-style YAML as text, by indentation: the entry is
// the lines of `mcpgate:` under the host's top-level key (goose's
// extensions), or the list item whose name is mcpgate (Continue's
// mcpServers), appended at the end of that block or replaced where it is.
// Everything else is kept byte for byte, comments included; verify parses
// the result to be sure.
type yamlEditor struct{}

func (yamlEditor) set(data []byte, h Host, entry []field) ([]byte, error) {
	lines := splitLines(string(data))
	k, inlineEmpty, err := yamlKeyLine(lines, h.Key)
	if err != nil {
		return nil, err
	}
	if k < 0 || inlineEmpty {
		block := h.Key + ":\n" + renderYAML(h, entry, "  ")
		if k >= 0 {
			out := append(append(append([]string{}, lines[:k]...), splitLines(block)...), lines[k+1:]...)
			return []byte(strings.Join(out, "")), nil
		}
		text := string(data)
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return []byte(text + block), nil
	}
	end := yamlBlockEnd(lines, k, h.List)
	indent := yamlChildIndent(lines[k+1:end], h.List)
	rendered := splitLines(renderYAML(h, entry, indent))
	if s, e := yamlEntry(lines, k+1, end, indent, h.List); s >= 0 {
		out := append(append(append([]string{}, lines[:s]...), rendered...), lines[e:]...)
		return []byte(strings.Join(out, "")), nil
	}
	if end > 0 && !strings.HasSuffix(lines[end-1], "\n") {
		lines[end-1] += "\n"
	}
	out := append(append(append([]string{}, lines[:end]...), rendered...), lines[end:]...)
	return []byte(strings.Join(out, "")), nil
}

func (yamlEditor) remove(data []byte, h Host) ([]byte, error) {
	lines := splitLines(string(data))
	k, inlineEmpty, err := yamlKeyLine(lines, h.Key)
	if err != nil || k < 0 || inlineEmpty {
		return data, err
	}
	end := yamlBlockEnd(lines, k, h.List)
	indent := yamlChildIndent(lines[k+1:end], h.List)
	s, e := yamlEntry(lines, k+1, end, indent, h.List)
	if s < 0 {
		return data, nil
	}
	if s == k+1 && e == end {
		s = k // the entry was all there was under the key: the key goes too
	}
	out := append(append([]string{}, lines[:s]...), lines[e:]...)
	return []byte(strings.Join(out, "")), nil
}

// yamlKeyLine finds the top-level line `KEY:`; -1 when there is none.
// `KEY: {}` or `KEY: []` is reported as inlineEmpty; any other value on
// the line (flow style) is beyond a line edit.
func yamlKeyLine(lines []string, key string) (k int, inlineEmpty bool, err error) {
	re := regexp.MustCompile(`^(` + regexp.QuoteMeta(key) + `|"` + regexp.QuoteMeta(key) + `"|'` + regexp.QuoteMeta(key) + `')\s*:(.*)$`)
	for i, line := range lines {
		m := re.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			continue
		}
		rest := strings.TrimSpace(m[2])
		if c := strings.Index(rest, " #"); c >= 0 {
			rest = strings.TrimSpace(rest[:c])
		}
		switch {
		case rest == "" || strings.HasPrefix(rest, "#"):
			return i, false, nil
		case rest == "{}" || rest == "[]" || rest == "null" || rest == "~":
			return i, true, nil
		}
		return -1, false, fmt.Errorf("%s is written on one line (flow style), which mcpgate does not edit; add the entry by hand", key)
	}
	return -1, false, nil
}

var yamlItem = lazyregexp.New(`^-(\s|$)`)

// yamlBlockEnd is the end of the block under the key at line k: the lines
// indented deeper (and, for a list, items at column 0), without the blank
// and comment lines that trail it.
func yamlBlockEnd(lines []string, k int, list bool) int {
	last := k
	for i := k + 1; i < len(lines); i++ {
		line := lines[i]
		s := strings.TrimSpace(line)
		switch {
		case s == "" || strings.HasPrefix(s, "#"):
			continue
		case line[0] == ' ' || line[0] == '\t', list && yamlItem().MatchString(line):
			last = i
			continue
		}
		break
	}
	return last + 1
}

// yamlChildIndent is the indent of the first entry in block; two spaces
// when it is empty.
func yamlChildIndent(block []string, list bool) string {
	for _, line := range block {
		s := strings.TrimSpace(line)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		return line[:len(line)-len(strings.TrimLeft(line, " "))]
	}
	return "  "
}

// yamlEntry finds the lines [s, e) of the mcpgate entry among the
// block's entries at indent; s is -1 when there is none.
func yamlEntry(lines []string, start, end int, indent string, list bool) (s, e int) {
	var isStart func(string) bool
	if list {
		isStart = func(line string) bool {
			return strings.HasPrefix(line, indent) && yamlItem().MatchString(line[len(indent):])
		}
	} else {
		isStart = func(line string) bool {
			return len(line) > len(indent) && strings.HasPrefix(line, indent) && line[len(indent)] != ' ' && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#")
		}
	}
	for i := start; i < end; i++ {
		if !isStart(lines[i]) {
			continue
		}
		j := i + 1
		for j < end && !isStart(lines[j]) {
			j++
		}
		j = trimTail(lines, i, j)
		if yamlIsOurs(lines[i:j], indent, list) {
			return i, j
		}
		i = j - 1
	}
	return -1, -1
}

var yamlOurName = lazyregexp.New(`^(mcpgate|"mcpgate"|'mcpgate')\s*:\s*(#.*)?$`)
var yamlNameIsOurs = lazyregexp.New(`^name\s*:\s*(mcpgate|"mcpgate"|'mcpgate')\s*(#.*)?$`)

// yamlIsOurs reports whether an entry's lines are mcpgate's: the key
// mcpgate, or a list item whose own name is mcpgate.
func yamlIsOurs(item []string, indent string, list bool) bool {
	first := strings.TrimRight(item[0][len(indent):], "\r\n")
	if !list {
		return yamlOurName().MatchString(first)
	}
	rest := strings.TrimLeft(first[1:], " ")
	keyCol := len(indent) + len(first) - len(rest)
	if yamlNameIsOurs().MatchString(rest) {
		return true
	}
	for _, line := range item[1:] {
		trimmed := strings.TrimLeft(line, " ")
		if len(line)-len(trimmed) == keyCol && yamlNameIsOurs().MatchString(strings.TrimRight(trimmed, "\r\n")) {
			return true
		}
	}
	return false
}

// renderYAML writes the entry at indent: `mcpgate:` with its fields
// below, or a list item starting with its first field.
func renderYAML(h Host, entry []field, indent string) string {
	var b strings.Builder
	if h.List {
		for i, f := range entry {
			lead := indent + "  "
			if i == 0 {
				lead = indent + "- "
			}
			fmt.Fprintf(&b, "%s%s: %s\n", lead, f.key, yamlValue(f.value))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s%s:\n", indent, EntryName)
	for _, f := range entry {
		fmt.Fprintf(&b, "%s  %s: %s\n", indent, f.key, yamlValue(f.value))
	}
	return b.String()
}

// yamlValue writes scalars as JSON does: a double-quoted YAML string takes
// JSON's escapes, and flow sequences and mappings are JSON's brackets.
func yamlValue(v any) string { return spell(v, yamlString, ", ", "YAML") }

// yamlPlain matches the strings that read as themselves unquoted, in block
// and flow context alike: no indicator characters, no leading or trailing
// space.
var yamlPlain = lazyregexp.New(`^[A-Za-z_/][A-Za-z0-9_./ -]*[A-Za-z0-9_./-]$|^[A-Za-z_/]$`)

// yamlString writes s plain when that reads back as the same string (a
// Unix path, a name), else double-quoted with JSON's escapes, which YAML's
// double-quoted style shares.
func yamlString(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return jsonString(s)
	}
	if yamlPlain().MatchString(s) {
		return s
	}
	return jsonString(s)
}
