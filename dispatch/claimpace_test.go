package dispatch

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// The pacing of a claim loop under a latency budget, on a clock of the
// test's own: at a low rate the next claim waits for the share or for half
// a batch of announced rows; at a high rate (full claims, or half a batch
// announced) it does not wait; without a budget there is no pacing.
func TestClaimPace(t *testing.T) {
	t.Parallel()
	const share, batch = 20 * time.Millisecond, 50
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	t.Run("a partial claim waits for the share", func(t *testing.T) {
		p := newClaimPace(share, batch)
		require.True(t, p.on())
		require.Equal(t, share, p.claimed(t0, 3, batch, 5*time.Millisecond))
		// A few rows announced: the deadline stays the claim's plus the share.
		require.Equal(t, 19*time.Millisecond, p.woken(ms(1), 2))
		require.Equal(t, 10*time.Millisecond, p.woken(ms(10), 10))
	})
	t.Run("an empty claim waits for the first announced row's share", func(t *testing.T) {
		p := newClaimPace(share, batch)
		require.Equal(t, 200*time.Millisecond, p.claimed(t0, 0, batch, 200*time.Millisecond))
		require.Equal(t, share, p.woken(ms(100), 1))
		// Later rows do not push the deadline back.
		require.Equal(t, 15*time.Millisecond, p.woken(ms(105), 5))
		require.Equal(t, time.Duration(0), p.woken(ms(121), 6))
	})
	t.Run("half a batch announced claims at once", func(t *testing.T) {
		p := newClaimPace(share, batch)
		p.claimed(t0, 0, batch, 200*time.Millisecond)
		require.Equal(t, share, p.woken(ms(1), 24))
		require.Equal(t, time.Duration(0), p.woken(ms(2), 25))
	})
	t.Run("a full claim claims again at once", func(t *testing.T) {
		p := newClaimPace(share, batch)
		require.Equal(t, time.Duration(0), p.claimed(t0, batch, batch, 5*time.Millisecond))
		// A claim limited by free delivery slots (n < batch) that was filled
		// does not wait either.
		require.Equal(t, time.Duration(0), p.claimed(t0, 7, 7, 5*time.Millisecond))
	})
	t.Run("each claim starts a new wait", func(t *testing.T) {
		p := newClaimPace(share, batch)
		p.claimed(t0, 0, batch, 200*time.Millisecond)
		require.Equal(t, share, p.woken(ms(1), 1))
		require.Equal(t, share, p.claimed(ms(21), 1, batch, 5*time.Millisecond))
		require.Equal(t, 10*time.Millisecond, p.woken(ms(31), 1))
	})
	t.Run("no budget, no pacing", func(t *testing.T) {
		require.False(t, newClaimPace(0, batch).on())
		d := New(testLogger(t), testConfig(), nil, nil, nil)
		require.Zero(t, d.claimShare())
		require.Equal(t, DefaultAckInterval, max(d.cfg.AckInterval, d.ackShare()))
		cfg := testConfig()
		cfg.LatencyBudget = 40 * time.Millisecond
		d = New(testLogger(t), cfg, nil, nil, nil)
		require.Equal(t, share, d.claimShare())
		require.Equal(t, share, max(d.cfg.AckInterval, d.ackShare()))
	})
}

// TestBudgetWakesForRetriesAndSuccessors: under a latency budget a claim
// loop that found nothing pauses for five idle polls (here minutes), yet a
// failed head is retried at its quick step and its parked successors follow
// at once: the retry and the promotions wake the loop (wakeWhenDue,
// onAckReport); no poll could have found them within the test's time.
func TestBudgetWakesForRetriesAndSuccessors(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	failed := false
	s.setDecide(func(_ *http.Request, body []byte) (int, http.Header) {
		if string(body) == `{"n":1}` && !failed {
			failed = true
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL})
	const n = 4
	for i := 1; i <= n; i++ {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "B", Queues: 8,
			Payload: []byte(`{"n":` + strconv.Itoa(i) + `}`)})
	}
	cfg := testConfig()
	cfg.LatencyBudget = 40 * time.Millisecond
	cfg.IdlePoll, cfg.BusyPoll = time.Minute, time.Minute
	cfg.Listen = true
	cfg.QuickRetries = []time.Duration{100 * time.Millisecond}
	d, _ := runDispatcher(t, store, cfg)
	testenv.Eventually(t, 10*time.Second, "the LISTEN session", func() bool { return d.idlePoll() == 5*time.Minute })

	testenv.Eventually(t, 20*time.Second, "the whole chain", func() bool { return len(s.requests()) == n+1 })
	reqs := s.requests()
	require.Equal(t, http.StatusInternalServerError, reqs[0].Status)
	for i := 1; i <= n; i++ {
		require.Equal(t, `{"n":`+strconv.Itoa(i)+`}`, string(reqs[i].Body), "in order")
		require.Equal(t, http.StatusOK, reqs[i].Status)
	}
}
