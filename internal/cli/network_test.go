package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/netpolicy/netpolicytest"
)

// TestCorporateNetworkFromTheEnvironment: the HTTPS_PROXY and
// SSL_CERT_FILE of the environment carry a command's requests: through
// the proxy (which resolves the name: mcpgate dials only the proxy), to a
// server whose certificate only that CA vouches for.
func TestCorporateNetworkFromTheEnvironment(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	n := netpolicytest.New(t)
	n.Forward("203.0.113.30", []string{"mcp.example.test"}, srv.URL)
	proxy := n.StartProxy()
	h := newHarness(t)
	h.mustRun(0, "add", "docs", "https://mcp.example.test/mcp")
	h.env["HTTPS_PROXY"] = proxy.URL

	r := h.mustRun(exitFail, "call", "docs", "echo", `{"text":"through the proxy"}`)
	if !strings.Contains(r.stderr, "SSL_CERT_FILE") {
		t.Errorf("an untrusted certificate does not point at SSL_CERT_FILE:\n%s", r)
	}

	h.env["SSL_CERT_FILE"] = n.CAFile()
	r = h.mustRun(0, "call", "docs", "echo", `{"text":"through the proxy"}`)
	if !strings.Contains(r.stdout, "through the proxy") {
		t.Errorf("call:\n%s", r)
	}
	if got := proxy.Targets(); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "mcp.example.test:443" }) {
		t.Errorf("the proxy was asked for %v", got)
	}
	if d := n.Dialled(); len(d) > 0 {
		t.Errorf("mcpgate dialled %v itself", d)
	}

	h.env["SSL_CERT_FILE"] = t.TempDir() + "/missing.pem"
	r = h.mustRun(exitUsage, "call", "docs", "echo", `{"text":"x"}`)
	if !strings.Contains(r.stderr, "SSL_CERT_FILE") {
		t.Errorf("an unreadable SSL_CERT_FILE is not named:\n%s", r)
	}
}

// TestPolicyRefusalOnTheCommandLine: a server at a metadata address is
// refused with the policy's own words, before the proxy is asked.
func TestPolicyRefusalOnTheCommandLine(t *testing.T) {
	t.Parallel()
	n := netpolicytest.New(t)
	proxy := n.StartProxy()
	h := newHarness(t)
	h.env["HTTPS_PROXY"] = proxy.URL
	h.mustRun(0, "add", "meta", "https://169.254.169.254/mcp")
	r := h.mustRun(exitFail, "call", "meta", "echo", `{"text":"x"}`)
	for _, want := range []string{"network policy", "169.254.169.254", "never allowed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r)
		}
	}
	if got := proxy.Targets(); len(got) > 0 {
		t.Errorf("the proxy was asked for %v", got)
	}
}
