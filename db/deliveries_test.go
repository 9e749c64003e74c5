package db_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

var testPolicy = db.HealthPolicy{Threshold: 3, BaseBackoff: time.Minute, MaxBackoff: 10 * time.Minute, DisableAfter: 5 * 24 * time.Hour}

func claimAll(t *testing.T, store *db.DB, queue int, token int64) []db.ClaimedDelivery {
	t.Helper()
	got, err := dbtest.DeliveryClaim(context.Background(), store, []int{queue}, 50, 50, 1, token, time.Minute)
	require.NoError(t, err)
	return got
}

func ack(t *testing.T, store *db.DB, rs ...db.DeliveryResult) db.AckReport {
	t.Helper()
	rep, err := store.DeliveryAckBatch(context.Background(), 1, rs, nil, testPolicy)
	require.NoError(t, err)
	return rep
}

// storeChain stores n callbacks of one ordering key for an endpoint and
// returns their delivery ids, in order.
func storeChain(t *testing.T, store *db.DB, endpointID int64, key string, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{endpointID}, OrderingKey: key}).DeliveryIDs[0]
	}
	return ids
}

func TestDeliveryClaimOnlyHeadsThenPromote(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ep, _ := dbtest.Endpoint(t, store, nil)
	ids := storeChain(t, store, ep.ID, "K1", 3)
	other := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "K2"})
	q1, q2 := hookrelay.QueueFor("K1", 32), hookrelay.QueueFor("K2", 32)

	got := claimAll(t, store, q1, 11)
	require.Len(t, got, 1)
	require.Equal(t, ids[0], got[0].ID)
	require.Equal(t, "K1", got[0].OrderingKey)
	require.NotEmpty(t, got[0].Payload)
	require.NotEmpty(t, got[0].CarrierName)
	require.Empty(t, claimAll(t, store, q1, 12), "non-heads parked, head leased")
	require.Len(t, claimAll(t, store, q2, 13), 1, "another key is not held back")
	_ = other

	// A stale token changes nothing.
	rep := ack(t, store, db.DeliveryResult{ID: ids[0], LeaseToken: 999, Kind: db.AckSuccess, Outcome: "success", Status: 200})
	require.Equal(t, 1, rep.Stale)
	require.Empty(t, claimAll(t, store, q1, 14))

	rep = ack(t, store, db.DeliveryResult{ID: ids[0], LeaseToken: 11, EndpointID: ep.ID, Kind: db.AckSuccess, Outcome: "success", Status: 200})
	require.Equal(t, 1, rep.Applied)
	require.EqualValues(t, 1, rep.Promoted)
	got = claimAll(t, store, q1, 15)
	require.Len(t, got, 1)
	require.Equal(t, ids[1], got[0].ID)

	// A retry keeps the chain blocked and spends an attempt.
	ack(t, store, db.DeliveryResult{ID: ids[1], LeaseToken: 15, Kind: db.AckRetry, Spend: true, Delay: 0, Outcome: "failed", Status: 500, Error: "boom"})
	got = claimAll(t, store, q1, 16)
	require.Len(t, got, 1)
	require.Equal(t, ids[1], got[0].ID)
	require.Equal(t, 1, got[0].Attempt)

	// Dead letter moves the row and promotes the next.
	rep = ack(t, store, db.DeliveryResult{ID: ids[1], LeaseToken: 16, Kind: db.AckDead, Outcome: "failed", Status: 500, Error: "boom"})
	require.EqualValues(t, 1, rep.Promoted)
	dls, err := store.DeadLetterList(context.Background(), db.DeadLetterFilter{EndpointID: ep.ID}, db.DeadLetterPage{}, 10)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	dl := dls[0]
	require.Equal(t, ids[1], dl.ID)
	require.Equal(t, ep.MerchantID, dl.MerchantID)
	require.NotZero(t, dl.CarrierID)
	require.Equal(t, "K1", dl.OrderingKey)
	require.Equal(t, "delivered", dl.EventType)
	require.Equal(t, 2, dl.Attempts)
	require.NotNil(t, dl.LastStatus)
	require.Equal(t, 500, *dl.LastStatus)
	require.Equal(t, "boom", dl.LastError)
	got = claimAll(t, store, q1, 17)
	require.Len(t, got, 1)
	require.Equal(t, ids[2], got[0].ID)

	atts, err := dbtest.AttemptsForDelivery(context.Background(), store, ids[1])
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.Equal(t, []int{1, 2}, []int{atts[0].Attempt, atts[1].Attempt})
}

