package oauth_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/mcpgate/mcpgate/netpolicy/netpolicytest"
	"github.com/mcpgate/mcpgate/oauth"
)

// ssrfSetup is a public MCP server, mcp.example.test, protected by
// authorization servers its metadata names, on a fake internet: the
// tests point that metadata where a hostile server would.
type ssrfSetup struct {
	n      *netpolicytest.Network
	client *oauth.Client
	cfg    mcpgate.ServerConfig
	// internal counts the requests that reached the service on loopback
	// a hostile metadata document points at.
	internal atomic.Int32
	loopback *httptest.Server
}

func newSSRFSetup(t *testing.T, authServers func(s *ssrfSetup) []string) *ssrfSetup {
	t.Helper()
	s := &ssrfSetup{n: netpolicytest.New(t)}
	s.loopback = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.internal.Add(1)
		http.Error(w, "internal", http.StatusTeapot)
	}))
	t.Cleanup(s.loopback.Close)
	const resource = "https://mcp.example.test/mcp"
	s.n.Serve("203.0.113.20", []string{"mcp.example.test"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			writeJSON(w, map[string]any{"resource": resource, "authorization_servers": authServers(s)})
		default:
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	s.client = s.newClient(t, nil)
	s.cfg = oauthCfg("docs", resource)
	return s
}

// newClient is an oauth client over the setup's network in an environment
// of env (proxies, CAs, secrets).
func (s *ssrfSetup) newClient(t *testing.T, env map[string]string) *oauth.Client {
	t.Helper()
	tr, err := netpolicy.New(s.n.Options(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	st, _ := newEnv(t).open()
	return oauth.New(&oauth.Options{Store: st, HTTPClient: &http.Client{Transport: tr}, Getenv: func(k string) string { return env[k] }})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func wantRefusal(t *testing.T, err error, says ...string) {
	t.Helper()
	if category(err) != mcpgate.CategoryPolicy || !errors.Is(err, netpolicy.ErrRefused) {
		t.Fatalf("login: %v (category %s), want a network policy refusal", err, category(err))
	}
	for _, w := range says {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err.Error(), w)
		}
	}
}

// TestDiscoveryIsNotFollowedAnywhere: a public server whose metadata
// names an authorization server at a metadata, private or loopback
// address gets a refusal, and nothing is sent there.
func TestDiscoveryIsNotFollowedAnywhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		issuer func(s *ssrfSetup) string
		says   []string
	}{
		{"metadata", func(*ssrfSetup) string { return "https://169.254.169.254" }, []string{"169.254.169.254", "never allowed"}},
		{"private", func(*ssrfSetup) string { return "https://10.1.2.3" }, []string{"10.1.2.3", "allowPrivateNetwork"}},
		{"loopback", func(s *ssrfSetup) string { return s.loopback.URL }, []string{"127.0.0.1", "loopback"}},
		{"rebinding name", func(s *ssrfSetup) string {
			s.n.Resolve("auth.example.test", "127.0.0.1")
			return "https://auth.example.test"
		}, []string{"auth.example.test (127.0.0.1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSSRFSetup(t, func(s *ssrfSetup) []string { return []string{tc.issuer(s)} })
			_, b, err := login(t, s.client, s.cfg, nil)
			wantRefusal(t, err, append(tc.says, "authorization discovery")...)
			if len(b.opened) > 0 {
				t.Errorf("the browser was opened: %v", b.opened)
			}
			if s.internal.Load() != 0 {
				t.Errorf("%d requests reached the loopback service", s.internal.Load())
			}
			for _, d := range s.n.Dialled() {
				if d != "203.0.113.20:443" {
					t.Errorf("dialled %s", d)
				}
			}
		})
	}
}

// TestRegistrationEndpointOnLoopbackGetsNoPost: a public issuer whose
// metadata puts registration_endpoint on loopback gets no registration
// sent there.
func TestRegistrationEndpointOnLoopbackGetsNoPost(t *testing.T) {
	t.Parallel()
	s := newSSRFSetup(t, func(*ssrfSetup) []string { return []string{"https://auth.example.test"} })
	s.n.Serve("203.0.113.21", []string{"auth.example.test"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-authorization-server" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, map[string]any{
			"issuer":                           "https://auth.example.test",
			"authorization_endpoint":           "https://auth.example.test/authorize",
			"token_endpoint":                   "https://auth.example.test/token",
			"registration_endpoint":            s.loopback.URL + "/register",
			"code_challenge_methods_supported": []string{"S256"},
		})
	}))
	_, b, err := login(t, s.client, s.cfg, nil)
	wantRefusal(t, err, "registering mcpgate", "127.0.0.1", "loopback")
	if s.internal.Load() != 0 {
		t.Errorf("the registration POST reached the loopback service (%d requests)", s.internal.Load())
	}
	if len(b.opened) > 0 {
		t.Errorf("the browser was opened: %v", b.opened)
	}
}

