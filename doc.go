// Package mcpgate is the domain of the mcpgate gateway: the configuration of a
// remote MCP server, the states a connection can be in, and the error
// categories every edge (CLI exit codes, model-facing messages, the settings
// page) maps from. It depends on the standard library only.
//
// # Layout
//
// Data flows one way:
//
//	fronts (internal/cli, serve) → gateway / bridge → manager → oauth / store
//
// [ServerConfig] is what the config package loads and the manager connects.
// [State] is what a server's connection is, and [Error] says why a server is
// not ready, attributed to a [Category], an HTTP status and a provider code.
//
// # Errors
//
// Errors that cross a package boundary wrap one of the sentinels below or are
// an [*Error]. Use [CategoryOf] to find the category of any error; edges map
// categories to their own codes in one place.
package mcpgate
