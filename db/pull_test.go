package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestClaimParksPollDeliveries: a claim never leases a poll endpoint's
// deliveries — it parks them, out of every later claim — while it leases a
// push endpoint's beside them; the parked rows are still served to a pull,
// and a claim that parks a row just served leaves its pull position alone.
func TestClaimParksPollDeliveries(t *testing.T) {
	t.Parallel()
	claimPaths(t, func(t *testing.T, store *db.DB, _ string, _ bool) {
		ctx := context.Background()
		poll, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{Type: db.EndpointPoll})
		push, _ := dbtest.Endpoint(t, store, nil)
		require.Equal(t, db.EndpointPoll, poll.Type)
		require.Empty(t, poll.URL)
		const key = "P1"
		q := hookrelay.QueueFor(key, hookrelay.DefaultQueues)
		for range 3 {
			dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID, push.ID}, OrderingKey: key})
		}
		// The first is served before any claim has seen it.
		served, err := store.DeliveryPull(ctx, poll.ID, db.PullPosition{}, 1)
		require.NoError(t, err)
		require.Len(t, served, 1)

		got := claimAll(t, store, q, 7)
		require.Len(t, got, 1, "only the push endpoint's head")
		require.Equal(t, push.ID, got[0].EndpointID)
		require.Empty(t, claimAll(t, store, q, 8), "the poll rows are parked, out of the claim")
		counts, err := dbtest.DeliveryQueueCounts(ctx, store)
		require.NoError(t, err)
		var parked int64
		for _, c := range counts {
			parked += c.Parked
		}
		require.EqualValues(t, 3+2, parked, "three poll rows and the push chain's two")

		// Served after the first, not before: its position survived the park.
		rest, err := store.DeliveryPull(ctx, poll.ID, served[0].At, 10)
		require.NoError(t, err)
		require.Len(t, rest, 2)
		require.Greater(t, rest[0].ID, served[0].ID)
		n, err := store.DeliveryPullAck(ctx, poll.ID, rest[1].At)
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
	})
}

// TestPullServesLateCommitsAfterCursor: a delivery stored with a smaller id
// than rows already served (a dead letter retried under its own id) is not
// skipped by the cursor nor acknowledged by it: the next pull serves it.
func TestPullServesLateCommitsAfterCursor(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	poll, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{Type: db.EndpointPoll})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID}, OrderingKey: "A"})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID}, OrderingKey: "B"})
	// Both are served and the first acknowledged; the second becomes a dead
	// letter (retention), C is stored, then the dead letter is retried: it
	// comes back under its old id, below C's and the cursor's.
	got, err := store.DeliveryPull(ctx, poll.ID, db.PullPosition{}, 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	_, err = store.DeliveryPullAck(ctx, poll.ID, got[0].At)
	require.NoError(t, err)
	n, err := store.DeliveryPullExpire(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the one not acknowledged")
	dead, err := dbtest.DeadLetterCountForEndpoint(ctx, store, poll.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, dead)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID}, OrderingKey: "C"})
	retried, err := store.DeadLetterRetry(ctx, nil, db.DeadLetterFilter{EndpointID: poll.ID})
	require.NoError(t, err)
	require.EqualValues(t, 1, retried)

	// After the cursor of the acknowledged first: B (retried, old id), C.
	next, err := store.DeliveryPull(ctx, poll.ID, got[0].At, 10)
	require.NoError(t, err)
	require.Len(t, next, 2)
	require.Less(t, next[0].ID, next[1].ID)
	require.Equal(t, "B", next[0].OrderingKey)
	require.Equal(t, "C", next[1].OrderingKey)
}

// TestPullStatementsUseTheirIndexes: with generic plans, a pull and the lag
// read the endpoint's rows from deliveries_endpoint_idx (never the primary
// key's whole range), and an acknowledgement the served rows from
// deliveries_pull_idx, whatever the other endpoints hold.
func TestPullStatementsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url+"&options=-c%20enable_seqscan%3Doff%20-c%20plan_cache_mode%3Dforce_generic_plan",
		db.Config{MaxConns: 2})
	poll, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{Type: db.EndpointPoll})
	push, _ := dbtest.Endpoint(t, store, nil)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	// The push endpoint's rows first and many, the poll endpoint's after.
	_, err = conn.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT 0, $1, 'k' || g, g, now() FROM generate_series(1, 20000) g`, push.ID)
	require.NoError(t, err)
	for range 3 {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID}})
	}
	_, err = conn.Exec(ctx, "ANALYZE deliveries")
	require.NoError(t, err)
	scans := func(index string) int64 {
		var n int64
		_, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(ctx, `SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = $1`, index).Scan(&n))
		return n
	}
	endpointBefore, pullBefore := scans("deliveries_endpoint_idx"), scans("deliveries_pull_idx")

	got, err := store.DeliveryPull(ctx, poll.ID, db.PullPosition{}, 10)
	require.NoError(t, err)
	require.Len(t, got, 3)
	lags, err := store.DeliveryPullLag(ctx, []int64{poll.ID}, 100)
	require.NoError(t, err)
	require.EqualValues(t, 3, lags[0].Pending)
	n, err := store.DeliveryPullAck(ctx, poll.ID, got[2].At)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	store.Close() // flushes the backends' index statistics
	testenv.Eventually(t, 10*time.Second, "the index scans counted", func() bool {
		return scans("deliveries_endpoint_idx")-endpointBefore >= 3 && scans("deliveries_pull_idx")-pullBefore >= 1
	})
}
