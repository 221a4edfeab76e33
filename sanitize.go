package mcpgate

import (
	"regexp"
	"strings"
)

var secretPatterns = regexp.MustCompile(`(?i)(bearer\s+)[^\s"']+|((?:token|secret|password|passwd|api[_-]?key|access_token|refresh_token|code|authorization)\s*[=:]\s*)(?:bearer\s+)?[^\s&"',;]+|\b(?:sk|pk|rk|ghp|gho|ghs|xox[abp])[-_][A-Za-z0-9_-]{8,}`)

// Sanitize makes remote text fit to show a person: control characters
// removed, anything that looks like a credential redacted, at most max
// bytes (cut on a rune boundary).
func Sanitize(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
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
