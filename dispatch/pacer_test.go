package dispatch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestPacerTokens: the bucket starts full, never holds more than a batch,
// refills at the rate, and takes back what a claim did not use.
func TestPacerTokens(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	p := newPacer(100, 50, clock.Now)
	ctx := t.Context()
	require.True(t, p.take(ctx, 50), "a full bucket serves a batch at once")
	p.giveBack(20)
	require.True(t, p.take(ctx, 20), "what a claim gave back is there for the next")

	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	require.False(t, p.take(short, 1), "an empty bucket makes the claim wait (the clock has not moved)")

	clock.advance(100 * time.Millisecond) // 10 tokens
	require.True(t, p.take(ctx, 10))
	clock.advance(time.Hour)
	p.giveBack(1000)
	require.True(t, p.take(ctx, 50))
	short2, cancel2 := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel2()
	require.False(t, p.take(short2, 1), "an hour idle and a large give-back still leave one batch at most")
	require.True(t, p.take(ctx, 0), "taking nothing never waits")
}

// TestMaxRateCapsClaims: with MaxRate set, a backlog is claimed no faster
// than the cap (one batch from the full bucket, then the rate).
func TestMaxRateCapsClaims(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, MaxInFlight: 100})
	const n = 150
	for i := range n {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprintf("R%d", i), Queues: 8})
	}
	cfg := testConfig()
	cfg.MaxRate = 200
	cfg.BatchSize = 25
	start := time.Now()
	runDispatcher(t, store, cfg)
	testenv.Eventually(t, 30*time.Second, "all deliveries", func() bool { return len(s.requests()) >= n })
	// 25 at once from the full bucket, then 125 at 200/s: at least 625 ms
	// (without the cap a loopback sink takes all 150 in well under 200 ms).
	require.GreaterOrEqual(t, time.Since(start), 600*time.Millisecond)
	// From the first request to the last: 625 ms less however much later the
	// first batch's requests arrive than the last one's (they open the
	// connections; under the parallel test packages that was 78 ms once).
	r := s.requests()
	span := r[n-1].At.Sub(r[0].At)
	require.GreaterOrEqual(t, span, 450*time.Millisecond, "150 deliveries at 200/s after a first batch of 25")
}
