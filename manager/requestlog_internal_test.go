package manager

import (
	"net/http"
	"strings"
	"testing"
)

// TestSummaryFromHeaders: a 2026-07-28 request's Mcp-Method and Mcp-Name
// headers name what its body does, and are read instead of the body; a
// value in the header's encoded form, or no header, leaves it to the body.
func TestSummaryFromHeaders(t *testing.T) {
	for _, tc := range []struct {
		method, name       string
		ok                 bool
		wantMethod, wantTo string
	}{
		{"tools/call", "echo", true, "tools/call", "echo"},
		{"tools/list", "", true, "tools/list", ""},
		{"tools/call", "", false, "", ""},
		{"tools/call", "=?base64?ZWNobw==?=", false, "", ""},
		{"tools/call", "caf\u00e9", false, "", ""},
		{"", "echo", false, "", ""},
		{"tools/call", strings.Repeat("x", 600), false, "", ""},
	} {
		h := http.Header{}
		if tc.method != "" {
			h.Set("Mcp-Method", tc.method)
		}
		if tc.name != "" {
			h.Set("Mcp-Name", tc.name)
		}
		m, tool, ok := fromHeaders(h)
		if ok != tc.ok || m != tc.wantMethod || tool != tc.wantTo {
			t.Errorf("fromHeaders(%q, %q) = %q, %q, %v; want %q, %q, %v", tc.method, tc.name, m, tool, ok, tc.wantMethod, tc.wantTo, tc.ok)
		}
	}
}