// TestPrivateAuthorizationServerWhenAllowed: allowPrivateNetwork on the
// server carries over to the requests of its sign-in (discovery reaches
// the authorization server on 10.1.2.3), and opens nothing else
// (registration on loopback is still refused).
func TestPrivateAuthorizationServerWhenAllowed(t *testing.T) {
	t.Parallel()
	s := newSSRFSetup(t, func(*ssrfSetup) []string { return []string{"https://auth.corp.test"} })
	var discovered atomic.Int32
	s.n.Serve("10.1.2.3", []string{"auth.corp.test"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-authorization-server" {
			http.NotFound(w, r)
			return
		}
		discovered.Add(1)
		writeJSON(w, map[string]any{
			"issuer":                           "https://auth.corp.test",
			"authorization_endpoint":           "https://auth.corp.test/authorize",
			"token_endpoint":                   "https://auth.corp.test/token",
			"registration_endpoint":            s.loopback.URL + "/register",
			"code_challenge_methods_supported": []string{"S256"},
		})
	}))
	_, _, err := login(t, s.client, s.cfg, nil)
	wantRefusal(t, err, "auth.corp.test (10.1.2.3)", "allowPrivateNetwork")
	if discovered.Load() != 0 {
		t.Fatal("the private authorization server was reached without allowPrivateNetwork")
	}

	s.cfg.AllowPrivateNetwork = true
	_, _, err = login(t, s.client, s.cfg, nil)
	wantRefusal(t, err, "registering mcpgate", "loopback")
	if discovered.Load() == 0 {
		t.Error("discovery did not reach the private authorization server")
	}
	if s.internal.Load() != 0 {
		t.Errorf("the registration POST reached the loopback service (%d requests)", s.internal.Load())
	}
}

// TestSignInThroughTheProxy: HTTPS_PROXY and SSL_CERT_FILE carry the
// sign-in's requests as they carry MCP's: discovery and the token request
// go through the proxy (mcpgate resolves nothing itself) to servers only
// the CA in SSL_CERT_FILE vouches for.
func TestSignInThroughTheProxy(t *testing.T) {
	t.Parallel()
	s := newSSRFSetup(t, func(*ssrfSetup) []string { return []string{"https://auth.example.test"} })
	var tokens atomic.Int32
	s.n.Serve("203.0.113.21", []string{"auth.example.test"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			writeJSON(w, map[string]any{
				"issuer":                           "https://auth.example.test",
				"authorization_endpoint":           "https://auth.example.test/authorize",
				"token_endpoint":                   "https://auth.example.test/token",
				"code_challenge_methods_supported": []string{"S256"},
			})
		case "/token":
			if user, pass, _ := r.BasicAuth(); user != "ci" || pass != "ci-secret-value" || r.PostFormValue("grant_type") != "client_credentials" {
				http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
				return
			}
			tokens.Add(1)
			writeJSON(w, map[string]any{"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	proxy := s.n.StartProxy()
	client := s.newClient(t, map[string]string{"HTTPS_PROXY": proxy.URL, "CI_SECRET": "ci-secret-value"})
	cfg := s.cfg
	cfg.Grant, cfg.ClientID, cfg.ClientSecretEnv, cfg.Issuer = mcpgate.GrantClientCredentials, "ci", "CI_SECRET", "https://auth.example.test"
	if _, _, err := login(t, client, cfg, nil); err != nil {
		t.Fatalf("login through the proxy: %v", err)
	}
	if tokens.Load() != 1 {
		t.Errorf("%d token requests", tokens.Load())
	}
	got := proxy.Targets()
	for _, want := range []string{"mcp.example.test:443", "auth.example.test:443"} {
		if !slices.Contains(got, want) {
			t.Errorf("the proxy was not asked for %s: %v", want, got)
		}
	}
	if l := s.n.Lookups(); len(l) > 0 {
		t.Errorf("mcpgate resolved %v itself", l)
	}
	if d := s.n.Dialled(); slices.ContainsFunc(d, func(a string) bool { return a != strings.TrimPrefix(proxy.URL, "http://") }) {
		t.Errorf("dialled %v besides the proxy", d)
	}
}
