// Package oauth is mcpgate's MCP authorization client: it finds how a
// server wants to be signed in to, signs in, keeps the credential in a
// [store.Store] and renews it, for every process sharing the store.
//
// # Signing in
//
// [Client.Login] asks the server without credentials (a 2026-07-28
// server/discover request, which a protected server of any generation
// answers 401 with its challenge), then discovers:
//
//   - the protected resource metadata (RFC 9728): from the challenge's
//     resource_metadata on the server's own origin, else the path-aware,
//     else the root well-known location. Its resource must be the server
//     URL (path-aware) or a same-origin resource the URL lies within (the
//     origin, for the root document); that identifier is sent as resource
//     (RFC 8707) exactly as published and the credential is bound to it.
//     A server with no metadata at all is of MCP 2025-03-26: its origin is
//     its authorization server, with RFC 8414 metadata or the default
//     endpoints /authorize, /token and /register.
//   - the authorization server's metadata (RFC 8414, OpenID fallbacks),
//     with an exact issuer, S256 PKCE and https endpoints. Several
//     authorization servers are never guessed between ([LoginOptions].Issuer).
//   - the client: configured, a Client ID Metadata Document, or a dynamic
//     registration (RFC 7591) kept per issuer. A configured client is
//     pinned to its issuer ([mcpgate.ServerConfig].Issuer): its ID, secret
//     or key, and a machine grant's assertions, go to no other, whatever
//     the server names.
//
// A person then signs in with the authorization code grant (PKCE, state,
// iss), through [LoginOptions].Open and a loopback callback or
// [Client.CompleteRedirect]. Servers configured with a grant without a
// person ([mcpgate.Grant.Machine]) sign in by themselves: client
// credentials, a workload's JWT (SEP-1933) or a person's ID token
// exchanged at the company's identity provider (SEP-990).
//
// # Using and renewing
//
// [Client.Handler] is the go-sdk [auth.OAuthHandler] of one server: it
// reads the credential from the store for every request (sent only while
// the server's auth is the credential's kind), renews it shortly before
// it expires (a margin that scales with the token's lifetime), records
// what a 403 insufficient_scope asks for (step-up, bounded in a row
// whatever scopes it names) and never starts an interactive sign-in.
//
// A renewal finds the authorization server's metadata first, outside
// every lock, then takes the credential's renewal lock (the store's
// Lock, shared by every process, blocking nothing else), reads the
// credential again (another process may have renewed it: a rotating
// refresh token is spent once), asks for the new tokens and commits them
// in one short write. The store's write lock is never held across the
// network.
//
// With DPoP (RFC 9449) the credential's tokens are bound to a key kept
// with it; the handler's PrepareRequest (see manager.RequestPreparer)
// adds each request's proof.
//
// Errors are [*mcpgate.Error] values: category auth when a person must
// sign in (exit 4 in the CLI), and remote text only sanitized, with
// provider codes kept only when they look like codes.
package oauth
