package manager

import (
	"errors"
	"net/http"
	"strings"
	"sync"
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

// TestHTTP2WhereTheServerOffersIt: a server that offers HTTP/2 over TLS,
// as most on the internet do, is spoken to over HTTP/2, and calls made at
// once share one connection instead of each opening its own.
func TestHTTP2WhereTheServerOffersIt(t *testing.T) {
	t.Parallel()
	for name, versions := range map[string][]string{"2026-07-28": {"2026-07-28"}, "session era": fake.SessionEra} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := fake.Start(t, &fake.Options{Versions: versions})
			n := netpolicytest.New(t)
			n.Forward("203.0.113.7", []string{"mcp.example.test"}, srv.URL)
			m := newManager(t, &Options{HTTPClient: policyClient(t, n)}, cfg("docs", "https://mcp.example.test/mcp"))
			ctx := ctxT(t, 20*time.Second)
			if err := m.Connect(ctx, "docs"); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for range 16 {
				wg.Go(func() {
					if _, err := m.CallTool(ctx, "docs", "echo", raw(`{"text":"hi"}`), nil); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			served := n.Served()
			conns := map[string]bool{}
			for _, r := range served {
				if r.Proto != "HTTP/2.0" {
					t.Errorf("a request came over %s", r.Proto)
				}
				conns[r.RemoteAddr] = true
			}
			if len(served) < 17 || len(conns) != 1 {
				t.Errorf("%d requests over %d connections, want at least 17 over one", len(served), len(conns))
			}
		})
	}
}
