// Package netpolicy decides where mcpgate's outbound requests may go. A
// remote MCP server, and the authorization servers its metadata names,
// choose URLs that mcpgate then fetches: without a policy a server could
// point discovery at a cloud metadata service (169.254.169.254), at a
// private network behind the person's machine, or at a service on
// loopback, and mcpgate would send the request (server-side request
// forgery). Checking URLs is not enough: a name that resolved to a public
// address when it was checked can resolve to 127.0.0.1 when it is dialled
// (DNS rebinding). So the check is made where the address is known: in the
// dialer, on the address actually dialled.
//
// # The rules
//
// Every address a request would connect to is one of:
//
//   - never dialled: link-local (169.254.0.0/16, fe80::/10), the cloud
//     metadata services (169.254.169.254, fd00:ec2::254, 100.100.100.200,
//     and metadata.google.internal by name), unspecified (0.0.0.0/8, ::),
//     multicast, broadcast and reserved addresses. IPv4-mapped and NAT64
//     forms count as the IPv4 address they carry.
//   - loopback (127.0.0.0/8, ::1): only for a server configured on a
//     loopback URL ([mcpgate.IsLoopbackHost]), which the person chose.
//   - private (RFC 1918, CGNAT 100.64.0.0/10, fc00::/7, fec0::/10): only
//     for a server whose config says allowPrivateNetwork. A server URL that
//     is itself a private address does not imply it: its authorization
//     server could then send the sign-in anywhere in those ranges.
//   - public: always.
//
// A refusal is a [*RefusedError] (errors.Is(err, [ErrRefused])) that says
// what was refused, why, and which setting would allow it. It happens
// before anything is sent.
//
// # Scopes
//
// Which server a request is for travels on its context as a [Scope]
// ([WithScope], [ScopeOf]); a request without one gets the strictest
// rules (public addresses only). The manager puts its server's scope on
// every MCP request ([Scoped]), the oauth client on every discovery,
// registration, token and revocation request made for a server.
// Redirects keep the context, so a redirect target is dialled, and
// checked, like any other address.
//
// # The transport
//
// [Transport] is an http.RoundTripper. Its dialer resolves the name
// through [Options].Resolver, checks every address, and dials the checked
// addresses themselves, never the name again. It keeps one connection
// pool per set of rules, so a connection made for a server allowed a
// private address is never reused for one that is not. [Options].Strict is
// the policy of a gateway shared by tenants: what a server's config allows
// counts for nothing, only the operator's [Options].Allow ranges.
//
// # Proxies and certificates
//
// HTTPS_PROXY, HTTP_PROXY and NO_PROXY mean what they mean to any Go
// program (net/http's ProxyFromEnvironment), read through
// [Options].Getenv. The proxy is the operator's choice and is dialled
// without the rules, wherever it is. Through a proxy the proxy resolves
// the name, so mcpgate checks only what the URL says by itself: a literal
// address, a metadata service's name; the proxy's own rules do the rest.
// SSL_CERT_FILE and SSL_CERT_DIR add certificate authorities (a company's
// TLS-inspecting proxy, an internal CA) to the system's.
//
// # Example
//
//	tr, err := netpolicy.New(nil) // the process's environment
//	if err != nil {
//		return err // SSL_CERT_FILE is set but unreadable
//	}
//	defer tr.CloseIdleConnections()
//	client := &http.Client{Transport: tr}
//	ctx = netpolicy.WithScope(ctx, netpolicy.ScopeOf(cfg))
//	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, metadataURL, nil)
//	resp, err := client.Do(req) // errors.Is(err, netpolicy.ErrRefused) for 10.1.2.3
package netpolicy
