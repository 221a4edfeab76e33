// Package manager supervises one MCP session per configured remote server:
// connecting, catalogs, calls, cancellation and the truth about each
// server's state.
//
// # Use
//
//	m, err := manager.New(cfg.Servers(), &manager.Options{ClientName: "my-agent"})
//	if err != nil { ... }
//	defer m.Close()
//	res, err := m.CallTool(ctx, "docs", "search", json.RawMessage(`{"q":"x"}`), nil)
//
// Nothing connects until it is needed ([Manager.Start] connects the servers
// marked connectOnStartup); every method that needs a session connects it.
//
// # Lifecycle
//
// A server is disconnected, connecting, ready, needs-auth or error, and
// [Status] always says which, with an attributed error. Concurrent callers
// share one in-flight connect. Connect, disconnect and reconnect are
// serialized per server, and every session carries a connectionId: a late
// answer for an older session can neither change the state nor close,
// replace or read the current session. A change of URL or credential
// settings passes the disconnect barrier in [Manager.Update] before the new
// binding is used.
//
// # Calls
//
// A tool call times out after the server's timeout (60 s by default) and can
// be cancelled through its context or by operation ID ([Manager.Cancel]),
// which sends notifications/cancelled to the server. A cancel that arrives
// before its call is remembered for a while and wins. A call is sent once;
// it is re-sent on a new session only when the server provably never ran
// it (its request was answered 404 for an expired session, or never left
// the process).
//
// # Catalogs
//
// Tools, prompts and resources are mirrored per session, refreshed on
// list_changed; only the newest valid result is kept, and a failed refresh
// keeps the last valid catalog, marked stale. Pages, entries and entry sizes
// are bounded ([Limits]); what is dropped is explained in
// [Status.Diagnostics].
//
// # Transport
//
// Sessions use the go-sdk's Streamable HTTP client pinned to protocol
// 2025-11-25 (2025-06-18 accepted). Response bodies are bounded, configured
// headers are expanded per request, redirects stay on the same origin, and
// the standalone GET stream is supervised so it can neither hold a connect
// nor end a healthy session.
package manager
