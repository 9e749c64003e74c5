package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestRoutesRefreshPeriod: Run reloads every TTL without a LISTEN session,
// every db.ListenedRefresh while one follows the announcements, and every
// TTL again once a load failed (an announced change may not be loaded) or
// the session is lost; a snapshot reloaded between two ticks is due at the
// tick nearest to its period.
func TestRoutesRefreshPeriod(t *testing.T) {
	t.Parallel()
	c := NewRoutes(nil, time.Second)
	require.Equal(t, time.Second, c.every())
	c.SetListening(true)
	require.Equal(t, db.ListenedRefresh, c.every())
	c.failed.Store(true)
	require.Equal(t, time.Second, c.every(), "after a failed load")
	c.failed.Store(false)
	require.Equal(t, db.ListenedRefresh, c.every())
	c.SetListening(false)
	require.Equal(t, time.Second, c.every(), "session lost")

	ttl, period := time.Second, 30*time.Second
	require.True(t, refreshDue(time.Second, ttl, ttl), "without LISTEN: every tick")
	require.True(t, refreshDue(990*time.Millisecond, ttl, ttl), "a tick a little early")
	require.False(t, refreshDue(400*time.Millisecond, ttl, ttl), "reloaded by an announcement since the last tick")
	require.False(t, refreshDue(29*time.Second, ttl, period))
	require.True(t, refreshDue(29600*time.Millisecond, ttl, period), "the tick nearest to the period")
}
