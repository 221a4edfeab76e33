package fake_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// hostileDiscovery is what a client learns before it registers.
type hostileDiscovery struct {
	challenge map[string]string
	prm       oauthex.ProtectedResourceMetadata
	asm       map[string]any
}

func discover(t *testing.T, h *fake.HostileAuth) hostileDiscovery {
	t.Helper()
	var d hostileDiscovery
	resp := post(t, h.Server.URL, initializeBody, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", resp.StatusCode)
	}
	d.challenge = challengeParams(t, resp)
	if status := getJSON(t, d.challenge["resource_metadata"], &d.prm); status != http.StatusOK {
		t.Fatalf("PRM at %s: %d", d.challenge["resource_metadata"], status)
	}
	if status := getJSON(t, h.Auth.MetadataURL, &d.asm); status != http.StatusOK {
		t.Fatalf("AS metadata: %d", status)
	}
	return d
}

func TestHostileAuthModes(t *testing.T) {
	t.Parallel()
	honestASM := func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery, except string) {
		t.Helper()
		want := map[string]any{
			"issuer":                           h.Auth.Issuer,
			"authorization_endpoint":           h.Auth.AuthorizationEndpoint,
			"token_endpoint":                   h.Auth.TokenEndpoint,
			"code_challenge_methods_supported": []any{"S256"},
		}
		for k, v := range want {
			if k != except && !equalJSON(d.asm[k], v) {
				t.Errorf("AS metadata %s = %v, want %v", k, d.asm[k], v)
			}
		}
	}
	honestPRM := func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
		t.Helper()
		if d.prm.Resource != h.Server.URL || !slices.Equal(d.prm.AuthorizationServers, []string{h.Auth.Issuer}) {
			t.Errorf("PRM = %+v", d.prm)
		}
		if d.challenge["resource_metadata"] != h.Server.ResourceMetadataURL() {
			t.Errorf("challenge %v", d.challenge)
		}
	}
	honest := func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery, asmExcept string) {
		t.Helper()
		honestPRM(t, h, d)
		honestASM(t, h, d, asmExcept)
	}

	checks := map[fake.HostileAuthMode]func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery){
		fake.HostilePRMOtherOrigin: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			u, _ := url.Parse(d.challenge["resource_metadata"])
			s, _ := url.Parse(h.Server.URL)
			if d.challenge["resource_metadata"] != h.OtherOrigin || u.Host == s.Host || u.Hostname() != "127.0.0.1" {
				t.Errorf("challenge %v, want the other origin %s", d.challenge, h.OtherOrigin)
			}
			if d.prm.Resource != h.Server.URL || h.OtherOriginRequests() != 1 {
				t.Errorf("PRM %+v, %d requests", d.prm, h.OtherOriginRequests())
			}
			if status := getJSON(t, h.Server.ResourceMetadataURL(), nil); status != http.StatusNotFound {
				t.Errorf("own PRM answered %d", status)
			}
			honestASM(t, h, d, "")
		},
		fake.HostilePRMWrongResource: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			if want := strings.TrimSuffix(h.Server.URL, "/mcp") + "/other"; d.prm.Resource != want {
				t.Errorf("PRM resource %s, want %s", d.prm.Resource, want)
			}
			honestASM(t, h, d, "")
		},
		fake.HostileIssuerMismatch: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			if d.asm["issuer"] != h.Auth.Issuer+"/other" {
				t.Errorf("issuer %v", d.asm["issuer"])
			}
			honest(t, h, d, "issuer")
		},
		fake.HostileNoS256: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			if !equalJSON(d.asm["code_challenge_methods_supported"], []any{"plain"}) {
				t.Errorf("methods %v", d.asm["code_challenge_methods_supported"])
			}
			honest(t, h, d, "code_challenge_methods_supported")
		},
		fake.HostileInsecureTokenEndpoint: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			if d.asm["token_endpoint"] != "http://auth.example.invalid/token" {
				t.Errorf("token_endpoint %v", d.asm["token_endpoint"])
			}
			honest(t, h, d, "token_endpoint")
		},
		fake.HostileShellAuthorizeEndpoint: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			raw := d.asm["authorization_endpoint"].(string)
			u, err := url.Parse(raw)
			if err != nil || u.Scheme != "http" || !strings.HasPrefix(raw, h.Auth.AuthorizationEndpoint+"?") ||
				!strings.Contains(raw, "$(touch${IFS}"+h.Canary+")") || !strings.Contains(raw, ";id|cat") || !strings.Contains(raw, "`") {
				t.Errorf("authorization_endpoint %q (%v)", raw, err)
			}
			honest(t, h, d, "authorization_endpoint")
			// It still works when a client adds its parameters properly.
			id := publicClient(t, h.Auth)
			q := u.Query()
			for k, v := range authorizeQuery(id, oauth2.GenerateVerifier(), h.Server.URL, "read") {
				q[k] = v
			}
			u.RawQuery = q.Encode()
			if loc := visitAuthorize(t, u.String()); loc.Query().Get("code") == "" {
				t.Errorf("redirect %s", loc)
			}
		},
		fake.HostileFileAuthorizeEndpoint: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			if d.asm["authorization_endpoint"] != "file:///etc/passwd" {
				t.Errorf("authorization_endpoint %v", d.asm["authorization_endpoint"])
			}
			honest(t, h, d, "authorization_endpoint")
		},
		fake.HostileJavascriptAuthorizeEndpoint: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			if d.asm["authorization_endpoint"] != "javascript:alert(1)" {
				t.Errorf("authorization_endpoint %v", d.asm["authorization_endpoint"])
			}
			honest(t, h, d, "authorization_endpoint")
		},
		fake.HostileEmptyClientID: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			status, resp := register(t, h.Auth, map[string]any{"redirect_uris": []string{loopbackRedirect}, "token_endpoint_auth_method": "none"})
			if id, ok := resp["client_id"]; status != http.StatusCreated || !ok || id != "" {
				t.Errorf("registration %d %v, want client_id \"\"", status, resp)
			}
		},
		fake.HostileLongClientID: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			id := publicClient(t, h.Auth)
			if len(id) != 300 {
				t.Errorf("client_id of %d bytes", len(id))
			}
			if tr := login(t, h.Auth, id, h.Server.URL, "read"); tr.AccessToken == "" {
				t.Error("the long client_id does not work")
			}
		},
		fake.HostileWrongState: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			q := authorizeQuery(publicClient(t, h.Auth), oauth2.GenerateVerifier(), h.Server.URL, "read")
			got := authorize(t, h.Auth.AuthorizationEndpoint, q).Query()
			if got.Get("state") == q.Get("state") || got.Get("state") == "" || got.Get("code") == "" || got.Get("iss") != h.Auth.Issuer {
				t.Errorf("redirect %v for state %s", got, q.Get("state"))
			}
		},
		fake.HostileWrongIss: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			q := authorizeQuery(publicClient(t, h.Auth), oauth2.GenerateVerifier(), h.Server.URL, "read")
			got := authorize(t, h.Auth.AuthorizationEndpoint, q).Query()
			if got.Get("iss") != "https://evil.example.invalid" || got.Get("state") != q.Get("state") || got.Get("code") == "" {
				t.Errorf("redirect %v", got)
			}
		},
		fake.HostileMissingIss: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			if d.asm["authorization_response_iss_parameter_supported"] != true {
				t.Errorf("metadata does not promise iss")
			}
			q := authorizeQuery(publicClient(t, h.Auth), oauth2.GenerateVerifier(), h.Server.URL, "read")
			if got := authorize(t, h.Auth.AuthorizationEndpoint, q).Query(); got.Has("iss") || got.Get("code") == "" {
				t.Errorf("redirect %v", got)
			}
		},
		fake.HostileTokenHang: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			start := time.Now() // before the context, whose deadline counts from its making
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := doForm(ctx, h.Auth.TokenEndpoint, url.Values{"grant_type": {"authorization_code"}}, "", "")
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 200*time.Millisecond {
				t.Errorf("token request: %v after %v, want a timeout", err, time.Since(start))
			}
			if h.Auth.TokenRequests("authorization_code") != 1 {
				t.Errorf("TokenRequests = %d", h.Auth.TokenRequests("authorization_code"))
			}
			// One left hanging: Close (at the end of the test) releases it.
			go http.PostForm(h.Auth.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}})
			waitFor(t, "the second token request", func() bool { return h.Auth.TokenRequests("refresh_token") == 1 })
		},
		fake.HostileTokenHuge: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			id := publicClient(t, h.Auth)
			verifier := oauth2.GenerateVerifier()
			code := authorize(t, h.Auth.AuthorizationEndpoint, authorizeQuery(id, verifier, h.Server.URL, "read")).Query().Get("code")
			form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {loopbackRedirect},
				"code_verifier": {verifier}, "client_id": {id}, "resource": {h.Server.URL}}
			resp, err := http.PostForm(h.Auth.TokenEndpoint, form)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || len(body) < fake.HugeTokenPadding || !strings.Contains(string(body[:200]), `"access_token"`) {
				t.Errorf("token response %d of %d bytes: %.200s", resp.StatusCode, len(body), body)
			}
		},
		fake.HostileTokenErrorText: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			honest(t, h, d, "")
			tr := postForm(t, h.Auth.TokenEndpoint, url.Values{"grant_type": {"client_credentials"}}, "", "")
			if tr.Status != http.StatusBadRequest || tr.Error != fake.HostileErrorCode || !strings.ContainsAny(tr.Description, "\r\n\x1b") {
				t.Errorf("token answer %+v", tr)
			}
		},
		fake.HostileTwoIssuers: func(t *testing.T, h *fake.HostileAuth, d hostileDiscovery) {
			if h.Auth2 == nil || !slices.Equal(d.prm.AuthorizationServers, []string{h.Auth.Issuer, h.Auth2.Issuer}) || h.Auth.Issuer == h.Auth2.Issuer {
				t.Fatalf("PRM authorization_servers %v", d.prm.AuthorizationServers)
			}
			honestASM(t, h, d, "")
			for _, a := range []*fake.AuthServer{h.Auth, h.Auth2} {
				tr := login(t, a, publicClient(t, a), h.Server.URL, "read")
				if resp := post(t, h.Server.URL, initializeBody, http.Header{"Authorization": {"Bearer " + tr.AccessToken}}); resp.StatusCode != http.StatusOK {
					t.Errorf("token of %s: %d", a.Issuer, resp.StatusCode)
				}
			}
		},
	}

	for _, mode := range fake.HostileAuthModes() {
		t.Run(string(mode), func(t *testing.T) {
			check := checks[mode]
			if check == nil {
				t.Fatalf("no check for %s", mode)
			}
			h := fake.StartHostileAuth(t, mode)
			if h.Mode != mode || h.Canary == "" {
				t.Errorf("HostileAuth %+v", h)
			}
			check(t, h, discover(t, h))
			if _, err := os.Stat(h.Canary); err == nil {
				t.Errorf("the canary %s exists", h.Canary)
			}
		})
	}
	if len(checks) != len(fake.HostileAuthModes()) {
		t.Errorf("%d checks for %d modes", len(checks), len(fake.HostileAuthModes()))
	}
}

