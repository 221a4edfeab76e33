package netpolicy

import (
	"net/netip"
	"strings"
)

// class is what an address is, as far as the policy cares.
type class int

const (
	public   class = iota
	loopback       // this machine: 127.0.0.0/8, ::1
	private        // RFC 1918, CGNAT 100.64.0.0/10, fc00::/7, fec0::/10
	// The classes below are never dialled, whatever the scope.
	linkLocal   // 169.254.0.0/16, fe80::/10: where cloud metadata lives
	metadata    // the cloud metadata services' own addresses
	unspecified // 0.0.0.0/8 and ::, which reach this machine on most systems
	special     // multicast, broadcast, reserved, IPv4-compatible IPv6
)

// never reports whether no scope or setting allows the class.
func (c class) never() bool { return c >= linkLocal }

// reason says in words what the class is, for a refusal.
func (c class) reason() string {
	switch c {
	case loopback:
		return "a loopback address (this machine)"
	case private:
		return "a private network address"
	case linkLocal:
		return "a link-local address, where cloud metadata services answer"
	case metadata:
		return "a cloud metadata service's address"
	case unspecified:
		return "an unspecified address, which reaches this machine"
	case special:
		return "a multicast, broadcast or reserved address"
	}
	return "a public address"
}

// Metadata services that do not live in link-local space: AWS's IPv6
// endpoint sits in fc00::/7 and Alibaba Cloud's in CGNAT space, ranges a
// private-network setting would otherwise open. 169.254.169.254 (AWS,
// GCP, Azure, Oracle, DigitalOcean, OpenStack) is listed for its name in
// refusals; it is link-local anyway.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"), // AWS ECS task metadata
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
}

// metadataNames are host names of metadata services, refused by name:
// through a proxy mcpgate never sees what they resolve to.
var metadataNames = []string{"metadata.google.internal", "metadata.goog", "metadata"}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal   = netip.MustParsePrefix("fec0::/10")
	reserved4   = netip.MustParsePrefix("240.0.0.0/4") // with 255.255.255.255
	compatible  = netip.MustParsePrefix("::/96")       // deprecated IPv4-compatible IPv6
	// nat64 (RFC 6052) carries an IPv4 address a NAT64 gateway dials for
	// us: 64:ff9b::a9fe:a9fe is 169.254.169.254 one hop later.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// classify says what a is. IPv4-mapped and NAT64 forms count as the IPv4
// address they carry, so ::ffff:127.0.0.1 is loopback.
func classify(a netip.Addr) class {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		return classify(netip.AddrFrom4([4]byte(b[12:])))
	}
	for _, m := range metadataAddrs {
		if a == m {
			return metadata
		}
	}
	switch {
	case !a.IsValid(), a.IsUnspecified(), thisNetwork.Contains(a):
		return unspecified
	case a.IsLoopback():
		return loopback
	case a.IsLinkLocalUnicast():
		return linkLocal
	case a.IsMulticast(), reserved4.Contains(a), compatible.Contains(a):
		return special
	case a.IsPrivate(), cgnat.Contains(a), siteLocal.Contains(a):
		return private
	}
	return public
}

// nameClass is what a host name says by itself, before any resolution:
// localhost is loopback, a metadata service's name is metadata.
func nameClass(host string) (class, bool) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return loopback, true
	}
	for _, n := range metadataNames {
		if h == n {
			return metadata, true
		}
	}
	return public, false
}

// PrivateRanges are the private network ranges (RFC 1918, CGNAT
// 100.64.0.0/10, fc00::/7, fec0::/10): what Options.Allow lists for a
// shared gateway whose operator lets servers be on private networks.
// Metadata addresses within them stay refused.
func PrivateRanges() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
		cgnat, netip.MustParsePrefix("fc00::/7"), siteLocal,
	}
}
