package manager

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/lazyregexp"
	"golang.org/x/oauth2"
)

// staticAuth is the go-sdk OAuthHandler for servers with auth none or
// bearer. Having a handler at all matters: without one, the SDK turns a 401
// or 403 into a plain error that ends the session; with one, Authorize sees
// the response and its error is returned to the caller, leaving the session
// usable once the person fixes the credential.
type staticAuth struct {
	cfg   mcpgate.ServerConfig
	token string // resolved bearer token; empty sends none
}

func (a *staticAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if a.token == "" {
		return nil, nil
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: a.token, TokenType: "Bearer"}), nil
}

func (a *staticAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return authError(&a.cfg, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), a.token != "")
}

// challengeError finds a challenge's error parameter, quoted or not.
var challengeError = lazyregexp.New(`(?i)\berror=(?:"([^"]*)"|([^\s,"]*))`)

// authError attributes a 401 or 403 and tells the person what to do next.
// The challenge's error is the provider code only when all of it is one
// (see [mcpgate.SafeCode]): the server writes it, and it reaches the model.
func authError(cfg *mcpgate.ServerConfig, status int, challenge string, sentToken bool) *mcpgate.Error {
	code := ""
	if m := challengeError().FindStringSubmatch(challenge); m != nil {
		code = mcpgate.SafeCode(m[1] + m[2])
	}
	e := &mcpgate.Error{Category: mcpgate.CategoryAuth, HTTPStatus: status, Code: code}
	switch {
	case status == http.StatusForbidden && code == "insufficient_scope":
		e.Message = "the server needs more scopes than this credential has (HTTP 403 insufficient_scope)"
	case status == http.StatusForbidden:
		e.Message = "the server refused this credential (HTTP 403)"
	case cfg.Auth == mcpgate.AuthBearer && !sentToken:
		e.Message = fmt.Sprintf("the server requires a bearer token (HTTP 401) and $%s is not set", cfg.BearerTokenEnv)
	case cfg.Auth == mcpgate.AuthBearer:
		e.Message = fmt.Sprintf("the server rejected the bearer token from $%s (HTTP 401)", cfg.BearerTokenEnv)
	case cfg.Auth == mcpgate.AuthOAuth:
		e.Message = fmt.Sprintf("the server requires an OAuth sign-in (HTTP 401); sign in with: mcpgate auth %s", cfg.ID)
	default:
		e.Message = fmt.Sprintf("the server requires authorization (HTTP 401); configure it with --auth bearer or --auth oauth (mcpgate add %s URL --replace ...)", cfg.ID)
	}
	if code != "" && status == http.StatusUnauthorized {
		e.Message += " [" + code + "]"
	}
	return e
}