func equalJSON(got, want any) bool {
	switch w := want.(type) {
	case []any:
		g, ok := got.([]any)
		return ok && slices.Equal(g, w)
	}
	return got == want
}

func TestFakeBrowser(t *testing.T) {
	path := fake.BuildBrowser(t)
	if again := fake.BuildBrowser(t); again != path {
		t.Errorf("BuildBrowser built twice: %s, %s", path, again)
	}

	// The client's loopback callback.
	got := make(chan url.Values, 1)
	callback := newCallback(t, got)
	a := fake.StartAuth(t, nil)
	status, reg := register(t, a, map[string]any{"redirect_uris": []string{callback + "/callback"}, "token_endpoint_auth_method": "none"})
	if status != http.StatusCreated {
		t.Fatal(reg)
	}
	verifier := oauth2.GenerateVerifier()
	q := authorizeQuery(reg["client_id"].(string), verifier, "http://127.0.0.1:1/mcp", "read")
	q.Set("redirect_uri", callback+"/callback")
	authURL := a.AuthorizationEndpoint + "?" + q.Encode()

	log := fake.UseBrowser(t)
	if os.Getenv("BROWSER") != path || os.Getenv("FAKEBROWSER_LOG") != log {
		t.Errorf("UseBrowser did not set the environment")
	}
	run := func(args ...string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := run(authURL); code != 0 {
		t.Fatalf("fake browser exited %d: %s", code, out)
	}
	select {
	case v := <-got:
		if v.Get("code") == "" || v.Get("state") != q.Get("state") || v.Get("iss") != a.Issuer {
			t.Errorf("callback got %v", v)
		}
	default:
		t.Fatal("the callback was not reached")
	}

	// Not visited: other schemes, other hosts, redirects off loopback.
	offsite := newRedirector(t, "http://example.invalid/")
	for _, u := range []string{"javascript:alert(1)", "file:///etc/passwd", "https://127.0.0.1:1/x", "http://example.invalid/", offsite} {
		if code, _ := run(u); code != 1 {
			t.Errorf("visiting %s: exit %d, want 1", u, code)
		}
	}
	if code, _ := run("a", "b"); code != 2 {
		t.Errorf("two arguments: exit %d, want 2", code)
	}
	want := [][]string{{authURL}, {"javascript:alert(1)"}, {"file:///etc/passwd"}, {"https://127.0.0.1:1/x"}, {"http://example.invalid/"}, {offsite}, {"a", "b"}}
	if runs := fake.BrowserLog(log); !slices.EqualFunc(runs, want, slices.Equal) {
		t.Errorf("BrowserLog = %q, want %q", runs, want)
	}
	if fake.BrowserLog(log+".missing") != nil {
		t.Error("a missing log is not empty")
	}
}

// newCallback serves a client's redirect endpoint at <URL>/callback and
// sends each query it gets on got.
func newCallback(t *testing.T, got chan<- url.Values) string {
	t.Helper()
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/callback" {
			got <- r.URL.Query()
			io.WriteString(w, "You may close this window.")
			return
		}
		http.NotFound(w, r)
	})
}

// newRedirector serves a redirect to target at its root.
func newRedirector(t *testing.T, target string) string {
	t.Helper()
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}) + "/"
}

// serve starts a plain loopback HTTP server for the test and returns its URL.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