// TestAckInOneRoundTrip: results that know their chain (ResultFor) are
// acknowledged in one pipeline: each row fenced by its lease token, the
// successor of a success promoted, a retry spending an attempt, health
// outcomes applied. A stale success changes no row; the successor it wakes
// (the pipeline promotes before knowing what was deleted) is parked again by
// the next claim, never leased before its predecessor is done.
func TestAckInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	ep, _ := dbtest.Endpoint(t, store, nil)
	ids := storeChain(t, store, ep.ID, "P1", 3)
	q := hookrelay.QueueFor("P1", 32)
	got := claimAll(t, store, q, 11)
	require.Len(t, got, 1)
	require.Equal(t, ids[0], got[0].ID)

	rep := ack(t, store, successOf(got[0], 999, true))
	require.Equal(t, db.AckReport{Stale: 1, Promoted: 1}, rep, "stale; its successor woken")
	require.Empty(t, claimAll(t, store, q, 12), "the woken successor is parked again")
	counts, err := dbtest.DeliveryQueueCounts(ctx, store)
	require.NoError(t, err)
	require.Equal(t, []dbtest.QueueCounts{{Queue: q, Waiting: 1, Parked: 2}}, counts)

	rep, err = store.DeliveryAckBatch(ctx, 1, []db.DeliveryResult{successOf(got[0], 11, true)},
		[]db.EndpointOutcome{{EndpointID: ep.ID, Successes: 1}}, testPolicy)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Applied)
	require.EqualValues(t, 1, rep.Promoted)
	require.Equal(t, []int64{ep.ID}, rep.Closed, "health applied")
	got = claimAll(t, store, q, 13)
	require.Len(t, got, 1)
	require.Equal(t, ids[1], got[0].ID)

	retry := db.ResultFor(got[0])
	retry.LeaseToken, retry.Kind, retry.Spend = 13, db.AckRetry, true
	retry.Outcome, retry.Status, retry.Error = "failed", 500, "boom"
	rep, err = store.DeliveryAckBatch(ctx, 1, []db.DeliveryResult{retry},
		[]db.EndpointOutcome{{EndpointID: ep.ID, Failures: 1, Trailing: 1, LastError: "boom"}}, testPolicy)
	require.NoError(t, err)
	require.Equal(t, db.AckReport{Applied: 1, Closed: []int64{ep.ID}}, rep, "a retry promotes nothing")
	got = claimAll(t, store, q, 14)
	require.Len(t, got, 1)
	require.Equal(t, ids[1], got[0].ID)
	require.Equal(t, 1, got[0].Attempt)
	health, err := dbtest.EndpointHealthGet(ctx, store, ep.ID)
	require.NoError(t, err)
	require.Equal(t, 1, health.ConsecutiveFailures)

	atts, err := dbtest.AttemptsForDelivery(ctx, store, ids[0])
	require.NoError(t, err)
	require.Len(t, atts, 1, "the stale success recorded no attempt")
	require.Equal(t, "success", atts[0].Outcome)
}

// TestPromoteOnlyTheNextRow: a row's removal promotes its chain's next row,
// and only when that row is parked; a parked row further down, behind a row
// that is not parked, stays parked. (Here the row between was woken by a
// stale success, as TestAckInOneRoundTrip shows.)
func TestPromoteOnlyTheNextRow(t *testing.T) {
	t.Parallel()
	forEachAckPath(t, func(t *testing.T, pipelined bool) {
		ctx := context.Background()
		store := dbtest.New(t)
		ep, _ := dbtest.Endpoint(t, store, nil)
		ids := storeChain(t, store, ep.ID, "N1", 3)
		q := hookrelay.QueueFor("N1", 32)
		got := claimAll(t, store, q, 11)
		require.Len(t, got, 1)
		require.Equal(t, db.AckReport{Stale: 1, Promoted: 1}, ack(t, store, successOf(got[0], 999, true)))
		counts, err := dbtest.DeliveryQueueCounts(ctx, store)
		require.NoError(t, err)
		require.Equal(t, []dbtest.QueueCounts{{Queue: q, Due: 1, Waiting: 1, Parked: 1}}, counts,
			"the head leased, the second row woken, the third parked")

		rep := ack(t, store, successOf(got[0], 11, pipelined))
		require.Equal(t, db.AckReport{Applied: 1}, rep, "the next row was not parked: nothing promoted")
		counts, err = dbtest.DeliveryQueueCounts(ctx, store)
		require.NoError(t, err)
		require.Equal(t, []dbtest.QueueCounts{{Queue: q, Due: 1, Parked: 1}}, counts)

		got = claimAll(t, store, q, 12)
		require.Len(t, got, 1)
		require.Equal(t, ids[1], got[0].ID)
		require.Equal(t, db.AckReport{Applied: 1, Promoted: 1}, ack(t, store, successOf(got[0], 12, pipelined)))
		got = claimAll(t, store, q, 13)
		require.Len(t, got, 1)
		require.Equal(t, ids[2], got[0].ID)
	})
}

