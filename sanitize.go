package mcpgate

import (
	"regexp"
	"strings"
	"unicode"
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
	s = strings.TrimSpace(s)
	if len(s) > max {
		cut := max
		for cut > 0 && (s[cut]&0xc0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
