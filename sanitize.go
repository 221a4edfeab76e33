package mcpgate

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

var secretPatterns = regexp.MustCompile(`(?i)(bearer\s+)[^\s"']+|((?:token|secret|password|passwd|api[_-]?key|access_token|refresh_token|code|authorization)\s*[=:]\s*)(?:bearer\s+)?[^\s&"',;]+|\b(?:sk|pk|rk|ghp|gho|ghs|xox[abp])[-_][A-Za-z0-9_-]{8,}`)

// Unprintable reports a rune that must not reach a terminal or a page as
// it is: C0 and C1 controls and DEL (a terminal obeys ESC and CSI), the
// line and paragraph separators, and every format character (Unicode Cf):
// the bidirectional overrides, isolates and marks that make text display
// in another order than it reads, zero-width spaces and joiners, the byte
// order mark. Newline and tab are controls too; callers that keep them
// test for them first.
func Unprintable(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r)
}

// Sanitize makes remote text fit to show a person: control characters
// removed, anything that looks like a credential redacted, at most max
// bytes (cut on a rune boundary).
func Sanitize(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if Unprintable(r) {
			return -1
		}
		return r
	}, s)
	if !mayHoldSecret(s) {
		return cut(strings.TrimSpace(s), max)
	}
	s = secretPatterns.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretPatterns.FindStringSubmatch(m)
		switch {
		case sub[1] != "":
			return sub[1] + "[redacted]"
		case sub[2] != "":
			return sub[2] + "[redacted]"
		}
		return "[redacted]"
	})
	return cut(strings.TrimSpace(s), max)
}

// tokenPrefixes are secretPatterns' third form's prefixes, one of which
// comes right before its '-' or '_'.
var tokenPrefixes = []string{"sk", "pk", "rk", "ghp", "gho", "ghs", "xoxa", "xoxb", "xoxp"}

// mayHoldSecret reports whether secretPatterns could match s, which has
// been through Sanitize's map (no tab, newline or other control left), so
// that text without one skips the expression (a manager runs Sanitize on
// every request's method and tool name). Every match holds a space (after
// "bearer"), a '=' or ':' (after a key's name), or a token prefix right
// before a '-' or '_'. Beyond ASCII it says yes: under (?i) 's' and 'k'
// also match 'ſ' (U+017F) and the Kelvin sign (U+212A).
// TestMayHoldSecret holds it to the expression.
func mayHoldSecret(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, c == ' ', c == '=', c == ':':
			return true
		case c == '-' || c == '_':
			for _, p := range tokenPrefixes {
				if i >= len(p) && strings.EqualFold(s[i-len(p):i], p) {
					return true
				}
			}
		}
	}
	return false
}

// CleanText makes remote text of several lines fit to show a person as
// it is, in a form or a dialog: invalid UTF-8 replaced, tabs made spaces,
// every [Unprintable] character but the newline removed, at most max bytes
// (cut on a rune boundary). Unlike [Sanitize] it keeps line breaks and
// redacts nothing, so a question reads as the server wrote it.
func CleanText(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t':
			return ' '
		case Unprintable(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return cut(strings.TrimSpace(s), max)
}

// cut bounds s to max bytes on a rune boundary, marking a cut with "…".
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && (s[n]&0xc0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
