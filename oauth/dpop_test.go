package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// preparing is the manager's HTTP layer as far as DPoP goes: each request
// passes the handler's PrepareRequest just before it leaves, after the
// go-sdk set its Authorization header.
type preparing struct {
	h auth.OAuthHandler
}

func (p preparing) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if rp, ok := p.h.(manager.RequestPreparer); ok {
		if err := rp.PrepareRequest(req); err != nil {
			return nil, err
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// session connects to cfg's server with c's handler, as the manager does.
func session(t *testing.T, c *oauth.Client, cfg mcpgate.ServerConfig) (*mcp.ClientSession, error) {
	t.Helper()
	h := c.Handler(cfg)
	tr := &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: &http.Client{Transport: preparing{h}},
		OAuthHandler: h, DisableStandaloneSSE: true, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func echo(t *testing.T, cs *mcp.ClientSession) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	return err
}

// TestDPoP: with dpop set, the sign-in binds the credential to a key of
// its own (RFC 9449): the token request carries a proof and gets a DPoP
// token, every request to the server goes with the DPoP scheme and a fresh
// proof, the refresh proves the same key (the refresh token is bound to
// it), and another process uses the key kept in the store. With server
// nonces, the token endpoint's and the server's are each answered once.
func TestDPoP(t *testing.T) {
	t.Parallel()
	for name, nonce := range map[string]bool{"without nonces": false, "with nonces": true} {
		t.Run(name, func(t *testing.T) {
			ao := &fake.AuthOptions{DPoP: true}
			p := fake.Protection{DPoP: true}
			if nonce {
				ao.DPoPNonce, p.DPoPNonce = "as-nonce-1", "rs-nonce-1"
			}
			as := fake.StartAuth(t, ao)
			srv := fake.Start(t, &fake.Options{Auth: as})
			srv.Protect(p)
			e := newEnv(t)
			st, c := e.open()
			cfg := oauthCfg("s", srv.URL)
			cfg.DPoP = true
			if _, ok := c.Handler(cfg).(manager.RequestPreparer); !ok {
				t.Fatal("the handler does not prepare requests: DPoP proofs cannot be added")
			}
			res := mustLogin(t, c, cfg)
			if !res.DPoP {
				t.Errorf("login result %+v, want DPoP", res)
			}
			cred, err := st.GetCredential(context.Background(), "", "s")
			if err != nil || cred.TokenType != "DPoP" || cred.DPoPKey == "" {
				t.Fatalf("credential %s with key %v (%v), want a DPoP token and its key", cred.TokenType, cred.DPoPKey != "", err)
			}
			if proofs, challenged := as.DPoPTokenRequests(); proofs == 0 || challenged != btoi(nonce) {
				t.Errorf("token requests with proofs %d, nonce challenges %d", proofs, challenged)
			}

			cs, err := session(t, c, cfg)
			if err != nil {
				t.Fatalf("connecting with the DPoP token: %v", err)
			}
			if err := echo(t, cs); err != nil {
				t.Fatalf("call: %v", err)
			}
			got := srv.DPoP()
			if got.Accepted < 2 || got.Refused != 0 || got.NonceChallenges != btoi(nonce) {
				t.Errorf("server saw %+v; want every request with a valid proof, one nonce challenge if any", got)
			}

			as.ExpireAccessTokens()
			if err := echo(t, cs); err != nil {
				t.Fatalf("call after expiry (a refresh proving the same key): %v", err)
			}
			if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
				t.Errorf("%d refreshes, want 1", n)
			}
			if next, _ := st.GetCredential(context.Background(), "", "s"); next.DPoPKey != cred.DPoPKey || next.TokenType != "DPoP" {
				t.Error("the refresh changed the credential's key or lost its binding")
			}

			_, other := e.open() // another process: the key comes from the store
			cs2, err := session(t, other, cfg)
			if err != nil {
				t.Fatalf("another process: %v", err)
			}
			if err := echo(t, cs2); err != nil {
				t.Fatalf("call from another process: %v", err)
			}
			if srv.DPoP().Refused != 0 {
				t.Errorf("server refused proofs: %+v", srv.DPoP())
			}
			noSecrets(t, as.Secrets(), cred.DPoPKey) // the key is not something the server saw
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDPoPWhenTheServerDemandsIt: a server whose challenge accepts only
// DPoP tokens gets them without any setting.
func TestDPoPWhenTheServerDemandsIt(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{DPoP: true})
	srv := fake.Start(t, &fake.Options{Auth: as})
	srv.Protect(fake.Protection{DPoP: true})
	_, c := newEnv(t).open()
	cfg := oauthCfg("s", srv.URL)
	if res := mustLogin(t, c, cfg); !res.DPoP {
		t.Fatalf("login result %+v, want DPoP", res)
	}
	cs, err := session(t, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(t, cs); err != nil {
		t.Fatalf("call: %v", err)
	}
}

// TestDPoPUnsupported: dpop set, but the authorization server does not
// bind tokens: refused before anything is sent, saying so.
func TestDPoPUnsupported(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	st, c := newEnv(t).open()
	cfg := oauthCfg("s", srv.URL)
	cfg.DPoP = true
	_, b, err := login(t, c, cfg, nil)
	if !errors.Is(err, mcpgate.ErrUnsupported) || code(err) != "dpop_unsupported" {
		t.Fatalf("login: %v, want dpop_unsupported", err)
	}
	if len(b.opened) != 0 || as.Registrations() != 0 {
		t.Errorf("went ahead: browser %q, %d registrations", b.opened, as.Registrations())
	}
	if _, err := st.GetCredential(context.Background(), "", "s"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("credential stored: %v", err)
	}
}

// TestPrepareRequestAcrossHandlers: the handler that prepares a request
// need not be the one whose TokenSource gave the token (the manager may
// ask for a handler per use); a bearer token is left alone.
func TestPrepareRequestAcrossHandlers(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{DPoP: true})
	srv := fake.Start(t, &fake.Options{Auth: as})
	_, c := newEnv(t).open()
	cfg := oauthCfg("s", srv.URL)
	cfg.DPoP = true
	mustLogin(t, c, cfg)
	ts, err := c.Handler(cfg).TokenSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := ts.Token()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"?q=1", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	if err := c.Handler(cfg).(manager.RequestPreparer).PrepareRequest(req); err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Authorization") != "DPoP "+tok.AccessToken || req.Header.Get("DPoP") == "" {
		t.Errorf("prepared request headers %v", req.Header)
	}
	plain, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	plain.Header.Set("Authorization", "Bearer some-other-token")
	c.Handler(cfg).(manager.RequestPreparer).PrepareRequest(plain)
	if plain.Header.Get("Authorization") != "Bearer some-other-token" || plain.Header.Get("DPoP") != "" {
		t.Errorf("a bearer token was changed: %v", plain.Header)
	}
}
