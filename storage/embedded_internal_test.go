package storage

import (
	"net"
	"strings"
	"testing"
	"time"

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

// TestCloseCutsSilentConnections: a connection that never sent a request
// does not hold Close (http.Server.Shutdown alone waits 5 s for it, and
// Close then reported its deadline as an error).
func TestCloseCutsSilentConnections(t *testing.T) {
	t.Parallel()
	e, err := StartEmbedded(t.Context(), nil, "127.0.0.1:0", t.TempDir())
	require.NoError(t, err)
	c, err := net.Dial("tcp", strings.TrimPrefix(e.URL(), "http://"))
	require.NoError(t, err)
	defer c.Close()
	// The server has accepted it (ConnState reported it new).
	require.Eventually(t, func() bool {
		e.idleNewMu.Lock()
		defer e.idleNewMu.Unlock()
		return len(e.idleNew) == 1
	}, 10*time.Second, 5*time.Millisecond, "the connection accepted")
	start := time.Now()
	require.NoError(t, e.Close())
	require.Less(t, time.Since(start), 2*time.Second)
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "the connection was closed by the server")
}
