package oauth_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// clock is a settable time for a Client; it starts at the real time.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// TestShortLivedTokens: a certified OpenID provider issuing access tokens
// that live ten seconds, with rotating refresh tokens. A token is used for
// most of its life: a fresh process's whole session of calls refreshes
// nothing while the token is young, and once it is old, one refresh
// serves every later request.
func TestShortLivedTokens(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{AccessTTL: 10 * time.Second, NoAccessTokenRevocation: true})
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	_, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)

	_, c2 := e.open() // the agent's process
	var clk clock
	c2.SetClock(clk.now)
	m := newManager(t, c2, cfg)
	for range 4 {
		if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 0 {
		t.Fatalf("%d refreshes of a token with most of its ten seconds left, want none", n)
	}

	clk.advance(8 * time.Second) // the token has two seconds left
	for range 4 {
		if _, err := call(t, m, "s", "echo", `{"text":"y"}`); err != nil {
			t.Fatal(err)
		}
	}
	if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
		t.Errorf("%d refreshes once the token was old, want 1", n)
	}

	// Logout: the provider revokes the refresh token and answers
	// unsupported_token_type for the access token (RFC 7009 §2.2.1). That
	// is all it can revoke.
	res, err := c.Logout(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Removed || !res.Revoked {
		t.Errorf("logout %+v: want removed and revoked as far as the server can", res)
	}
	var refresh, access *struct{ revoked, unsupported bool }
	for _, tr := range res.Tokens {
		v := &struct{ revoked, unsupported bool }{tr.Revoked, tr.Unsupported}
		switch tr.Hint {
		case "refresh_token":
			refresh = v
		case "access_token":
			access = v
		}
	}
	if refresh == nil || !refresh.revoked || access == nil || access.revoked || !access.unsupported {
		t.Errorf("per token: refresh %+v, access %+v; want the refresh token revoked and the access token not revocable", refresh, access)
	}
	if left := time.Until(res.AccessExpiry); left <= 0 || left > 20*time.Second {
		t.Errorf("the access token is said to work until %v, want within its ten seconds (eight more on the agent's clock)", res.AccessExpiry)
	}
}

// TestStepUpsFarApart: step-ups long after one another (another tool, a
// permission granted later) are not a run, however recently the token was
// refreshed: mcpgate keeps asking.
func TestStepUpsFarApart(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{AccessTTL: 5 * time.Minute})
	srv := fake.Start(t, &fake.Options{Auth: as, ToolScopes: map[string]string{"admin_reset": "admin"}})
	srv.Protect(fake.Protection{ShiftingScope: true})
	_, c := newEnv(t).open()
	var clk clock
	c.SetClock(clk.now)
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	m := newManager(t, c, cfg)
	for round := range 8 {
		clk.advance(11 * time.Minute)
		if _, err := call(t, m, "s", "admin_reset", `{}`); category(err) != mcpgate.CategoryAuth || code(err) != "insufficient_scope" {
			t.Fatalf("step-up %d, eleven minutes after the last: %v, want a sign-in asked for", round+1, err)
		}
		mustLogin(t, c, cfg)
	}
}
