package manager

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/netpolicy/netpolicytest"
)

// policyClient is an HTTP client over the network policy on a fake
// internet, as the CLI builds one.
func policyClient(t *testing.T, n *netpolicytest.Network) *http.Client {
	t.Helper()
	tr, err := netpolicy.New(n.Options(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestNetworkPolicyRefusesARebindingName: a server configured under a
// public name that resolves to 127.0.0.1 is refused at the dial, with an
// error of category policy that says why, and nothing is sent.
func TestNetworkPolicyRefusesARebindingName(t *testing.T) {
	t.Parallel()
	n := netpolicytest.New(t)
	n.Resolve("mcp.example.test", "127.0.0.1")
	m := newManager(t, &Options{HTTPClient: policyClient(t, n)}, cfg("docs", "https://mcp.example.test/mcp"))

	err := m.Connect(ctxT(t, 10*time.Second), "docs")
	if mcpgate.CategoryOf(err) != mcpgate.CategoryPolicy || !errors.Is(err, netpolicy.ErrRefused) {
		t.Fatalf("connect: %v (category %s), want a policy refusal", err, mcpgate.CategoryOf(err))
	}
	st := mustStatus(t, m, "docs")
	if st.State != mcpgate.StateError || st.Error == nil || st.Error.Category != mcpgate.CategoryPolicy {
		t.Fatalf("status %+v", st)
	}
	for _, want := range []string{"mcp.example.test (127.0.0.1)", `"docs"`, "loopback"} {
		if !strings.Contains(st.Error.Message, want) {
			t.Errorf("status message %q does not say %q", st.Error.Message, want)
		}
	}
	if d := n.Dialled(); len(d) > 0 {
		t.Errorf("dialled %v", d)
	}
}

// TestAllowPrivateNetworkReachesTheServer: a server on a private address
// is refused until its config allows private networks, and refused again
// once the setting is withdrawn, at once.
func TestAllowPrivateNetworkReachesTheServer(t *testing.T) {
	t.Parallel()
	srv := fake.Start(t, nil)
	n := netpolicytest.New(t)
	n.Forward("10.1.2.3", []string{"mcp.corp.test"}, srv.URL)
	c := cfg("intranet", "https://mcp.corp.test/mcp")
	m := newManager(t, &Options{HTTPClient: policyClient(t, n)}, c)
	ctx := ctxT(t, 20*time.Second)

	err := m.Connect(ctx, "intranet")
	if mcpgate.CategoryOf(err) != mcpgate.CategoryPolicy || !strings.Contains(err.Error(), "allowPrivateNetwork") {
		t.Fatalf("without allowPrivateNetwork: %v", err)
	}
	if d := n.Dialled(); len(d) > 0 {
		t.Fatalf("dialled %v", d)
	}

	c.AllowPrivateNetwork = true
	if err := m.Update(ctx, []mcpgate.ServerConfig{c}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallTool(ctx, "intranet", "echo", raw(`{"text":"hi"}`), nil); err != nil {
		t.Fatalf("with allowPrivateNetwork: %v", err)
	}

	c.AllowPrivateNetwork = false
	if err := m.Update(ctx, []mcpgate.ServerConfig{c}); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, m, "intranet"); st.State != mcpgate.StateDisconnected {
		t.Errorf("withdrawing the setting left the server %s", st.State)
	}
	if _, err := m.CallTool(ctx, "intranet", "echo", raw(`{"text":"hi"}`), nil); mcpgate.CategoryOf(err) != mcpgate.CategoryPolicy {
		t.Errorf("after withdrawing allowPrivateNetwork: %v, want a policy refusal", err)
	}
}