// TestPromoteReadsOnlyParkedRows: acknowledging rows with no parked
// successor reads deliveries_parked_idx alone (migration 00100), not the
// chain index: before it, every delivered row cost a chain look-up and a
// heap fetch of its successor, found parked or not.
func TestPromoteReadsOnlyParkedRows(t *testing.T) {
	t.Parallel()
	forEachAckPath(t, func(t *testing.T, pipelined bool) {
		ctx := context.Background()
		url := dbtest.NewURL(t)
		// Without sequential scans, as on a table too large for them.
		storeURL := url + "&options=-c%20enable_seqscan%3Doff"
		store := dbtest.Open(t, storeURL, db.Config{MaxConns: 2})
		ep, _ := dbtest.Endpoint(t, store, nil)
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		for i := range 60 {
			dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprint("R", i)})
		}
		queues := make([]int, 32)
		for i := range queues {
			queues[i] = i
		}
		got, err := dbtest.DeliveryClaim(ctx, store, queues, 100, 100, 1, 7, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 60, "every row a head")
		store.Close() // flushes the backends' index statistics
		before := indexScansEventually(t, conn, "deliveries_chain_idx", 60)

		store = dbtest.Open(t, storeURL, db.Config{MaxConns: 2})
		var rs []db.DeliveryResult
		for _, g := range got {
			rs = append(rs, successOf(g, 7, pipelined))
		}
		require.Equal(t, db.AckReport{Applied: 60}, ack(t, store, rs...))
		store.Close()
		indexScansEventually(t, conn, "deliveries_parked_idx", 60)
		require.Equal(t, before, indexScans(t, conn, "deliveries_chain_idx"),
			"chain look-ups by the acknowledgement of rows with nothing parked behind them")
	})
}

