package oauth_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// env is one "installation": a data directory with its store, opened once
// or more (as separate processes would).
type env struct {
	t    *testing.T
	path string
	key  []byte
}

func newEnv(t *testing.T) *env {
	key := make([]byte, 32)
	rand.Read(key)
	return &env{t: t, path: filepath.Join(t.TempDir(), "mcpgate.db"), key: key}
}

// open returns a new handle on the env's store and a client over it.
func (e *env) open() (store.Store, *oauth.Client) {
	e.t.Helper()
	return e.openWith(&oauth.Options{})
}

// openWith is open with opts (its Store is set here).
func (e *env) openWith(opts *oauth.Options) (store.Store, *oauth.Client) {
	e.t.Helper()
	sealer, err := seal.New(e.key)
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := sqlite.Open(e.path, sealer)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	o := *opts
	o.Store = st
	return st, oauth.New(&o)
}

func oauthCfg(id, url string) mcpgate.ServerConfig {
	return mcpgate.ServerConfig{ID: id, URL: url, Auth: mcpgate.AuthOAuth, Enabled: true}
}

// browse plays the person's browser: it opens the URL and follows the
// authorization server's redirects on loopback, so the last one reaches
// the login's callback. It records what it was asked to open.
type browser struct {
	opened []string
}

func (b *browser) open(ctx context.Context, raw string) error {
	b.opened = append(b.opened, raw)
	client := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func login(t *testing.T, c *oauth.Client, cfg mcpgate.ServerConfig, opts *oauth.LoginOptions) (*oauth.LoginResult, *browser, error) {
	t.Helper()
	b := &browser{}
	var o oauth.LoginOptions
	if opts != nil {
		o = *opts
	}
	if o.Open == nil {
		o.Open = b.open
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.Login(ctx, cfg, &o)
	return res, b, err
}

func mustLogin(t *testing.T, c *oauth.Client, cfg mcpgate.ServerConfig) *oauth.LoginResult {
	t.Helper()
	res, _, err := login(t, c, cfg, nil)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return res
}

func newManager(t *testing.T, c *oauth.Client, cfgs ...mcpgate.ServerConfig) *manager.Manager {
	t.Helper()
	m, err := manager.New(cfgs, &manager.Options{Authorizer: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func call(t *testing.T, m *manager.Manager, server, tool, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := m.CallTool(ctx, server, tool, json.RawMessage(args), nil)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(res.Content)
	return string(b), nil
}

func category(err error) mcpgate.Category { return mcpgate.CategoryOf(err) }

func code(err error) string {
	var me *mcpgate.Error
	if errors.As(err, &me) {
		return me.Code
	}
	return ""
}

func query(raw string) url.Values {
	u, _ := url.Parse(raw)
	return u.Query()
}

// noSecrets fails if any secret appears in any of the texts.
func noSecrets(t *testing.T, secrets []string, texts ...string) {
	t.Helper()
	for _, s := range secrets {
		if len(s) < 8 {
			continue
		}
		for _, text := range texts {
			if strings.Contains(text, s) {
				t.Errorf("a secret (%d bytes, starting %q) appeared in output: %q", len(s), s[:4], text)
			}
		}
	}
}
