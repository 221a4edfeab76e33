package oauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// TestExpiresIn: authorization servers that send expires_in in shapes RFC
// 6749 does not ask for. A numeric string is a lifetime like a number; a
// lifetime of centuries is bounded, so the token is neither taken as
// expired in the past (an overflow) nor refreshed at every call; anything
// else is a malformed answer, reported as such, never as an unreachable
// server.
func TestExpiresIn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, json string
		// min and max bound the stored expiry from now; zero max means the
		// sign-in fails as malformed.
		min, max time.Duration
	}{
		{"numeric string", `"3599"`, 3590 * time.Second, 3600 * time.Second},
		{"number with a fraction", `3599.5`, 3590 * time.Second, 3600 * time.Second},
		{"ten billion seconds", `10000000000`, 300 * 24 * time.Hour, 366 * 24 * time.Hour},
		{"exponent", `1e12`, 300 * 24 * time.Hour, 366 * 24 * time.Hour},
		{"a word", `"soon"`, 0, 0},
		{"negative", `-5`, 0, 0},
		{"an object", `{"seconds":3600}`, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := fake.StartAuth(t, &fake.AuthOptions{ExpiresInJSON: tc.json})
			srv := fake.Start(t, &fake.Options{Auth: as})
			st, c := newEnv(t).open()
			cfg := oauthCfg("s", srv.URL)
			res, _, err := login(t, c, cfg, nil)
			if tc.max == 0 {
				if category(err) != mcpgate.CategoryProtocol || !strings.Contains(err.Error(), "expires_in") || strings.Contains(err.Error(), "reach") {
					t.Fatalf("sign-in with expires_in %s: %v (category %s), want a protocol error naming expires_in", tc.json, err, category(err))
				}
				noSecrets(t, as.Secrets(), err.Error())
				return
			}
			if err != nil {
				t.Fatalf("sign-in with expires_in %s: %v", tc.json, err)
			}
			left := time.Until(res.Expiry)
			if left < tc.min || left > tc.max {
				t.Errorf("expires_in %s: the sign-in expires in %v, want between %v and %v", tc.json, left, tc.min, tc.max)
			}
			cred, err := st.GetCredential(context.Background(), "", "s")
			if err != nil {
				t.Fatal(err)
			}
			if !cred.Expiry.Equal(res.Expiry.Truncate(time.Microsecond)) {
				t.Errorf("stored expiry %v, reported %v", cred.Expiry, res.Expiry)
			}
			m := newManager(t, c, cfg)
			for range 3 {
				if _, err := call(t, m, "s", "echo", `{"text":"x"}`); err != nil {
					t.Fatal(err)
				}
			}
			if n := as.TokenRequests(fake.GrantRefreshToken); n != 0 {
				t.Errorf("%d refreshes for a token that has not expired", n)
			}
		})
	}
}
