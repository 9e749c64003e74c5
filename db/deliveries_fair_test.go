package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// keysInQueue returns n ordering keys with prefix that hash onto queue q.
func keysInQueue(prefix string, q, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if hookrelay.QueueFor(k, hookrelay.DefaultQueues) == q {
			keys = append(keys, k)
		}
	}
	return keys
}

// storeMany stores one message per entry of keys, in that order, each with a
// delivery to endpointID, in batches as ingest does.
func storeMany(t *testing.T, store *db.DB, carrierID, endpointID int64, keys []string) {
	t.Helper()
	for start := 0; start < len(keys); start += 500 {
		var ms []db.NewMessage
		for _, k := range keys[start:min(start+500, len(keys))] {
			p := fmt.Appendf(nil, `{"tracking_no":%q}`, k)
			ms = append(ms, db.NewMessage{CarrierID: carrierID, EventType: "delivered", OrderingKey: k,
				Queue: hookrelay.QueueFor(k, hookrelay.DefaultQueues), Payload: p, PayloadSize: len(p),
				PayloadSHA256: make([]byte, 32), EndpointIDs: []int64{endpointID}})
		}
		_, err := store.MessageInsertMany(context.Background(), ms)
		require.NoError(t, err)
	}
}

// claimPaths runs test once with each way the claim takes a queue's rows:
// the walk (every queue walked) and the one scan of a small queue (every
// queue small enough, whatever its backlog).
func claimPaths(t *testing.T, test func(t *testing.T, store *db.DB, url string, scan bool)) {
	for _, c := range []struct {
		name string
		peek int32
	}{{"walk", 0}, {"scan", 1 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := dbtest.NewURL(t)
			store := dbtest.Open(t, url, db.Config{})
			db.SetClaimPeek(store, c.peek)
			test(t, store, url, c.peek > 0)
		})
	}
}

// TestClaimSharesAQueueAcrossEndpoints: endpoint A has 10,000 due rows in a
// logical queue, endpoint B then 10. One claim of 50 gives B all of its 10
// (A's backlog does not stand in front of them) and A its share; every
// row leased is the head of its (endpoint, key) chain, and the rows leased
// after acknowledging follow each chain in order.
func TestClaimSharesAQueueAcrossEndpoints(t *testing.T) {
	t.Parallel()
	claimPaths(t, testClaimSharesAQueueAcrossEndpoints)
}

func testClaimSharesAQueueAcrossEndpoints(t *testing.T, store *db.DB, _ string, scan bool) {
	ctx := context.Background()
	carrier, _ := dbtest.Carrier(t, store, nil)
	epA, _ := dbtest.Endpoint(t, store, nil)
	epB, _ := dbtest.Endpoint(t, store, nil)
	const q = 7
	aKeys := keysInQueue("A-", q, 100)
	var backlog []string
	for i := range 10_000 {
		backlog = append(backlog, aKeys[i%len(aKeys)])
	}
	storeMany(t, store, carrier.ID, epA.ID, backlog)
	storeMany(t, store, carrier.ID, epB.ID, keysInQueue("B-", q, 10))

	last := map[string]int64{} // endpoint/key -> id of the last row leased
	claim := func(token int64) map[int64]int {
		got, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 50, 50, 1, token, time.Minute)
		require.NoError(t, err)
		per := map[int64]int{}
		var results []db.DeliveryResult
		for _, g := range got {
			per[g.EndpointID]++
			chain := fmt.Sprint(g.EndpointID, "/", g.OrderingKey)
			require.Greater(t, g.ID, last[chain], "chain %s out of order", chain)
			last[chain] = g.ID
			results = append(results, db.ResultFor(g))
			results[len(results)-1].Kind, results[len(results)-1].Outcome, results[len(results)-1].Status = db.AckSuccess, "success", 200
		}
		ack(t, store, results...)
		return per
	}

	per := claim(1)
	require.Equal(t, 10, per[epB.ID], "B's rows wait behind A's backlog")
	// The walk gives each of the two due endpoints at most half of the
	// queue's 50 and leaves what B could not take to the queues after it;
	// the scan deals the queue's 50 round robin, so A also gets the 15 B
	// had no rows for.
	wantA := 25
	if scan {
		wantA = 40
	}
	require.Equal(t, wantA, per[epA.ID], "A's share of a claim of 50 between two endpoints")

	// With B drained, A has the queue to itself again; its chains go on in
	// order (each leased row the next of its key after the one acknowledged).
	per = claim(2)
	require.Zero(t, per[epB.ID])
	require.Equal(t, 50, per[epA.ID])
	for token := int64(3); token < 8; token++ {
		require.Equal(t, 50, claim(token)[epA.ID])
	}
}

// TestClaimStartsAfterTheCursor: with more endpoints due in a queue than a
// claim serves, the queue's cursor says where the walk starts; it wraps
// round past the highest endpoint to the lowest.
func TestClaimStartsAfterTheCursor(t *testing.T) {
	t.Parallel()
	claimPaths(t, testClaimStartsAfterTheCursor)
}

