package mcpgate

import (
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
