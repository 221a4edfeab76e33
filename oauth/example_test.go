package oauth_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
	"github.com/mcpgate/mcpgate/oauth"
	"github.com/mcpgate/mcpgate/store/seal"
	"github.com/mcpgate/mcpgate/store/sqlite"
)

// Login signs in to an OAuth-protected server; Open is where a real
// program opens the person's browser (oauth.OpenBrowser).
func ExampleClient_Login() {
	as := fake.NewAuth(nil)
	defer as.Close()
	srv := fake.NewServer(&fake.Options{Auth: as})
	defer srv.Close()

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := seal.New(key)
	st, _ := sqlite.Open(filepath.Join(dir, "mcpgate.db"), sealer)
	defer st.Close()

	client := oauth.New(&oauth.Options{Store: st})
	browser := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Login(context.Background(),
		mcpgate.ServerConfig{ID: "secure", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true},
		&oauth.LoginOptions{Open: func(ctx context.Context, url string) error {
			resp, err := browser.Get(url) // the person signs in; the redirect reaches the callback
			if err == nil {
				resp.Body.Close()
			}
			return err
		}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Issuer == as.Issuer, res.Refresh)
	// Output: true true
}
