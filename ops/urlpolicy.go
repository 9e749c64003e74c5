package ops

import (
	"context"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
)

// MaxURL bounds an endpoint's or ops endpoint's URL.
const MaxURL = 2048

func invalidf(format string, args ...any) error {
	return hookrelay.Errorf(hookrelay.EINVALID, format, args...)
}

// allowPrivateHint ends the refusals of a URL the private-target policy
// turns away with the setting that lifts it, so a reader trying hookrelay
// with a local receiver knows what to set (and that it is not for
// production).
const allowPrivateHint = "; to allow it (tests and demos), start hookrelay with HOOKRELAY_ALLOW_PRIVATE_TARGETS=true"

// checkURL checks an endpoint's or ops endpoint's URL by the service's
// policy (Config) and returns it normalised: absolute http(s) (https only
// with RequireHTTPS), no credentials, and unless private targets are
// allowed, every address the host resolves to (or the literal address it
// is, in any notation such as 2130706433 or 0x7f.1) must pass
// hookrelay.TargetAllowed. The dispatcher checks the address again when it
// connects (DNS may change). Its errors are EINVALID.
func (s *Service) checkURL(ctx context.Context, raw string) (string, error) {
	if raw == "" {
		return "", invalidf("url is required")
	}
	if len(raw) > MaxURL {
		return "", invalidf("url longer than %d characters", MaxURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", invalidf("url is not a valid URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if s.cfg.RequireHTTPS {
			return "", invalidf("url must use https")
		}
	default:
		return "", invalidf("url must be an http or https URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", invalidf("url has no host")
	}
	if u.User != nil {
		return "", invalidf("url must not contain credentials")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", invalidf("url has an invalid port")
		}
	}
	if s.cfg.AllowPrivateTargets {
		return u.String(), nil
	}
	host := u.Hostname()
	if ip, ok := parseLooseIPv4(host); ok {
		if !hookrelay.TargetAllowed(ip) {
			return "", invalidf("url points to a private, loopback or link-local address (%s)"+allowPrivateHint, ip)
		}
		return u.String(), nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !hookrelay.TargetAllowed(ip.Unmap()) {
			return "", invalidf("url points to a private, loopback or link-local address (%s)"+allowPrivateHint, ip)
		}
		return u.String(), nil
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return "", invalidf("url points to localhost" + allowPrivateHint)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := s.cfg.Resolver.LookupNetIP(rctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return "", invalidf("url host %q does not resolve"+allowPrivateHint+", which skips this check", host)
	}
	for _, a := range addrs {
		if !hookrelay.TargetAllowed(a.Unmap()) {
			return "", invalidf("url host %q resolves to a private, loopback or link-local address (%s)"+allowPrivateHint, host, a.Unmap())
		}
	}
	return u.String(), nil
}

// parseLooseIPv4 parses the IPv4 notations inet_aton accepts (and so some
// HTTP clients and resolvers): 1 to 4 dot-separated parts, each decimal,
// 0x-hex or 0-octal, the last part filling the remaining bytes
// ("2130706433", "0x7f.1", "0177.0.0.01").
func parseLooseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 || host == "" {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base, digits := 10, p
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i := 0; i < last; i++ {
		if vals[i] > 255 {
			return netip.Addr{}, false
		}
		n |= vals[i] << (8 * (3 - i))
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
