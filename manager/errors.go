package manager

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/netpolicy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Causes set on contexts so a cancelled operation says why.
var (
	errCallTimeout    = errors.New("call timed out")
	errCallCancelled  = errors.New("call cancelled by operation ID")
	errConnectTimeout = errors.New("connect timed out")
	errSuperseded     = errors.New("connection attempt superseded: the server was disconnected or reconfigured")
	errClosed         = errors.New("manager closed")
)

// rejectedCode is the go-sdk's internal "rejected by transport" marker,
// which says nothing about the remote server.
const rejectedCode = -32005

// classify turns any error from an operation on a server into an attributed
// [*mcpgate.Error]. Its Message is composed here and may quote the remote
// server's JSON-RPC message only after [sanitize]; the cause is kept in Err.
func classify(ctx context.Context, what string, err error, obs *observation) *mcpgate.Error {
	if err == nil {
		return nil
	}
	var me *mcpgate.Error
	if errors.As(err, &me) {
		return me
	}
	status, tooLarge := obs.snapshot()
	e := &mcpgate.Error{Err: err}
	cause := context.Cause(ctx)
	switch {
	case tooLarge || errors.Is(err, errResponseTooLarge):
		e.Category = mcpgate.CategoryProtocol
		e.Message = what + ": the server's response exceeded the size bound"
	case errors.Is(cause, errCallTimeout) || errors.Is(cause, errConnectTimeout) ||
		(ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)) || errors.Is(err, context.DeadlineExceeded):
		e.Category = mcpgate.CategoryTimeout
		e.Message = what + ": timed out"
	case errors.Is(cause, errCallCancelled) || errors.Is(err, errSuperseded) || errors.Is(err, errClosed) ||
		errors.Is(err, context.Canceled) || ctx.Err() != nil:
		e.Category = mcpgate.CategoryCancelled
		e.Message = what + ": cancelled"
		if errors.Is(err, errSuperseded) {
			e.Message = what + ": " + errSuperseded.Error()
		}
	case errors.Is(err, netpolicy.ErrRefused):
		// Before the network errors: the refusal comes wrapped in the
		// url.Error of the dial it stopped, and retrying will not help.
		e.Category = mcpgate.CategoryPolicy
		e.Message = what + ": " + refusal(err)
	case errors.Is(err, mcp.ErrSessionMissing):
		e.Category = mcpgate.CategoryProtocol
		e.HTTPStatus = http.StatusNotFound
		e.Message = what + ": the server no longer knows this session (HTTP 404)"
	case wireError(err) != nil:
		we := wireError(err)
		e.Category = mcpgate.CategoryRemote
		e.Code = strconv.FormatInt(we.Code, 10)
		e.HTTPStatus = httpErrorStatus(status)
		e.Message = fmt.Sprintf("%s: the server answered with error %d", what, we.Code)
		if we.Code == codeMissingRequiredClientCapability {
			e.Message = what + ": the server requires what mcpgate does not offer: " + missingCapabilities(we.Data)
			break
		}
		if msg := mcpgate.Sanitize(we.Message, 200); msg != "" {
			e.Message += ": " + msg
		}
	case status >= 400:
		e.Category = mcpgate.CategoryHTTP
		e.HTTPStatus = status
		e.Message = fmt.Sprintf("%s: the server answered HTTP %d %s", what, status, http.StatusText(status))
	case isNetworkError(err):
		e.Category = mcpgate.CategoryNetwork
		e.Message = what + ": " + networkReason(err)
	case obs.foreignType() != "":
		// What the SDK takes for a closed connection or a broken
		// protocol, when the answer was a web page: the URL is wrong.
		mt := mcpgate.Sanitize(obs.foreignType(), 60)
		e.Category = mcpgate.CategoryProtocol
		e.Message = fmt.Sprintf("%s: the server answered with %s, not MCP (JSON or an event stream); check that the URL is the server's MCP endpoint", what, mt)
		switch mt {
		case "text/html":
			e.Message = what + ": the server answered with a web page (text/html), not MCP; check that the URL is the server's MCP endpoint"
		case foreignJSON:
			e.Message = what + ": the server answered with JSON that is not JSON-RPC, so not MCP; check that the URL is the server's MCP endpoint"
		}
	case errors.Is(err, mcp.ErrConnectionClosed):
		e.Category = mcpgate.CategoryNetwork
		e.Message = what + ": the connection to the server closed"
	default:
		e.Category = mcpgate.CategoryProtocol
		e.Message = what + ": the server broke the protocol"
	}
	return e
}

