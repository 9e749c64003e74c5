package dispatch

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestEndpointJoinsTheFullSetAtItsLastSlot: an endpoint is named to the
// claim as full once a delivery takes its last in-flight slot, and no
// longer once one comes back, whether by a release or by a delivery that
// took a slot and then gave it up (rate limit).
func TestEndpointJoinsTheFullSetAtItsLastSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEndpointCache(nil, time.Minute, time.Now, 256, slog.New(slog.DiscardHandler), time.Minute)
	c.mu.Lock()
	st := c.store(db.EndpointConfig{ID: 7, MaxInFlight: 2}, time.Now(), 1)
	limited := c.store(db.EndpointConfig{ID: 8, MaxInFlight: 1, RateLimitPerSec: 1}, time.Now(), 1)
	c.mu.Unlock()

	ok, _, err := st.acquire(ctx, time.Millisecond, time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, c.full.list(maxSkipped), "one slot of two taken")
	ok, _, err = st.acquire(ctx, time.Millisecond, time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []int64{7}, c.full.list(maxSkipped), "both slots taken")
	ok, _, err = st.acquire(ctx, time.Millisecond, time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "a third steps aside")
	st.release()
	require.Nil(t, c.full.list(maxSkipped), "a slot came back")
	st.release()

	// The limiter's burst is 1: the first delivery goes, the second takes
	// the slot, waits too long for a token and gives the slot back.
	ok, _, err = limited.acquire(ctx, time.Millisecond, time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []int64{8}, c.full.list(maxSkipped))
	limited.release()
	require.Nil(t, c.full.list(maxSkipped))
	ok, _, err = limited.acquire(ctx, time.Millisecond, time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok, "no token within the wait")
	require.Nil(t, c.full.list(maxSkipped), "the slot taken for the wait was given back")

	// The set gives at most n.
	c.full.set(1, true)
	c.full.set(2, true)
	c.full.set(3, true)
	require.Len(t, c.full.list(2), 2)
}
