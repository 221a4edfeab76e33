package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// signIn does what the page's button and the person's browser do: open
// /login/start (with issuer, if any) and follow the redirects to the end.
// It returns the status and Location of /login/start.
func (e *env) signIn(server, issuer string) (int, string) {
	e.t.Helper()
	code, body := e.do("POST", "/api/login", map[string]string{"server": server, "issuer": issuer})
	var tk struct{ URL string }
	if err := json.Unmarshal([]byte(body), &tk); err != nil || code != http.StatusOK {
		e.t.Fatalf("POST /api/login: %d %s", code, body)
	}
	return e.signInAt(tk.URL)
}

// signInAt opens the sign-in address the page was given, as its new tab
// does, and follows the redirects to the end.
func (e *env) signInAt(path string) (int, string) {
	e.t.Helper()
	noFollow := &http.Client{Transport: e.tr, Jar: e.client.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(e.base + path)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode == http.StatusFound {
		r, err := (&http.Client{Transport: e.tr}).Get(loc)
		if err != nil {
			e.t.Fatal(err)
		}
		r.Body.Close()
	}
	return resp.StatusCode, loc
}

// TestSignInWithSeveralIssuersLetsThePersonChoose: mcpgate does not guess;
// the card lists the authorization servers and signing in with the chosen
// one works.
func TestSignInWithSeveralIssuersLetsThePersonChoose(t *testing.T) {
	t.Parallel()
	h := fake.StartHostileAuth(t, fake.HostileTwoIssuers)
	e := newEnv(t, mcpgate.ServerConfig{ID: "corp", URL: h.Server.URL, Auth: mcpgate.AuthOAuth, Enabled: true})

	if code, _ := e.signIn("corp", ""); code != http.StatusOK {
		t.Fatalf("login start without an issuer: %d, want the failure page", code)
	}
	_, body := e.do("GET", "/api/servers", nil)
	var out struct {
		Servers []struct {
			Login struct {
				State   string   `json:"state"`
				Issuers []string `json:"issuers"`
			} `json:"login"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Servers) != 1 {
		t.Fatalf("servers: %v %s", err, body)
	}
	got := out.Servers[0].Login
	if got.State != "failed" || !slices.Contains(got.Issuers, h.Auth.Issuer) || !slices.Contains(got.Issuers, h.Auth2.Issuer) {
		t.Fatalf("login: %+v, want a choice of %s and %s", got, h.Auth.Issuer, h.Auth2.Issuer)
	}

	code, loc := e.signIn("corp", h.Auth2.Issuer)
	if code != http.StatusFound || !strings.HasPrefix(loc, h.Auth2.Issuer) {
		t.Fatalf("login start with issuer 2: %d to %q", code, loc)
	}
	e.waitState("corp", "ready")
	if s := e.server("corp"); !strings.Contains(s.Login.Message, h.Auth2.Issuer) {
		t.Errorf("outcome %q does not name the chosen issuer", s.Login.Message)
	}
}

// TestStepUpSaysWhichScope: a tool needing a scope the sign-in lacks
// makes the card ask for a new sign-in naming that scope.
func TestStepUpSaysWhichScope(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as, ToolScopes: map[string]string{"admin_reset": "admin"}})
	e := newEnv(t, mcpgate.ServerConfig{ID: "secure", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true})
	if code, loc := e.signIn("secure", ""); code != http.StatusFound {
		t.Fatalf("login start: %d %q", code, loc)
	}
	e.waitState("secure", "ready")
	if _, err := e.m.CallTool(context.Background(), "secure", "admin_reset", nil, nil); err == nil {
		t.Fatal("admin_reset succeeded without the admin scope")
	}
	_, body := e.do("GET", "/api/servers", nil)
	var out struct {
		Servers []struct {
			Error *struct {
				Code   string   `json:"code"`
				Next   string   `json:"next"`
				Action string   `json:"action"`
				Scopes []string `json:"scopes"`
			} `json:"error"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Servers) != 1 {
		t.Fatalf("servers: %v %s", err, body)
	}
	got := out.Servers[0].Error
	if got == nil || got.Code != "insufficient_scope" || got.Action != "signin" || !strings.Contains(got.Next, "admin") {
		t.Fatalf("after a 403 insufficient_scope the card says %+v (%s)", got, body)
	}
}

// TestCallbackLandsOnThePage: the authorization server sends the browser
// back to the settings page's own origin, which hands the answer to the
// waiting sign-in; an answer nobody waits for is refused.
func TestCallbackLandsOnThePage(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t, mcpgate.ServerConfig{ID: "secure", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true})
	code, loc := e.signIn("secure", "")
	if code != http.StatusFound {
		t.Fatalf("login start: %d", code)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query().Get("redirect_uri"); got != e.base+"/callback" {
		t.Errorf("redirect_uri %q, want the page's own %q", got, e.base+"/callback")
	}
	e.waitState("secure", "ready")
	resp, err := (&http.Client{Transport: e.tr}).Get(e.base + "/callback?state=forged&code=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a callback nobody waits for: %d", resp.StatusCode)
	}
}