func httpErrorStatus(status int) int {
	if status >= 400 {
		return status
	}
	return 0
}

// codeMissingRequiredClientCapability is 2026-07-28's
// MissingRequiredClientCapabilityError: the request needs a capability
// the client did not declare, such as the tasks extension for a tool that
// only runs as a task.
const codeMissingRequiredClientCapability = -32021

// missingCapabilities names, for people, the capabilities an error's
// data.requiredCapabilities lists.
func missingCapabilities(data json.RawMessage) string {
	var d struct {
		Required map[string]json.RawMessage `json:"requiredCapabilities"`
	}
	if json.Unmarshal(data, &d) != nil || len(d.Required) == 0 {
		return "a client capability it did not name"
	}
	var names []string
	for k, v := range d.Required {
		if k == "extensions" {
			var ext map[string]json.RawMessage
			if json.Unmarshal(v, &ext) == nil {
				for name := range ext {
					label := "the " + mcpgate.Sanitize(name, 80) + " extension"
					if name == "io.modelcontextprotocol/tasks" {
						label = "the tasks extension (tools that run as tasks)"
					}
					names = append(names, label)
				}
				continue
			}
		}
		names = append(names, mcpgate.Sanitize(k, 40))
	}
	slices.Sort(names)
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return strings.Join(names, ", ")
}

// methodNotFound reports whether the server answered that it does not
// implement the method.
func methodNotFound(err error) bool {
	we := wireError(err)
	return we != nil && we.Code == jsonrpc.CodeMethodNotFound
}

// wireError finds a JSON-RPC error from the remote side in err's tree,
// skipping the SDK's own transport marker.
func wireError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	walk(err, func(e error) bool {
		if we, ok := e.(*jsonrpc.Error); ok && we.Code != rejectedCode {
			found = we
			return true
		}
		return false
	})
	return found
}

func walk(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if walk(e, f) {
				return true
			}
		}
	}
	return false
}

func isNetworkError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "connection reset") ||
		strings.Contains(err.Error(), "server closed") ||
		strings.Contains(err.Error(), "request terminated without response")
}

func networkReason(err error) string {
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.As(err, &unknownCA):
		// Behind a company's TLS-inspecting proxy, or for a server with
		// an internal CA, this is the first thing people meet.
		return "the server's TLS certificate is signed by an authority this machine does not trust (a company CA? name its PEM file in SSL_CERT_FILE)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (is the server running?)"
	case errors.As(err, &dns):
		return "the server's host name could not be resolved"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), strings.Contains(err.Error(), "connection reset"),
		strings.Contains(err.Error(), "request terminated without response"):
		return "the connection dropped before the server answered"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "the network timed out"
	}
	return "could not reach the server"
}

// refusal is the network policy's own words for people: it names a host
// and an address, never a URL.
func refusal(err error) string {
	var re *netpolicy.RefusedError
	if errors.As(err, &re) {
		return mcpgate.Sanitize(re.Error(), 400)
	}
	return netpolicy.ErrRefused.Error()
}

// info converts an attributed error for Status.
func info(e *mcpgate.Error) *ErrorInfo {
	if e == nil {
		return nil
	}
	return &ErrorInfo{Category: e.Category, HTTPStatus: e.HTTPStatus, Code: e.Code, Message: e.Message}
}
