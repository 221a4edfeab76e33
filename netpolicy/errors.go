package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrRefused is matched (with errors.Is) by every [*RefusedError]: a
// request the policy stopped before anything was sent.
var ErrRefused = errors.New("refused by the network policy")

// RefusedError says what the policy refused, why, and what would allow
// it. It holds no secret: a host name and an address, never a URL (whose
// query may carry one) or a proxy's credentials.
type RefusedError struct {
	// Host is the name or literal address the request was for.
	Host string
	// Addr is the address refused: what Host resolved to, or Host itself.
	// It is invalid when the name alone was refused (a metadata service's
	// name, sent to a proxy).
	Addr netip.Addr
	// Server is the ID of the server the request was for; empty when it
	// carried no scope.
	Server string

	class  class
	strict bool
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("network policy: refused to connect to ")
	b.WriteString(e.Host)
	if e.Addr.IsValid() && e.Addr.String() != strings.Trim(e.Host, "[]") {
		fmt.Fprintf(&b, " (%s)", e.Addr)
	}
	if e.Server != "" {
		fmt.Fprintf(&b, " for server %q", e.Server)
	}
	b.WriteString(": ")
	b.WriteString(e.class.reason())
	b.WriteString(", ")
	b.WriteString(e.allowedWhen())
	return b.String()
}

// allowedWhen says what setting would allow the address, if any does.
func (e *RefusedError) allowedWhen() string {
	switch {
	case e.class.never():
		return "which is never allowed"
	case e.strict:
		return "which this gateway's strict network policy allows only in the ranges its operator listed"
	case e.class == loopback:
		return "allowed only for servers configured on loopback (http://localhost, 127.0.0.1 or [::1])"
	case e.class == private:
		return `allowed only for servers whose config entry says "allowPrivateNetwork": true (mcpgate add --allow-private-network)`
	}
	return "which is not allowed"
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }
