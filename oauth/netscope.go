package oauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/netpolicy"
)

// forServer puts cfg's server on ctx for the network policy: every
// discovery, registration, token and revocation request made for it may
// reach what its config allows (loopback for a server configured on
// loopback, private ranges with allowPrivateNetwork) and no more, wherever
// its metadata points. The public methods that make requests for a server
// call it first.
func forServer(ctx context.Context, cfg *mcpgate.ServerConfig) context.Context {
	return netpolicy.WithScope(ctx, netpolicy.ScopeOf(*cfg))
}

// policyError attributes a request the network policy refused: it was
// never sent, and signing in again would not help.
func policyError(what string, err error) *mcpgate.Error {
	msg := netpolicy.ErrRefused.Error()
	var re *netpolicy.RefusedError
	if errors.As(err, &re) {
		msg = re.Error()
	}
	return &mcpgate.Error{Category: mcpgate.CategoryPolicy, Message: what + ": " + sanitizeText("%s", msg), Err: err}
}

// defaultTransport is the transport of a client built without an
// HTTPClient: the network policy's, over the process's environment. When
// that environment's CA settings cannot be used, every request fails
// saying so, since New has no error to return.
func defaultTransport() http.RoundTripper {
	tr, err := netpolicy.New(nil)
	if err != nil {
		return failing{mcpgate.Errorf(mcpgate.CategoryInvalid, "setting up the network: %w", err)}
	}
	return tr
}

type failing struct{ err error }

func (f failing) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }
