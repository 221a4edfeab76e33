package manager

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures a [Manager]. A nil *Options means defaults; the struct
// is copied by [New], so later changes by the caller have no effect.
type Options struct {
	// HTTPClient sends every request to remote servers. Nil means one over
	// a [netpolicy.Transport] (the network policy, with the proxies and CAs
	// of the process's environment); a client of your own is used as it
	// is. Its Transport
	// is wrapped, never changed; each request carries its server's
	// [netpolicy.Scope] on its context.
	HTTPClient *http.Client
	// Logger receives diagnostics; nil discards them. Secrets never reach it.
	Logger *slog.Logger
	// ClientName and ClientVersion are sent in initialize.
	ClientName, ClientVersion string
	// Getenv resolves ${VAR} in headers and bearerTokenEnv; nil is os.Getenv.
	Getenv func(string) string
	// Elicit asks a person to answer a form elicitation. Nil declines every
	// elicitation. It is called from the goroutine serving the remote
	// server's request and must honour ctx.
	Elicit func(ctx context.Context, req *ElicitRequest) (*mcp.ElicitResult, error)
	// OnStateChange is called after a server's state changes, outside every
	// lock, one call at a time per server, with the status as it is then. It
	// must not block for long or call back into the manager to connect or
	// disconnect.
	OnStateChange func(Status)
	// ConnectTimeout bounds one connect attempt (initialize and the first
	// catalog); zero means 30 s.
	ConnectTimeout time.Duration
	// MaxConnecting bounds how many servers connect at once (dial,
	// negotiate, list the first catalog), so that a status or a listing
	// over a thousand servers does not open a thousand connections in one
	// moment; the others wait in state connecting. Zero means 16.
	MaxConnecting int
	// Limits bound what a remote server can make mcpgate hold; zero fields
	// take the defaults in [DefaultLimits].
	Limits Limits
	// RequestLog, when set, receives every request sent to a remote server
	// (see [RequestLogEntry]: metadata only, never payloads or secrets), as
	// the request ends. It may be called from many goroutines at once, never
	// under a lock of the manager, and must not block: hand the entry to a
	// queue of your own.
	RequestLog func(RequestLogEntry)
	// streamPolicy paces event-stream reconnects; zero means the default
	// (tests shorten it).
	streamPolicy reconnectPolicy
	// sdkCalls sends tool calls through the go-sdk's client instead of
	// rawcall.go: for tests that compare the two.
	sdkCalls bool
	// RequestLogSize bounds the entries [Manager.RecentRequests] keeps;
	// zero means [DefaultRequestLogSize].
	RequestLogSize int
	// OnLog receives the log messages (notifications/message) servers send,
	// with the ID of the server that sent them; nil drops them. The data is
	// remote content: bound and sanitize it before showing it.
	//lint:ignore SA1019 logging is deprecated only from 2026-07-28 (SEP-2577); the session era and the deprecation window still use it
	OnLog func(server string, msg *mcp.LoggingMessageParams)
	// ClientMiddleware, when set, gives the go-sdk sending middleware for
	// the sessions of a server (tracing: a span per upstream request, its
	// trace context in the request's _meta).
	ClientMiddleware func(server string) mcp.Middleware
	// OnCallEnd, when set, is called as every tool call ends, with the
	// caller's context, how long it took and its result or attributed
	// error (a *mcpgate.Error). It must not block.
	OnCallEnd func(ctx context.Context, server, tool string, elapsed time.Duration, res *mcp.CallToolResult, err error)
	// OnEventStream, when set, is told each time a server's event stream
	// (the standalone GET, subscriptions/listen) opens and ends.
	OnEventStream func(server string, open bool)
	// Catalogs, when set, keeps each server's last valid catalog across
	// processes: New loads them, reads answer from them without
	// connecting while a server has no live session ([Status.Cached]),
	// and every new live catalog is written back. Tenant names whose
	// catalogs they are ("" for a single user).
	Catalogs store.CatalogStore
	Tenant   string
	// RefreshCached makes a read answered from a stored catalog also
	// connect the server in the background, for a process that keeps
	// running (serve, the settings page), so it soon holds the live
	// catalog. Unset, such reads connect nothing.
	RefreshCached bool
	// CatalogMaxAge is how old a stored catalog may be and still be used;
	// zero means [DefaultCatalogMaxAge].
	CatalogMaxAge time.Duration
	// Authorizer supplies the authorization of servers with auth oauth, and
	// of bearer servers whose token is stored rather than read from the
	// environment (see oauth.Client). Nil leaves such servers needs-auth.
	Authorizer Authorizer
}

// Authorizer gives the go-sdk OAuthHandler for a server's sessions. Its
// handlers must never start an interactive login: when a person is needed
// they return an error of category auth, and the server becomes needs-auth.
type Authorizer interface {
	Handler(cfg mcpgate.ServerConfig) auth.OAuthHandler
}

// A RequestPreparer is an [auth.OAuthHandler] that must see each HTTP
// request of a session just before it leaves, after the go-sdk has set its
// Authorization header: a sender-constrained token (DPoP, RFC 9449) swaps
// the Bearer scheme for its own and adds a proof bound to the request. The
// manager calls it when the handler from [Authorizer.Handler] implements
// it. PrepareRequest must be safe for concurrent use.
type RequestPreparer interface {
	PrepareRequest(req *http.Request) error
}

// Limits bound catalogs and results.
type Limits struct {
	// MaxPages bounds pagination of one catalog list.
	MaxPages int
	// MaxEntries bounds the entries kept in one catalog.
	MaxEntries int
	// MaxEntryBytes bounds one catalog entry as JSON; larger ones are dropped.
	MaxEntryBytes int
	// MaxResponseBytes bounds one HTTP response body from a remote server.
	MaxResponseBytes int64
}

// DefaultLimits are the limits used for zero fields of [Options.Limits].
var DefaultLimits = Limits{
	MaxPages:         100,
	MaxEntries:       5000,
	MaxEntryBytes:    64 << 10,
	MaxResponseBytes: 32 << 20,
}

// Status is a snapshot of one server: its configuration summary, its state
// and its catalog counts. Counts are -1 when the catalog was never loaded.
type Status struct {
	ID      string           `json:"id"`
	Name    string           `json:"name"`
	URL     string           `json:"url"`
	Auth    mcpgate.AuthKind `json:"auth"`
	Enabled bool             `json:"enabled"`
	State   mcpgate.State    `json:"state"`
	// Error says why State is error or needs-auth.
	Error *ErrorInfo `json:"error,omitempty"`
	// ConnectionID identifies the live session; zero when there is none.
	ConnectionID uint64 `json:"-"`
	// Generation changes whenever a catalog of this server is replaced, so
	// whoever derives something from catalogs (a search index, a tool list
	// for a front) knows when to derive it again.
	Generation uint64 `json:"-"`
	Tools      int    `json:"tools"`
	Prompts    int    `json:"prompts"`
	Resources  int    `json:"resources"`
	Templates  int    `json:"resourceTemplates"`
	// Stale is set when the last catalog refresh failed and the counts
	// describe the last valid catalog.
	Stale bool `json:"stale,omitempty"`
	// Cached is set when there is no live session and the counts describe
	// the catalog a process last listed ([Options.Catalogs]), fetched at
	// CachedAt; reads answer from it without connecting. State is then
	// never ready: only a live session is.
	Cached   bool      `json:"cached,omitempty"`
	CachedAt time.Time `json:"cachedAt,omitzero"`
	// ProtocolVersion is the negotiated MCP version of the live session.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// ServerTitle is the product name the live session's server gave in
	// initialize (title, else name), or the one of the stored catalog a
	// cached status describes; sanitized remote text, so for search and
	// display, never for decisions.
	ServerTitle string `json:"-"`
	// ServerInstructions is what the server said of itself in
	// initialize (its instructions), as ServerTitle is, cut to 2 KiB;
	// remote text, for search only: never shown to the model as
	// instructions, never for decisions.
	ServerInstructions string `json:"-"`
	// Diagnostics are bounded, sanitized notes about what the server sent
	// that was dropped or cut (oversized entries, endless pagination).
	Diagnostics []string `json:"diagnostics,omitempty"`
}

// ErrorInfo is the attributed, sanitized form of an error for status output.
type ErrorInfo struct {
	Category   mcpgate.Category `json:"category"`
	HTTPStatus int              `json:"httpStatus,omitempty"`
	Code       string           `json:"code,omitempty"`
	Message    string           `json:"message"`
}

// ElicitRequest is a form elicitation from a remote server during a call.
type ElicitRequest struct {
	Server  string
	Message string
	// Schema is the requested schema: an object with flat properties.
	Schema json.RawMessage
}

// CallOptions tune one tool call.
type CallOptions struct {
	// OperationID lets [Manager.Cancel] find the call; empty means the call
	// can only be cancelled through its context.
	OperationID string
	// Timeout overrides the server's call timeout when positive.
	Timeout time.Duration
	// Progress, when set, receives the progress notifications the server
	// sends about this call, in order. It runs on the goroutine reading the
	// server's stream and must not block.
	Progress func(*mcp.ProgressNotificationParams)
}

// MetaTaskSupport is the key under which a catalog tool's Meta carries the
// execution.taskSupport a 2025-11-25 server declared for it ("forbidden",
// "optional" or "required"): the go-sdk's Tool has no field for it, and a
// tool that requires a task cannot be called by a client that does not run
// tasks, so fronts mark and refuse it.
const MetaTaskSupport = "io.mcpgate/taskSupport"

// Counted says a [Status] count in words: "1 tool", "3 tools", and for a
// list never loaded (-1) "unknown tools", never "0 tools".
func Counted(n int, noun string) string {
	switch {
	case n < 0:
		return "unknown " + noun + "s"
	case n == 1:
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
