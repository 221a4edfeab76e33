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
// Tools, prompts, resources and resource templates are mirrored per
// connection. A change notification refreshes its kind; refreshes of a
// kind never overlap, and a flood of notifications costs one more list,
// not one per notification. A 2026-07-28 result is fresh for its ttlMs and
// listed again on the next use after that; a session-era catalog lasts its
// session. A failed refresh keeps the last valid catalog, marked stale; a
// kind that never loaded returns its error instead of an empty list.
// Pages, entries and entry sizes are bounded ([Limits]); what is dropped
// (including tools whose x-mcp-header declarations are invalid) is
// explained in [Status.Diagnostics].
//
// With [Options.Catalogs], each server's last valid catalog is kept in the
// store: the next manager answers reads from it without connecting while
// the server has no live session ([Status.Cached]; the state is then
// never ready), and every new live catalog is written back.
//
// # Protocol generations
//
// The manager speaks MCP 2026-07-28 first and the session era (2025-11-25,
// 2025-06-18, 2025-03-26) when a server does not; each server's status
// says which ([Status.ProtocolVersion]), and a server is remembered, so a
// session-era one is not asked to discover again. What differs between the
// generations lives in one place (conn.go): how a connection is checked
// (ping, or server/discover), whether a server can forget it (a 404 makes
// a new session, once), what a request's _meta carries.
//
// When a server needs input before it can answer (a form elicitation asked
// during a 2025-x request, or a 2026-07-28 InputRequiredResult), the
// question goes to [Options.Elicit] and the request continues with the
// answer; roots are answered with none and sampling is declined.
//
// # Transport
//
// Sessions use the go-sdk's Streamable HTTP client. Response bodies are
// bounded, configured headers are expanded per request, redirects stay on
// the same origin. The event streams on which servers announce changes
// (the standalone GET of 2025-x, subscriptions/listen of 2026-07-28) are
// supervised: they can neither hold a connect nor end a healthy session,
// and they are reopened under a policy that honours the server's retry
// above a floor, backs off while streams keep ending and caps reopens per
// minute. A broken 2025-x response stream is resumed with Last-Event-ID; a
// broken 2026-07-28 one loses its request, which is sent again for a list,
// a read or a prompt, and reported in doubt for a tool call.
package manager