// indexScans is the index's idx_scan as the statistics have it now.
func indexScans(t *testing.T, conn *pgx.Conn, index string) int64 {
	t.Helper()
	ctx := context.Background()
	_, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	require.NoError(t, err)
	var n int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = $1`,
		index).Scan(&n))
	return n
}

// indexScansEventually waits until the index's idx_scan is at least least (a
// closed backend's statistics arrive shortly after) and returns it.
func indexScansEventually(t *testing.T, conn *pgx.Conn, index string, least int64) int64 {
	t.Helper()
	var n int64
	require.Eventually(t, func() bool {
		n = indexScans(t, conn, index)
		return n >= least
	}, 5*time.Second, 50*time.Millisecond, "scans of %s: %d", index, n)
	return n
}

// TestClaimParksAWholeChain: one claim that meets a chain's head and the
// rows behind it leases the head and parks every other row, including those
// whose predecessor the same claim parks; none is left due for the next
// claim to walk over again.
func TestClaimParksAWholeChain(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	ids := storeChain(t, store, ep.ID, "C1", 6)
	q := hookrelay.QueueFor("C1", 32)
	got := claimAll(t, store, q, 1)
	require.Len(t, got, 1)
	require.Equal(t, ids[0], got[0].ID)
	counts, err := dbtest.DeliveryQueueCounts(ctx, store)
	require.NoError(t, err)
	require.Equal(t, []dbtest.QueueCounts{{Queue: q, Waiting: 1, Parked: 5}}, counts)
	for i, id := range ids {
		if i > 0 {
			got = claimAll(t, store, q, int64(i+1))
			require.Len(t, got, 1)
			require.Equal(t, id, got[0].ID, "delivery %d of the chain", i)
		}
		rep := ack(t, store, db.DeliveryResult{ID: id, LeaseToken: int64(i + 1), EndpointID: ep.ID, Kind: db.AckSuccess, Outcome: "success", Status: 200})
		require.Equal(t, 1, rep.Applied)
		require.EqualValues(t, min(1, len(ids)-1-i), rep.Promoted, "delivery %d's successor", i)
	}
}

// TestParkedRowsRead: rows parked behind their predecessor ('infinity')
// read as pending with no next attempt, in the API and on the dashboard
// (pgx alone refuses to scan 'infinity' into a time.Time: db/timecodec.go).
func TestParkedRowsRead(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	ids := storeChain(t, store, ep.ID, "P1", 3)
	q := hookrelay.QueueFor("P1", 32)
	require.Len(t, claimAll(t, store, q, 1), 1)
	counts, err := dbtest.DeliveryQueueCounts(ctx, store)
	require.NoError(t, err)
	require.Equal(t, []dbtest.QueueCounts{{Queue: q, Waiting: 1, Parked: 2}}, counts)

	pending, err := store.DeliveryListPending(ctx, ep.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 3)
	require.NotNil(t, pending[0].NextAttemptAt, "the head is due when its lease runs out")
	for _, p := range pending[1:] {
		require.Nil(t, p.NextAttemptAt, "delivery %d is parked", p.ID)
	}
	one, _, err := store.DeliveryGet(ctx, ids[1])
	require.NoError(t, err)
	require.Equal(t, db.DeliveryPending, one.State)
	require.Nil(t, one.NextAttemptAt)
	list, err := store.DeliveryListPendingNewest(ctx, ep.ID, 10)
	require.NoError(t, err)
	require.Len(t, list, 3)
	view, err := store.DeliveryRead(ctx, ids[1])
	require.NoError(t, err)
	require.Equal(t, "pending", view.State)
	require.False(t, view.Pending.VisibleAt.Before(time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC)), "parked: never due")
}

func TestDeliveryClaimHoldsDisabledEndpoint(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{Disabled: true})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "H"})
	q := hookrelay.QueueFor("H", 32)
	require.Empty(t, claimAll(t, store, q, 1))
	counts, err := dbtest.DeliveryQueueCounts(context.Background(), store)
	require.NoError(t, err)
	require.Equal(t, []dbtest.QueueCounts{{Queue: q, Waiting: 1}}, counts)
	_, err = store.EndpointEnable(context.Background(), ep.ID)
	require.NoError(t, err)
	require.Len(t, claimAll(t, store, q, 2), 1)
}

func TestCircuitOpensAndDefersClaims(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	rep, err := store.DeliveryAckBatch(ctx, 1, nil, []db.EndpointOutcome{{EndpointID: ep.ID, Failures: 3, Trailing: 3, LastError: "x"}}, testPolicy)
	require.NoError(t, err)
	require.Equal(t, []int64{ep.ID}, rep.Opened)
	h, err := dbtest.EndpointHealthGet(ctx, store, ep.ID)
	require.NoError(t, err)
	require.Equal(t, "open", h.CircuitState)
	require.Equal(t, time.Minute, h.CircuitBackoff)
	require.NotNil(t, h.FailingSince)

	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "C"})
	require.Empty(t, claimAll(t, store, hookrelay.QueueFor("C", 32), 1))

	rep, err = store.DeliveryAckBatch(ctx, 1, nil, []db.EndpointOutcome{{EndpointID: ep.ID, Successes: 1}}, testPolicy)
	require.NoError(t, err)
	require.Equal(t, []int64{ep.ID}, rep.Closed)
	h, err = dbtest.EndpointHealthGet(ctx, store, ep.ID)
	require.NoError(t, err)
	require.Equal(t, "closed", h.CircuitState)
	require.Nil(t, h.FailingSince)

	// 410 disables.
	rep, err = store.DeliveryAckBatch(ctx, 1, nil, []db.EndpointOutcome{{EndpointID: ep.ID, Gone: true}}, testPolicy)
	require.NoError(t, err)
	require.Equal(t, []int64{ep.ID}, rep.Disabled)
	got, err := store.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Equal(t, "disabled", got.Status)
}

// TestParkingRace hammers claim and ack on one chain from several goroutines:
// every row must be delivered in order and none may stay parked forever.
func TestParkingRace(t *testing.T) {
	t.Parallel()
	forEachAckPath(t, func(t *testing.T, pipelined bool) {
		store := dbtest.New(t)
		ep, _ := dbtest.Endpoint(t, store, nil)
		const n = 60
		for range n {
			dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "race"})
		}
		q := hookrelay.QueueFor("race", 32)
		var (
			claimed raceLog
			wg      sync.WaitGroup
		)
		deadline := time.Now().Add(60 * time.Second)
		for w := range 4 {
			wg.Go(func() { claimAndAck(t, store, q, n, int64(w), deadline, &claimed, pipelined) })
		}
		wg.Wait()
		claimed.requireInOrder(t, n)
	})
}

// forEachAckPath runs test (in parallel) once with results that know their
// chain (ResultFor: the acknowledgement is one pipelined round trip) and
// once with results that do not (BEGIN, statement by statement, COMMIT).
func forEachAckPath(t *testing.T, test func(t *testing.T, pipelined bool)) {
	for _, pipelined := range []bool{true, false} {
		name := "transaction"
		if pipelined {
			name = "pipeline"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, pipelined)
		})
	}
}

// successOf is the success result of d under token; with chain, built by
// ResultFor as the dispatcher does (the pipelined acknowledgement).
func successOf(d db.ClaimedDelivery, token int64, chain bool) db.DeliveryResult {
	r := db.DeliveryResult{ID: d.ID, EndpointID: d.EndpointID}
	if chain {
		r = db.ResultFor(d)
	}
	r.LeaseToken, r.Kind, r.Outcome, r.Status = token, db.AckSuccess, "success", 200
	return r
}

// raceLog is what the claimers of a race test delivered, in claim order,
// and the lease tokens they use.
type raceLog struct {
	token atomic.Int64
	mu    sync.Mutex
	ids   []int64
}

func (l *raceLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

func (l *raceLog) requireInOrder(t *testing.T, n int) {
	t.Helper()
	require.Len(t, l.ids, n, "some rows were never delivered (parked forever?)")
	for i := 1; i < n; i++ {
		require.Less(t, l.ids[i-1], l.ids[i], "order")
	}
}

// claimAndAck claims queue q as dispatcher w and acknowledges every row it
// gets at once, until n rows are in log or the deadline passes.
func claimAndAck(t *testing.T, store *db.DB, q, n int, w int64, deadline time.Time, log *raceLog, pipelined bool) {
	ctx := context.Background()
	for time.Now().Before(deadline) && log.count() < n {
		tok := log.token.Add(1)
		got, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 50, 50, w, tok, time.Minute)
		if err != nil {
			t.Error(err)
			return
		}
		for _, d := range got {
			log.mu.Lock()
			log.ids = append(log.ids, d.ID)
			log.mu.Unlock()
			if _, err := store.DeliveryAckBatch(ctx, w, []db.DeliveryResult{successOf(d, tok, pipelined)}, nil, testPolicy); err != nil {
				t.Error(err)
				return
			}
		}
	}
}

// A session holding an endpoint_health row (as a dispatcher stalled inside a
// transaction would) must not stop anyone's acknowledgements: the deliveries
// are acknowledged at once and that endpoint's outcome comes back to be
// carried over.
func TestAckSkipsLockedHealthRows(t *testing.T) {
	t.Parallel()
	forEachAckPath(t, testAckSkipsLockedHealthRows)
}

func testAckSkipsLockedHealthRows(t *testing.T, pipelined bool) {
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{LockTimeout: 5 * time.Second})
	ep, _ := dbtest.Endpoint(t, store, nil)
	other, _ := dbtest.Endpoint(t, store, nil)
	_, err := store.DeliveryAckBatch(ctx, 1, nil, []db.EndpointOutcome{{EndpointID: ep.ID, Successes: 1}, {EndpointID: other.ID, Successes: 1}}, testPolicy)
	require.NoError(t, err)

	m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "K"})
	got := claimAll(t, store, hookrelay.QueueFor("K", 32), 21)
	require.Len(t, got, 1)
	require.Equal(t, m.DeliveryIDs[0], got[0].ID)

	locker, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "UPDATE endpoint_health SET updated_at = updated_at WHERE endpoint_id = $1", ep.ID)
	require.NoError(t, err)

	start := time.Now()
	rep, err := store.DeliveryAckBatch(ctx, 1,
		[]db.DeliveryResult{successOf(got[0], 21, pipelined)},
		[]db.EndpointOutcome{{EndpointID: ep.ID, Successes: 1}, {EndpointID: other.ID, Failures: 1, Trailing: 1}}, testPolicy)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 4*time.Second, "waited for the locked health row")
	require.Equal(t, 1, rep.Applied)
	require.Equal(t, []db.EndpointOutcome{{EndpointID: ep.ID, Successes: 1}}, rep.HealthSkipped)
	require.Contains(t, rep.Closed, other.ID, "the unlocked endpoint was applied")
}

// A claim that would send a half-open probe does not wait for a session
// holding the endpoint's health row.
func TestClaimProbeSkipsLockedHealthRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{LockTimeout: 5 * time.Second})
	ep, _ := dbtest.Endpoint(t, store, nil)
	_, err := store.DeliveryAckBatch(ctx, 1, nil, []db.EndpointOutcome{{EndpointID: ep.ID, Failures: 3, Trailing: 3, LastError: "x"}}, testPolicy)
	require.NoError(t, err)
	locker, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer locker.Close(ctx)
	// The open period is over: the next head is a probe.
	_, err = locker.Exec(ctx, "UPDATE endpoint_health SET circuit_open_until = now() - interval '1 second' WHERE endpoint_id = $1", ep.ID)
	require.NoError(t, err)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "P"})

	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "UPDATE endpoint_health SET updated_at = updated_at WHERE endpoint_id = $1", ep.ID)
	require.NoError(t, err)

	start := time.Now()
	got := claimAll(t, store, hookrelay.QueueFor("P", 32), 31)
	require.Less(t, time.Since(start), 4*time.Second, "the claim waited for the locked health row")
	require.Len(t, got, 1, "the probe is sent")
}

// TestLeaseIsHOTAndExpires: a lease is an update of columns no index covers
// (migration 00060), so PostgreSQL makes it a heap-only tuple; a lease that
// runs out makes the row claimable again, under a new token that fences the
// old holder's acknowledgement.
func TestLeaseIsHOTAndExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ep, _ := dbtest.Endpoint(t, store, nil)
	m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "H1"})
	q := hookrelay.QueueFor("H1", 32)

	// Long enough for the checks below to run inside the lease on a loaded
	// machine.
	const lease = 2 * time.Second
	got, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 50, 50, 1, 41, lease)
	require.NoError(t, err)
	leasedAt := time.Now() // not before the lease's own start in the server
	require.Len(t, got, 1)
	require.Equal(t, m.DeliveryIDs[0], got[0].ID)
	require.Empty(t, claimAll(t, store, q, 42), "a leased row is skipped while its lease runs")

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pageinspect")
	require.NoError(t, err)
	var heapOnly int
	// t_infomask2 bit 0x8000 is HEAP_ONLY_TUPLE: the leased version has no
	// index entries of its own.
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM heap_page_items(get_raw_page('deliveries', 0))
		WHERE t_infomask2 & 32768 <> 0`).Scan(&heapOnly))
	require.Equal(t, 1, heapOnly, "the lease is a HOT update")

	time.Sleep(time.Until(leasedAt.Add(lease + 100*time.Millisecond)))
	again, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 50, 50, 2, 43, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, 1, "an expired lease makes the row claimable")
	require.Equal(t, m.DeliveryIDs[0], again[0].ID)
	require.Equal(t, 1, ack(t, store, db.DeliveryResult{ID: again[0].ID, LeaseToken: 41, EndpointID: ep.ID,
		Kind: db.AckSuccess, Outcome: "success", Status: 200}).Stale, "the old holder is fenced off")

	// A release due at once keeps the row's place and is HOT too.
	require.Equal(t, 1, ack(t, store, db.DeliveryResult{ID: again[0].ID, LeaseToken: 43, EndpointID: ep.ID,
		Kind: db.AckRelease}).Applied)
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM heap_page_items(get_raw_page('deliveries', 0))
		WHERE t_infomask2 & 32768 <> 0`).Scan(&heapOnly))
	require.GreaterOrEqual(t, heapOnly, 1)
	last := claimAll(t, store, q, 44)
	require.Len(t, last, 1, "released rows are due at once")
	require.Equal(t, 1, ack(t, store, db.DeliveryResult{ID: last[0].ID, LeaseToken: 44, EndpointID: ep.ID,
		Kind: db.AckSuccess, Outcome: "success", Status: 200}).Applied)
}

// TestClaimAsyncCommitStaysInItsTransaction: the claim commits with
// synchronous_commit off through set_config(..., true); the pooled session
// (which ingest may use next, and must commit durably) keeps "on".
func TestClaimAsyncCommitStaysInItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{MaxConns: 1})
	ep, _ := dbtest.Endpoint(t, store, nil)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "S1"})
	require.Len(t, claimAll(t, store, hookrelay.QueueFor("S1", 32), 51), 1)
	got, err := store.SessionSettings(ctx)
	require.NoError(t, err)
	require.Equal(t, "on", got["synchronous_commit"])
}

// TestClaimTimingSplitsServerTime: a claim reports PostgreSQL's own time
// apart from its round trip. A claim that waits in the server (here for a
// lock on carriers, which it joins) shows the wait in Server; an empty claim
// reports none.
func TestClaimTimingSplitsServerTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ep, _ := dbtest.Endpoint(t, store, nil)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "T1"})
	q := hookrelay.QueueFor("T1", 32)

	_, timing, err := store.DeliveryClaim(ctx, db.ClaimParams{Queues: []int{(q + 1) % 32}, PerQueue: 50, Batch: 50, Owner: 1, Token: 60, Lease: time.Minute})
	require.NoError(t, err)
	require.Zero(t, timing.Server, "nothing claimed, no server time")

	locker, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "LOCK TABLE carriers IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	watcher, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer watcher.Close(ctx)
	// The lock is held for this long once the claim waits for it in the
	// server (not from when the claim is sent: under -race and parallel
	// tests it can take tens of milliseconds to get there).
	const held = 300 * time.Millisecond
	committed := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			var waiting int
			if err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil || waiting > 0 {
				break
			}
		}
		time.Sleep(held)
		committed <- tx.Commit(ctx)
	}()
	got, timing, err := store.DeliveryClaim(ctx, db.ClaimParams{Queues: []int{q}, PerQueue: 50, Batch: 50, Owner: 1, Token: 61, Lease: time.Minute})
	require.NoError(t, <-committed)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.GreaterOrEqual(t, timing.Server, held, "the lock wait is server time")
	require.LessOrEqual(t, timing.Server, timing.Exec, "server time is a part of the round trip")
}

// TestLeasedRowIsDueAtLeaseEnd: the API and the dashboard show a leased row
// as next due when its lease runs out (visible_at itself stays in the past).
func TestLeasedRowIsDueAtLeaseEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	ep, _ := dbtest.Endpoint(t, store, nil)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "L1"})
	got := claimAll(t, store, hookrelay.QueueFor("L1", 32), 61) // a one-minute lease
	require.Len(t, got, 1)
	soon := time.Now().Add(30 * time.Second)

	api, _, err := store.DeliveryGet(ctx, got[0].ID)
	require.NoError(t, err)
	require.NotNil(t, api.NextAttemptAt)
	require.True(t, api.NextAttemptAt.After(soon), "next attempt %v is the lease's end", api.NextAttemptAt)
	list, err := store.DeliveryListPending(ctx, ep.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.True(t, list[0].NextAttemptAt.After(soon))
	dash, err := store.DeliveryRead(ctx, got[0].ID)
	require.NoError(t, err)
	require.True(t, dash.Pending.VisibleAt.After(soon))
	pend, err := store.DeliveryListPendingNewest(ctx, ep.ID, 10)
	require.NoError(t, err)
	require.Len(t, pend, 1)
	require.True(t, pend[0].VisibleAt.After(soon))
}

// TestChainLookupsUseChainIndex: the claim's "is there an earlier row of this
// chain?" and the promote's "who is next?" are answered by
// deliveries_chain_idx, never by (endpoint_id, id), which reads every row of
// the endpoint (planned that way from a small table's statistics, it was
// ~60 % of a claim's buffers at full load). Statistics are taken while the
// table is small, as they are on a queue table, then the backlog grows.
func TestChainLookupsUseChainIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	// Without sequential scans, as on a table too large for them.
	store := dbtest.Open(t, url+"&options=-c%20enable_seqscan%3Doff", db.Config{MaxConns: 2})
	ep, _ := dbtest.Endpoint(t, store, nil)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)

	key := func(i int) string { return "IX" + string(rune('A'+i%20)) + string(rune('A'+i/20%20)) }
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: key(0)})
	_, err = conn.Exec(ctx, "ANALYZE deliveries")
	require.NoError(t, err)
	for i := range 400 {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: key(i % 150)})
	}

	queues := make([]int, 32)
	for i := range queues {
		queues[i] = i
	}
	delivered := 0
	for token := int64(1); delivered < 401; token++ {
		got, err := dbtest.DeliveryClaim(ctx, store, queues, 50, 50, 1, token, time.Minute)
		require.NoError(t, err)
		require.NotEmpty(t, got, "after %d deliveries", delivered)
		var rs []db.DeliveryResult
		for _, g := range got {
			rs = append(rs, db.DeliveryResult{ID: g.ID, LeaseToken: token, EndpointID: ep.ID,
				Kind: db.AckSuccess, Outcome: "success", Status: 200})
		}
		require.Equal(t, len(got), ack(t, store, rs...).Applied)
		delivered += len(got)
	}

	// A backend's index statistics are flushed at the latest when it exits.
	store.Close()
	scans := map[string]int64{}
	require.Eventually(t, func() bool {
		_, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(t, err)
		rows, err := conn.Query(ctx, `SELECT indexrelname::text, idx_scan FROM pg_stat_user_indexes
			WHERE relname = 'deliveries'`)
		require.NoError(t, err)
		for rows.Next() {
			var name string
			var n int64
			require.NoError(t, rows.Scan(&name, &n))
			scans[name] = n
		}
		require.NoError(t, rows.Err())
		return scans["deliveries_claim_idx"] > 0
	}, 5*time.Second, 50*time.Millisecond, "the store's statistics never arrived")
	require.Positive(t, scans["deliveries_chain_idx"], "index scans: %v", scans)
	require.Zero(t, scans["deliveries_endpoint_idx"], "index scans: %v", scans)
}

// TestEndpointStatementsUseEndpointIndex: deliveries_endpoint_idx is partial
// on "id > 0" so that the chain look-ups cannot take it (migration 00070);
// every statement that selects an endpoint's rows says so and reads it.
func TestEndpointStatementsUseEndpointIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	// Generic plans: a custom plan for "id > $1" with $1 = 0 would prove
	// "id > 0" by itself.
	store := dbtest.Open(t, url+"&options=-c%20enable_seqscan%3Doff%20-c%20plan_cache_mode%3Dforce_generic_plan",
		db.Config{MaxConns: 2})
	ep, _ := dbtest.Endpoint(t, store, nil)
	for i := range 5 {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprint("E", i%2)})
	}
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "ANALYZE deliveries")
	require.NoError(t, err)

	pending, err := store.DeliveryListPending(ctx, ep.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 5)
	list, err := store.DeliveryListPendingNewest(ctx, ep.ID, 10)
	require.NoError(t, err)
	require.Len(t, list, 5)
	counts, err := store.DeliveryCountByEndpoint(ctx, []int64{ep.ID}, 100)
	require.NoError(t, err)
	require.EqualValues(t, 5, counts[ep.ID])
	_, err = store.DeliveryResumeEndpoint(ctx, ep.ID)
	require.NoError(t, err)
	_, err = store.EndpointEnable(ctx, ep.ID)
	require.NoError(t, err)
	n, err := store.EndpointDelete(ctx, ep.ID)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)

	store.Close() // flushes the backends' index statistics
	var scans int64
	for deadline := time.Now().Add(5 * time.Second); scans < 6 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		_, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(ctx, `SELECT idx_scan FROM pg_stat_user_indexes
			WHERE indexrelname = 'deliveries_endpoint_idx'`).Scan(&scans))
	}
	require.EqualValues(t, 6, scans, "scans of deliveries_endpoint_idx by the 6 statements")
}

// TestStalledAckReleasesItsRows: an acknowledgement transaction whose
// dispatcher stalls between two statements (here: sleeps past
// AckIdleTimeout) is ended by PostgreSQL, so the rows it deleted are not
// held locked: another dispatcher claims them once their lease runs out.
// (Only the statement-by-statement path has the caller between statements:
// here a result that does not know its chain; dead letters take it too.)
// Before, the stalled transaction held them (and the chains behind them)
// for as long as the stall, up to idle_in_transaction_session_timeout.
func TestStalledAckReleasesItsRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{AckIdleTimeout: 200 * time.Millisecond})
	ep, _ := dbtest.Endpoint(t, store, nil)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "ST1"})
	q := hookrelay.QueueFor("ST1", 32)
	got, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 50, 50, 1, 61, 300*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, got, 1)

	db.SetAckStallHook(store, func() { time.Sleep(time.Second) })
	_, err = store.DeliveryAckBatch(ctx, 1, []db.DeliveryResult{{ID: got[0].ID, LeaseToken: 61, EndpointID: ep.ID,
		Kind: db.AckSuccess, Outcome: "success", Status: 200}}, nil, testPolicy)
	db.SetAckStallHook(store, nil)
	require.Error(t, err, "the stalled transaction was ended")

	// The row was not deleted and is not locked: once the lease is over,
	// another dispatcher claims it without waiting.
	time.Sleep(400 * time.Millisecond)
	start := time.Now()
	again, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 50, 50, 2, 62, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Equal(t, got[0].ID, again[0].ID)
	require.Less(t, time.Since(start), time.Second)
}

// TestDeliveryGetWhileItFinishes reads a delivery while it is acknowledged
// between DeliveryGet's reads: the answer is the delivery as it was or as it
// is, never "not found" (the API's GET and retry of a delivery 404'd when its
// attempts were read before the acknowledgement and its queue row after).
func TestDeliveryGetWhileItFinishes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	ep, _ := dbtest.Endpoint(t, store, nil)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "GW1"})
	got, err := dbtest.DeliveryClaim(ctx, store, []int{hookrelay.QueueFor("GW1", 32)}, 50, 50, 1, 71, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)

	db.SetDeliveryGetHook(store, func() {
		_, err := store.DeliveryAckBatch(ctx, 1, []db.DeliveryResult{{ID: got[0].ID, LeaseToken: 71, EndpointID: ep.ID,
			Kind: db.AckSuccess, Outcome: "success", Status: 200}}, nil, testPolicy)
		require.NoError(t, err)
	})
	d, _, err := store.DeliveryGet(ctx, got[0].ID)
	db.SetDeliveryGetHook(store, nil)
	require.NoError(t, err)
	require.Equal(t, db.DeliveryPending, d.State, "the state when the read began")

	d, attempts, err := store.DeliveryGet(ctx, got[0].ID)
	require.NoError(t, err)
	require.Equal(t, db.DeliveryDelivered, d.State)
	require.Len(t, attempts, 1)
}

// TestIngestParkingRace stores callbacks of one key one after another while
// other goroutines claim and acknowledge them: however a store interleaves
// with a claim parking a row behind its predecessor and an acknowledgement
// promoting it, every row is delivered, in order. (A store that parked rows
// itself, behind a predecessor it had not locked, fails here: an
// acknowledgement can delete that predecessor and promote nothing before the
// store commits.)
func TestIngestParkingRace(t *testing.T) {
	t.Parallel()
	forEachAckPath(t, testIngestParkingRace)
}

func testIngestParkingRace(t *testing.T, pipelined bool) {
	store := dbtest.New(t)
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	carrier, _ := dbtest.Carrier(t, store, nil)
	const n, key = 200, "ingest-race"
	q := hookrelay.QueueFor(key, 32)
	var (
		claimed raceLog
		wg      sync.WaitGroup
	)
	deadline := time.Now().Add(60 * time.Second)
	wg.Go(func() {
		for range n {
			body := []byte(`{"tracking_no":"ingest-race"}`)
			sum := sha256.Sum256(body)
			_, err := store.MessageInsertMany(ctx, []db.NewMessage{{
				CarrierID: carrier.ID, EventType: "x", OrderingKey: key, Queue: q,
				Payload: body, PayloadSize: len(body), PayloadSHA256: sum[:], EndpointIDs: []int64{ep.ID},
			}})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	for w := range 3 {
		wg.Go(func() { claimAndAck(t, store, q, n, int64(w), deadline, &claimed, pipelined) })
	}
	wg.Wait()
	claimed.requireInOrder(t, n)
}

// TestPromotedRowKeepsItsPlace: a promoted row becomes due at the time it
// was stored, ahead of the later rows of its chain that no claim has parked
// yet, so the next claim of a small share takes it. Made due "now" it would
// sort behind them, and the claims of a deep chain's backlog would park
// them a share at a time before reaching it (a drain of 50 keys × 400 rows
// delivered one row per key, then nothing for minutes).
func TestPromotedRowKeepsItsPlace(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	// More rows than a claim reads whole (the queue is walked), and a share
	// of two rows per claim.
	ids := storeChain(t, store, ep.ID, "D1", 60)
	q := hookrelay.QueueFor("D1", 32)
	claim := func(token int64) []db.ClaimedDelivery {
		got, err := dbtest.DeliveryClaim(ctx, store, []int{q}, 2, 2, 1, token, time.Minute)
		require.NoError(t, err)
		return got
	}
	got := claim(1)
	require.Len(t, got, 1)
	require.Equal(t, ids[0], got[0].ID)
	for i := 1; i < 4; i++ {
		rep := ack(t, store, db.DeliveryResult{ID: ids[i-1], LeaseToken: int64(i), EndpointID: ep.ID, Kind: db.AckSuccess, Outcome: "success", Status: 200})
		require.Equal(t, 1, rep.Applied)
		require.EqualValues(t, 1, rep.Promoted, "row %d was parked by the claim that took row %d", i, i-1)
		got = claim(int64(i + 1))
		require.Len(t, got, 1, "the claim after row %d's acknowledgement takes its promoted successor", i-1)
		require.Equal(t, ids[i], got[0].ID)
	}
}