func testClaimStartsAfterTheCursor(t *testing.T, store *db.DB, _ string, _ bool) {
	ctx := context.Background()
	carrier, _ := dbtest.Carrier(t, store, nil)
	const q = 3
	keys := keysInQueue("C-", q, 20)
	var eps []int64
	for i := range 20 {
		ep, _ := dbtest.Endpoint(t, store, nil)
		eps = append(eps, ep.ID)
		storeMany(t, store, carrier.ID, ep.ID, keys[i:i+1])
	}
	endpointsOf := func(got []db.ClaimedDelivery) []int64 {
		var out []int64
		for _, g := range got {
			out = append(out, g.EndpointID)
		}
		return out
	}
	got, _, err := store.DeliveryClaim(ctx, db.ClaimParams{Queues: []int{q}, After: []int64{eps[14]}, PerQueue: 10, Batch: 10, Owner: 1, Token: 1, Lease: time.Minute})
	require.NoError(t, err)
	want := append(append([]int64{}, eps[15:]...), eps[:5]...)
	require.ElementsMatch(t, want, endpointsOf(got))
}

// TestClaimPassesOverSkippedEndpoints: an endpoint the caller names in skip
// (at its max_in_flight) gives no rows and its rows stay as they were (not
// leased, not moved); the other endpoints of the queue get the claim; with
// it alone in the queue the claim is empty, and without skip it is served.
func TestClaimPassesOverSkippedEndpoints(t *testing.T) {
	t.Parallel()
	claimPaths(t, testClaimPassesOverSkippedEndpoints)
}

func testClaimPassesOverSkippedEndpoints(t *testing.T, store *db.DB, url string, _ bool) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	carrier, _ := dbtest.Carrier(t, store, nil)
	slow, _ := dbtest.Endpoint(t, store, nil)
	fast, _ := dbtest.Endpoint(t, store, nil)
	const q = 9
	storeMany(t, store, carrier.ID, slow.ID, keysInQueue("S-", q, 200))
	storeMany(t, store, carrier.ID, fast.ID, keysInQueue("F-", q, 5))

	got, _, err := store.DeliveryClaim(ctx, db.ClaimParams{Queues: []int{q}, Skip: []int64{slow.ID}, PerQueue: 50, Batch: 50, Owner: 1, Token: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 5, "the fast endpoint's rows, and none of the skipped one's")
	for _, g := range got {
		require.Equal(t, fast.ID, g.EndpointID)
	}
	var results []db.DeliveryResult
	for _, g := range got {
		r := db.ResultFor(g)
		r.Kind, r.Outcome, r.Status = db.AckSuccess, "success", 200
		results = append(results, r)
	}
	ack(t, store, results...)

	got, _, err = store.DeliveryClaim(ctx, db.ClaimParams{Queues: []int{q}, Skip: []int64{slow.ID}, PerQueue: 50, Batch: 50, Owner: 1, Token: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, got, "only the skipped endpoint has rows")
	var untouched int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM deliveries
		WHERE endpoint_id = $1 AND leased_until IS NULL AND visible_at <= now()`, slow.ID).Scan(&untouched))
	require.Equal(t, 200, untouched, "the skipped endpoint's rows are neither leased nor moved")

	got, _, err = store.DeliveryClaim(ctx, db.ClaimParams{Queues: []int{q}, PerQueue: 50, Batch: 50, Owner: 1, Token: 3, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 50, "not skipped: served")
}

// TestClaimScansSmallQueuesAndWalksLargeOnes: a queue with fewer rows than
// the claim's bound (32) is taken from one scan, which deals the queue's
// share round robin; one with more is walked, and the walk gives each due
// endpoint at most its part of the share. Endpoint B has 2 due rows, A 20
// (22 in the queue) and then 40 (42): with 10 a queue, the scan gives A the
// 8 B leaves, the walk 5.
func TestClaimScansSmallQueuesAndWalksLargeOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		aRows, wantA int
	}{{20, 8}, {40, 5}} {
		store := dbtest.New(t)
		carrier, _ := dbtest.Carrier(t, store, nil)
		epA, _ := dbtest.Endpoint(t, store, nil)
		epB, _ := dbtest.Endpoint(t, store, nil)
		const q = 5
		storeMany(t, store, carrier.ID, epA.ID, keysInQueue("A-", q, c.aRows))
		storeMany(t, store, carrier.ID, epB.ID, keysInQueue("B-", q, 2))
		got, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 10, 10, 1, 1, time.Minute)
		require.NoError(t, err)
		per := map[int64]int{}
		for _, g := range got {
			per[g.EndpointID]++
		}
		require.Equal(t, 2, per[epB.ID], "A with %d rows", c.aRows)
		require.Equal(t, c.wantA, per[epA.ID], "A with %d rows", c.aRows)
	}
}
