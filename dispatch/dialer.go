package dispatch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/hookrelay/hookrelay"
)

// errTargetRefused marks a connection refused by the SSRF policy.
var errTargetRefused = hookrelay.Errorf(hookrelay.EFORBIDDEN, "endpoint address not allowed")

// newDialer returns the dialer of the delivery client. Unless allowPrivate,
// its Control hook refuses any connection whose actual remote IP is not a
// public address (hookrelay.TargetAllowed): the check runs on the address
// being connected to, after DNS resolution, so a name that resolves to a
// public address at registration and to a private one later (DNS rebinding)
// is still refused.
func newDialer(allowPrivate bool, resolver *net.Resolver) *net.Dialer {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Resolver: resolver}
	if !allowPrivate {
		d.Control = controlTarget
	}
	return d
}

func controlTarget(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, errTargetRefused)
	}
	if !hookrelay.TargetAllowed(ap.Addr()) {
		return fmt.Errorf("dial %s (%s): %w", address, network, errTargetRefused)
	}
	return nil
}

// dialFunc is the DialContext of a transport.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
