package mcpgate

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"line\nbreak\ttab", "line break tab"},
		{"bell\x07 esc\x1b[31m", "bell esc[31m"},
		{"bidi \u202eevil", "bidi evil"},
		{"marks \u200f\u200e\u061cand zero\u200bwidth\ufeff", "marks and zerowidth"},
		{"isolate \u2067x\u2069 C1 \u009b31m", "isolate x C1 31m"},
		{"Authorization: Bearer abc.def", "Authorization: [redacted]"},
		{"got token=sk-live-123456789&x=1", "got token=[redacted]&x=1"},
		{"key ghp_abcdefghijklmnop here", "key [redacted] here"},
	}
	for _, c := range cases {
		if got := Sanitize(c.in, 100); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := strings.Repeat("é", 100)
	got := Sanitize(long, 11)
	if !strings.HasSuffix(got, "…") || len(got) > 11+len("…") {
		t.Errorf("bounded result %q", got)
	}
}

// TestMayHoldSecret holds the prefilter to the expression: whatever it
// passes over, the expression does not match. The strings are made of the
// pieces the expression turns on (its keys, prefixes and separators, the
// letters that fold to them from beyond ASCII, word and non-word bytes).
func TestMayHoldSecret(t *testing.T) {
	pieces := []string{"sk", "SK", "pk", "Rk", "ghp", "GHO", "ghs", "xoxa", "xoXB", "xoxp", "xoxc", "s", "k",
		"\u017f", "\u212a", "-", "_", "=", ":", " ", "bearer", "token", "Password", "api_key", "code",
		"a", "Z", "0", "12345678", "é", ".", "/", ",", "'", "\"", "&", ";"}
	r := rand.New(rand.NewPCG(7, 11))
	passed := 0
	for range 40000 {
		var b strings.Builder
		for range 1 + r.IntN(7) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		if mayHoldSecret(s) {
			continue
		}
		passed++
		if secretPatterns.MatchString(s) {
			t.Fatalf("mayHoldSecret(%q) = false, but the expression matches it", s)
		}
	}
	if passed < 5000 {
		t.Errorf("only %d of the strings skipped the expression: the test no longer tests the prefilter", passed)
	}
	for _, s := range []string{"tools/call", "echo", "search_issues", "mcp__demo__echo"} {
		if mayHoldSecret(s) {
			t.Errorf("mayHoldSecret(%q) = true: a plain method or tool name runs the expression", s)
		}
	}
	for _, s := range []string{"sk-12345678", "ghp_abcdefgh12", "token=x", "Bearer x", "\u017fk-12345678", "x\u212a-12345678"} {
		if !mayHoldSecret(s) {
			t.Errorf("mayHoldSecret(%q) = false", s)
		}
	}
}
