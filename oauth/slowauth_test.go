package oauth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// TestSlowAuthorizationServerLeavesTheStoreFree: while a refresh waits
// for a slow authorization server — its metadata, or its token endpoint —
// every other process can still write to the store, and a new one can
// open it. Processes needing the same credential wait for that refresh
// and use its token: the rotating refresh token is spent once.
func TestSlowAuthorizationServerLeavesTheStoreFree(t *testing.T) {
	t.Parallel()
	for _, held := range []fake.AuthEndpoint{fake.AuthMetadataEndpoint, fake.AuthTokenEndpoint} {
		t.Run(string(held), func(t *testing.T) {
			as := fake.StartAuth(t, nil)
			srv := fake.Start(t, &fake.Options{Auth: as})
			e := newEnv(t)
			_, c1 := e.open()
			cfg := oauthCfg("s", srv.URL)
			mustLogin(t, c1, cfg)
			as.ExpireAccessTokens()

			arrived, release := as.Hold(held)
			defer release()
			// Two agent processes that have never seen the authorization
			// server's metadata; both find the token refused.
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				_, c := e.open()
				m := newManager(t, c, cfg)
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[i] = call(t, m, "s", "echo", `{"text":"x"}`) }()
			}
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("no request reached the held endpoint")
			}

			// Meanwhile another process writes, and a new one opens the store.
			st, _ := e.open()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			other := &store.Credential{Binding: store.Binding{Server: "other", Resource: "https://other.example/mcp"}, Kind: store.KindBearer, AccessToken: "other-token"}
			if err := st.PutCredential(ctx, other); err != nil {
				t.Errorf("writing to the store during the refresh: %v", err)
			}
			opened := make(chan error, 1)
			go func() {
				sealer, _ := seal.New(e.key)
				s, err := sqlite.Open(e.path, sealer)
				if err == nil {
					s.Close()
				}
				opened <- err
			}()
			select {
			case err := <-opened:
				if err != nil {
					t.Errorf("opening the store during the refresh: %v", err)
				}
			case <-time.After(3 * time.Second):
				t.Error("a new process could not open the store during the refresh")
				release()
				<-opened
			}

			release()
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Errorf("call after the slow refresh: %v", err)
				}
			}
			if n := as.TokenRequests(fake.GrantRefreshToken); n != 1 {
				t.Errorf("%d refreshes, want 1: the rotating refresh token must be spent once", n)
			}
		})
	}
}

// TestHangingRefreshGivesUp: an authorization server whose metadata or
// token endpoint never answers costs a call a bounded wait, then a
// timeout, and the next call is not stuck behind it. Once the server
// answers, refreshing works. (The server does not rotate refresh tokens
// here: one that finishes the requests mcpgate gave up on would spend a
// rotating one, and the next refresh would rightly end the sign-in.)
func TestHangingRefreshGivesUp(t *testing.T) {
	t.Parallel()
	for _, held := range []fake.AuthEndpoint{fake.AuthMetadataEndpoint, fake.AuthTokenEndpoint} {
		t.Run(string(held), func(t *testing.T) {
			as := fake.StartAuth(t, &fake.AuthOptions{NoRotate: true})
			srv := fake.Start(t, &fake.Options{Auth: as})
			e := newEnv(t)
			_, c := e.open()
			cfg := oauthCfg("s", srv.URL)
			mustLogin(t, c, cfg)
			_, agent := e.open() // a process that has not seen the metadata yet
			agent.SetRenewTimeout(300 * time.Millisecond)
			m := newManager(t, agent, cfg)
			as.ExpireAccessTokens()
			_, release := as.Hold(held)
			defer release()
			for range 2 {
				start := time.Now()
				_, err := call(t, m, "s", "echo", `{"text":"x"}`)
				if !errors.Is(err, mcpgate.ErrTimeout) {
					t.Fatalf("call while the %s endpoint hangs: %v, want a timeout", held, err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("the call gave up after %v", d)
				}
			}
			release()
			if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
				t.Errorf("call once the server answers: %v", err)
			}
		})
	}
}

// stuckRegistrations is a store whose client registrations cannot be read
// in time: every read waits for its context to end.
type stuckRegistrations struct{ store.Store }

func (stuckRegistrations) GetRegistration(ctx context.Context, _, _, _ string) (*store.Registration, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestSlowStoreIsNoReasonToSignInAgain: a refresh whose read of the client
// registration does not finish in time is a timeout, not "the
// registration is gone, sign in again"; the sign-in is intact and the
// next refresh, with a store that answers, works.
func TestSlowStoreIsNoReasonToSignInAgain(t *testing.T) {
	t.Parallel()
	as := fake.StartAuth(t, &fake.AuthOptions{NoRotate: true})
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t)
	st, c := e.open()
	cfg := oauthCfg("s", srv.URL)
	mustLogin(t, c, cfg)
	as.ExpireAccessTokens()

	slow := oauth.New(&oauth.Options{Store: stuckRegistrations{st}})
	slow.SetRenewTimeout(200 * time.Millisecond)
	_, err := call(t, newManager(t, slow, cfg), "s", "echo", `{"text":"x"}`)
	if !errors.Is(err, mcpgate.ErrTimeout) || code(err) == "login_required" {
		t.Fatalf("refresh with a stuck store: %v (category %s, code %q), want a timeout", err, category(err), code(err))
	}
	if _, err := call(t, newManager(t, c, cfg), "s", "echo", `{"text":"x"}`); err != nil {
		t.Fatalf("refresh once the store answers: %v", err)
	}
}
