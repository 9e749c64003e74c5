package hookrelay

import (
	"net/netip"
)

func mustPrefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// blockedPrefixes are the address ranges an endpoint may not reach unless
// private targets are allowed: loopback, private, link-local (which holds the
// cloud metadata address 169.254.169.254), CGNAT, unspecified, multicast,
// benchmarking/documentation ranges and their IPv6 counterparts.
var blockedPrefixes = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	"::/128", "::1/128", "100::/64", "2001:db8::/32",
	"fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
)

// The IPv6 ranges whose addresses carry an IPv4 address that a translator,
// tunnel or dual stack may end up connecting to.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")           // RFC 4291, deprecated
	ipv4SIIT       = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 IPv4-translated
	sixToFour      = netip.MustParsePrefix("2002::/16")       // RFC 3056: bits 16-47
	teredo         = netip.MustParsePrefix("2001::/32")       // RFC 4380: server bits 32-63, client ^ 0xffffffff in bits 96-127
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")  // RFC 8215: the operator picks the prefix length
)

// nat64Offsets are the byte positions of the four IPv4 bytes under the
// RFC 6052 prefix lengths that fit inside a /48 (48, 56, 64 and 96); byte 8
// (bits 64-71) is always skipped. A local-use NAT64 address says nothing
// about which length its translator uses, so every layout is judged.
var nat64Offsets = [][4]int{
	{6, 7, 9, 10},    // /48
	{7, 9, 10, 11},   // /56
	{9, 10, 11, 12},  // /64
	{12, 13, 14, 15}, // /96
}

// TargetAllowed reports whether a merchant endpoint may be reached at ip when
// private targets are not allowed. An IPv6 address that embeds an IPv4
// address (mapped, compatible, SIIT, 6to4, Teredo, NAT64) is judged by every
// IPv4 address it carries, since a dual stack, tunnel or translator on the
// way delivers the connection there; it is allowed only when each of them
// is. The one rule serves registration, PATCH and the dispatcher's dial.
func TargetAllowed(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if blocked(ip) {
		return false
	}
	if ip.Is4() {
		return true
	}
	for _, v4 := range embeddedIPv4(ip) {
		if blocked(v4) {
			return false
		}
	}
	return true
}

func blocked(ip netip.Addr) bool {
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries under the
// standard embeddings (none for an address outside them, or for an IPv4
// address). An IPv4-mapped address yields the address it maps.
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if ip.Is4() || !ip.IsValid() {
		return nil
	}
	b := ip.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	switch {
	case ip.Is4In6(), ipv4Compatible.Contains(ip), ipv4SIIT.Contains(ip), nat64WellKnown.Contains(ip):
		return []netip.Addr{v4(12, 13, 14, 15)}
	case sixToFour.Contains(ip):
		return []netip.Addr{v4(2, 3, 4, 5)}
	case teredo.Contains(ip):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{v4(4, 5, 6, 7), client}
	case nat64Local.Contains(ip):
		out := make([]netip.Addr, len(nat64Offsets))
		for i, o := range nat64Offsets {
			out[i] = v4(o[0], o[1], o[2], o[3])
		}
		return out
	}
	return nil
}
