package hookrelay

import (
	"net/netip"
)

// blockedPrefixes are the address ranges an endpoint may not reach unless
// private targets are allowed: loopback, private, link-local (which holds the
// cloud metadata address 169.254.169.254), CGNAT, unspecified, multicast,
// benchmarking/documentation ranges and their IPv6 counterparts.
var blockedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32",
		"fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// TargetAllowed reports whether a merchant endpoint may be reached at ip when
// private targets are not allowed. IPv4-mapped IPv6 addresses are judged as
// the IPv4 address they carry.
func TargetAllowed(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	ip = ip.Unmap()
	if ip.Zone() != "" {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
