package gateway

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/manager"
)

// modelError says what went wrong in words fit for a model: the category,
// HTTP status and provider code, and what to do next. Remote text never
// appears: for categories whose message may carry it, a fixed sentence is
// used instead of the message.
func (g *Gateway) modelError(server string, err error) string {
	var me *mcpgate.Error
	if !errors.As(err, &me) {
		me = &mcpgate.Error{Category: mcpgate.CategoryOf(err)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "error: %s", me.Category)
	if me.HTTPStatus != 0 {
		fmt.Fprintf(&b, ", HTTP %d", me.HTTPStatus)
	}
	if code := mcpgate.SafeCode(me.Code); code != "" {
		fmt.Fprintf(&b, ", code %s", code)
	}
	b.WriteString(". ")
	s := server
	if s == "" {
		s = "SERVER"
	}
	var ut *manager.UnknownToolError
	var ps *personStep
	switch {
	case errors.As(err, &ps):
		fmt.Fprintf(&b, "It did not work from here; the person can run in a terminal: %s, which says why.", ps.command)
		return b.String()
	case errors.As(err, &ut):
		fmt.Fprintf(&b, "server %q has no tool %q.", s, clip(ut.Tool, 80))
		if len(ut.Suggestions) > 0 {
			b.WriteString(" The closest names it offers:\n")
			b.WriteString(untrusted("server "+s+", tool names", strings.Join(ut.Suggestions, "\n"), g.lim))
		} else {
			fmt.Fprintf(&b, " Call {\"action\":\"search\",\"server\":%q,\"query\":...} to find one.", s)
		}
		return b.String()
	}
	switch me.Category {
	case mcpgate.CategoryInvalid, mcpgate.CategoryNotFound, mcpgate.CategoryDisabled,
		mcpgate.CategoryConflict, mcpgate.CategoryUnsupported:
		// Composed by mcpgate from the configuration and validated names.
		b.WriteString(me.Message)
	case mcpgate.CategoryAuth:
		if me.Code == "insufficient_scope" {
			fmt.Fprintf(&b, "The server needs more permissions: call {\"action\":\"authenticate\",\"server\":%q} so the person can approve them.", s)
		} else {
			fmt.Fprintf(&b, "The server needs a sign-in: call {\"action\":\"authenticate\",\"server\":%q}.", s)
		}
	case mcpgate.CategoryNetwork:
		fmt.Fprintf(&b, "The server could not be reached or the connection dropped; the call may or may not have run. Retry once, or call {\"action\":\"reconnect\",\"server\":%q}; if it persists, tell the person.", s)
	case mcpgate.CategoryTimeout:
		b.WriteString("The operation ran out of time; if it may have had effects, check before retrying.")
	case mcpgate.CategoryCancelled:
		b.WriteString("The operation was cancelled.")
	case mcpgate.CategoryHTTP:
		b.WriteString("The server answered with an HTTP error. Retry once; if it persists, tell the person.")
	case mcpgate.CategoryRemote:
		b.WriteString("The server reported an error for this request; check the arguments against describe.")
	case mcpgate.CategoryPolicy:
		// The refusal names hosts a server's metadata chose: fixed words.
		b.WriteString("mcpgate's network policy refused an address this server or its sign-in would connect to (link-local, cloud metadata, private or loopback). Retrying will not help; tell the person, whose configuration decides what the server may reach.")
	case mcpgate.CategoryProtocol:
		b.WriteString("The server's answer broke the protocol or a size bound. Try a smaller request, or tell the person.")
	default:
		b.WriteString("Something failed inside mcpgate; tell the person.")
	}
	return b.String()
}

// personStep is a failed sign-in or sign-out. Its cause may quote the
// server's metadata (issuers, endpoints), so the model learns only its
// category and the command that shows the person the rest.
type personStep struct {
	err     error
	command string
}

func (e *personStep) Error() string { return e.err.Error() }
func (e *personStep) Unwrap() error { return e.err }
