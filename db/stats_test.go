package db_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestStatSampleCountsTheWindow: a sample counts the callbacks and attempts of
// its window only, the backlog per logical queue, the oldest pending age,
// dead letters and latency percentiles; samples round-trip and are trimmed.
func TestStatSampleCountsTheWindow(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	from, to := now.Add(-20*time.Second), now.Add(-10*time.Second)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := conn.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	// 3 callbacks in the window, 1 before, 1 after.
	for _, at := range []time.Time{from.Add(-time.Second), from, from.Add(time.Second), to.Add(-time.Millisecond), to} {
		exec(`INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
			VALUES ($1, 1, 'k', 0, '\x7b7d', 2, '\x00')`, at)
	}
	// Attempts in the window: 3 successes with e2e 100, 200, 300 ms (+ 10 ms latency) and 1 failure.
	for i, e2e := range []int{100, 200, 300} {
		at := from.Add(time.Duration(i+1) * time.Second)
		exec(`INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome, latency_ms)
			VALUES ($1, $1, $2, 1, 1, $3, 'success', 10)`, i+1, at.Add(-time.Duration(e2e)*time.Millisecond), at)
	}
	exec(`INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome)
		VALUES (9, 9, $1, 1, 1, $1, 'failed')`, from.Add(5*time.Second))
	exec(`INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome)
		VALUES (10, 10, $1, 1, 1, $1, 'failed')`, to.Add(time.Second)) // outside
	// Backlog: 2 on queue 3, 1 on queue 7; the oldest received a minute ago.
	for _, d := range []struct {
		q  int
		at time.Time
	}{{3, now.Add(-time.Minute)}, {3, now}, {7, now}} {
		exec(`INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at) VALUES ($1, 1, 'k', 1, $2)`, d.q, d.at)
	}
	exec(`INSERT INTO dead_letters (id, message_id, message_received_at, endpoint_id, merchant_id, carrier_id, queue, ordering_key, attempts)
		VALUES (1, 1, now(), 1, 1, 1, 0, 'k', 8)`)

	s, err := store.StatSampleTake(ctx, from, to, now, 32)
	require.NoError(t, err)
	require.EqualValues(t, 3, s.Ingested)
	require.GreaterOrEqual(t, s.IngestedTotal, int64(5))
	require.EqualValues(t, 3, s.Delivered)
	require.EqualValues(t, 1, s.Failed)
	require.InDelta(t, 0.25, s.ErrorRate, 1e-9)
	require.InDelta(t, 210, s.E2EP50Ms, 1)
	require.InDelta(t, 308, s.E2EP99Ms, 1)
	require.EqualValues(t, 3, s.BacklogTotal)
	require.Len(t, s.BacklogPerQueue, 32)
	require.EqualValues(t, 2, s.BacklogPerQueue[3])
	require.EqualValues(t, 1, s.BacklogPerQueue[7])
	require.InDelta(t, 60, s.OldestPendingAgeSeconds, 0.01)
	require.EqualValues(t, 1, s.DeadLettersTotal)
	require.InDelta(t, 0.3, s.Rate(s.Ingested), 1e-9)

	old := s
	old.SampledAt = now.Add(-3 * time.Hour)
	require.NoError(t, store.StatSampleInsert(ctx, old))
	require.NoError(t, store.StatSampleInsert(ctx, s))
	got, err := store.StatSamplesSince(ctx, now.Add(-time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.True(t, got[0].SampledAt.Equal(now))
	require.Equal(t, s.BacklogPerQueue, got[0].BacklogPerQueue)
	n, err := store.StatSamplesTrim(ctx, now.Add(-2*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	latest, err := store.StatSampleLatest(ctx)
	require.NoError(t, err)
	require.True(t, latest.SampledAt.Equal(now))
	_, err = store.StatSamplesTrim(ctx, now.Add(time.Hour))
	require.NoError(t, err)
	_, err = store.StatSampleLatest(ctx)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.ErrorCode(err))
}

// TestStatSampleEstimatesLargeBacklog: above StatExactBacklog the backlog is
// estimated from the statistics and a block sample, within a few percent.
func TestStatSampleEstimatesLargeBacklog(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	now := time.Now().UTC()
	n := db.StatExactBacklog + 30_000
	// One implicit transaction: its end flushes the statistics at once.
	_, err = conn.Exec(t.Context(), `SELECT pg_stat_force_next_flush();
		INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT CASE WHEN g % 4 = 0 THEN 1 ELSE 2 END, 1, 'k' || g, g, now() - interval '1 minute' FROM generate_series(1, `+itoa(n)+`) g`)
	require.NoError(t, err)
	s, err := store.StatSampleTake(t.Context(), now.Add(-time.Minute), now, now, 4)
	require.NoError(t, err)
	require.True(t, s.BacklogEstimated)
	require.EqualValues(t, n, s.BacklogTotal)
	require.InDelta(t, float64(n)/4, float64(s.BacklogPerQueue[1]), float64(n)/20)
	require.InDelta(t, float64(n)*3/4, float64(s.BacklogPerQueue[2]), float64(n)/20)
	require.InDelta(t, 60, s.OldestPendingAgeSeconds, 5)
}

func itoa(n int) string { return strconv.Itoa(n) }
