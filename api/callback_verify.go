package api

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// The carrier-level refusals of a callback. Each is a typed error with a
// stable code and a message of its own, so that what refused a callback can
// be told apart (errors.Is): a disabled carrier, an address outside its
// list (both 403), or a signature (401, hookrelay.EBADSIGNATURE wrapping
// hookrelay.ErrSignatureMissing, ErrSignatureInvalid, ErrTimestampMissing
// or ErrTimestampStale).
var (
	errCarrierDisabled = hookrelay.WithReason(hookrelay.Errorf(hookrelay.EFORBIDDEN,
		"carrier disabled: its callbacks are refused until an operator enables it again"), hookrelay.ReasonDisabled)
	// errAddressNotAllowed is the cause of the refusal of a callback from
	// an address outside the carrier's allowed_cidrs.
	errAddressNotAllowed = errors.New("source address not allowed")
)

// admitCarrier refuses the callbacks of a disabled carrier, and those from
// an address outside the carrier's allowed source addresses. It runs before
// the body is read.
func (s *Server) admitCarrier(req *http.Request, carrier *db.Carrier) error {
	if carrier.Disabled() {
		return errCarrierDisabled
	}
	if len(carrier.AllowedCIDRs) == 0 {
		return nil
	}
	addr := s.clientIP(req)
	for _, p := range carrier.AllowedCIDRs {
		if p.Contains(addr) {
			return nil
		}
	}
	shown := "an unknown address"
	if addr.IsValid() {
		shown = addr.String()
	}
	return hookrelay.WithReason(hookrelay.WrapError(hookrelay.EFORBIDDEN,
		"source address "+shown+" is not in this carrier's allowed addresses (allowed_cidrs)", errAddressNotAllowed),
		hookrelay.ReasonAddress)
}

// verifyCallback checks the signature of a callback whose body is body
// against its carrier's declaration (none: nothing to check).
func verifyCallback(req *http.Request, carrier *db.Carrier, body []byte) error {
	if !carrier.Signature.Signed() {
		return nil
	}
	return carrier.Signature.Verify(req.Header, req.URL.RawQuery, body, time.Now())
}

// clientIP is the address a request came from: the TCP peer, unless the
// peer is one of the trusted proxies (Config.TrustedProxies), in which case
// X-Forwarded-For is read from its right end and the first address that is
// not a trusted proxy is the client's (every hop to its right was added by
// a proxy we trust; anything to its left the client could have written).
// The zero Addr when it cannot be told.
func (s *Server) clientIP(req *http.Request) netip.Addr {
	peer, err := netip.ParseAddrPort(req.RemoteAddr)
	var addr netip.Addr
	if err == nil {
		addr = peer.Addr().Unmap()
	} else if a, err := netip.ParseAddr(req.RemoteAddr); err == nil {
		addr = a.Unmap()
	}
	if !addr.IsValid() || !trusted(s.cfg.TrustedProxies, addr) {
		return addr
	}
	hops := req.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				// Not an address: nothing to its left can be trusted.
				return addr
			}
			addr = hop.Unmap()
			if !trusted(s.cfg.TrustedProxies, addr) {
				return addr
			}
		}
	}
	return addr
}

func trusted(proxies []netip.Prefix, a netip.Addr) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
