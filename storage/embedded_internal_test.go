package storage

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReachableAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[*net.TCPAddr]string{
		{IP: net.IPv4(127, 0, 0, 1), Port: 9000}: "127.0.0.1:9000",
		{IP: net.IPv4zero, Port: 9000}:           "127.0.0.1:9000",
		{IP: net.IPv6unspecified, Port: 9000}:    "[::1]:9000",
		{IP: net.IPv6loopback, Port: 9000}:       "[::1]:9000",
	} {
		require.Equal(t, want, reachableAddr(addr))
	}
}
