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
)

// ackAll claims every due delivery of key's queue and acknowledges each
// with kind, or with kinds[its endpoint] when given (a retry becomes due
// again after delay).
func ackAll(t *testing.T, store *db.DB, key string, kind db.AckKind, delay time.Duration, kinds ...map[int64]db.AckKind) {
	t.Helper()
	ctx := context.Background()
	rows, err := dbtest.DeliveryClaim(ctx, store, []int{hookrelay.QueueFor(key, 32)}, 50, 50, 1, 77, time.Minute)
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	var res []db.DeliveryResult
	for _, r := range rows {
		kind := kind
		if len(kinds) > 0 {
			kind = kinds[0][r.EndpointID]
		}
		d := db.DeliveryResult{ID: r.ID, LeaseToken: 77, EndpointID: r.EndpointID, Kind: kind, Spend: true,
			Outcome: "success", Status: 200, Excerpt: "ok", AttemptedAt: time.Now(), Delay: delay}
		if kind != db.AckSuccess {
			d.Outcome, d.Status, d.Error = "failed", 500, "HTTP 500"
		}
		res = append(res, d)
	}
	_, err = store.DeliveryAckBatch(ctx, 1, res, nil,
		db.HealthPolicy{Threshold: 10, BaseBackoff: time.Minute, MaxBackoff: time.Hour, DisableAfter: 100 * time.Hour})
	require.NoError(t, err)
}

// TestMessageSearchScoped pages, one message at a time, through searches
// by endpoint, state and merchant over messages whose deliveries are in
// every state, among them candidates the search must drop (a failed
// attempt followed by a success is not "failed").
func TestMessageSearchScoped(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	m1, _ := dbtest.Merchant(t, store, nil)
	m2, _ := dbtest.Merchant(t, store, nil)
	e1, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{MerchantID: m1.ID})
	e2, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{MerchantID: m1.ID})
	e3, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{MerchantID: m2.ID})
	c, _ := dbtest.Carrier(t, store, nil)
	send := func(key string, eps ...int64) int64 {
		return dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: c.ID, OrderingKey: key, EndpointIDs: eps}).ID
	}
	// Each key its own queue, so that each ackAll acknowledges its own.
	keys := map[int]string{}
	for i := 0; len(keys) < 6; i++ {
		k := "K" + string(rune('a'+i))
		q := hookrelay.QueueFor(k, 32)
		if _, seen := keys[q]; !seen {
			keys[q] = k
		}
	}
	var key []string
	for _, k := range keys {
		key = append(key, k)
	}
	delivered := send(key[0], e1.ID)
	ackAll(t, store, key[0], db.AckSuccess, 0)
	dead := send(key[1], e2.ID)
	ackAll(t, store, key[1], db.AckDead, 0)
	retrying := send(key[2], e1.ID)
	ackAll(t, store, key[2], db.AckRetry, time.Hour)
	recovered := send(key[3], e1.ID)
	ackAll(t, store, key[3], db.AckRetry, 0)
	ackAll(t, store, key[3], db.AckSuccess, 0)
	split := send(key[4], e1.ID, e3.ID)
	ackAll(t, store, key[4], "", 0, map[int64]db.AckKind{e1.ID: db.AckSuccess, e3.ID: db.AckDead})
	queued := send(key[5], e3.ID)

	search := func(f db.MessageFilter) []int64 {
		t.Helper()
		f.Since, f.Until = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		var got []int64
		var pos db.MessagePosition
		for range 20 {
			page, err := store.MessageSearch(ctx, f, pos, 1)
			require.NoError(t, err)
			if len(page) == 0 {
				return got
			}
			got = append(got, page[0].ID)
			pos = db.MessagePosition{ID: page[0].ID}
		}
		t.Fatal("more pages than messages")
		return nil
	}
	require.Equal(t, []int64{split, recovered, delivered}, search(db.MessageFilter{State: db.DeliveryDelivered}))
	require.Equal(t, []int64{split, dead}, search(db.MessageFilter{State: db.DeliveryDead}))
	require.Equal(t, []int64{queued, retrying}, search(db.MessageFilter{State: db.DeliveryPending}))
	require.Empty(t, search(db.MessageFilter{State: db.DeliveryFailed}), "retried, recovered and dead are not failed")
	require.Equal(t, []int64{split, recovered, retrying, delivered}, search(db.MessageFilter{EndpointID: e1.ID}))
	require.Equal(t, []int64{retrying}, search(db.MessageFilter{EndpointID: e1.ID, State: db.DeliveryPending}))
	require.Equal(t, []int64{queued, split}, search(db.MessageFilter{MerchantID: m2.ID}))
	require.Equal(t, []int64{split}, search(db.MessageFilter{MerchantID: m2.ID, State: db.DeliveryDead}))
	require.Empty(t, search(db.MessageFilter{MerchantID: m2.ID, State: db.DeliveryDelivered}),
		"the split message's delivery is another merchant's")
	require.Equal(t, []int64{dead}, search(db.MessageFilter{MerchantID: m1.ID, EndpointID: e2.ID}))

	// A merchant sees only its own deliveries of a message.
	page, err := store.MessageSearch(ctx, db.MessageFilter{MerchantID: m2.ID,
		Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour)}, db.MessagePosition{ID: queued}, 10)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, []db.MessageDelivery{{ID: page[0].Deliveries[0].ID, EndpointID: e3.ID, State: db.DeliveryDead,
		Attempts: page[0].Deliveries[0].Attempts, LastStatus: page[0].Deliveries[0].LastStatus}}, page[0].Deliveries)
}

// TestMessageSearchReadsQueueOncePerPage: the deliveries of a page of
// messages are looked up in the queue (which has no index on message_id)
// once for the page, not once for each message.
func TestMessageSearchReadsQueueOncePerPage(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	var eps []int64
	for range 30 {
		e, _ := dbtest.Endpoint(t, store, nil)
		eps = append(eps, e.ID)
	}
	for i := range 300 {
		dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: c.ID, EndpointIDs: []int64{eps[i%len(eps)]}})
	}
	stats, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer stats.Close(ctx)
	scans := func() (n int64) {
		_, err := stats.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(t, err)
		require.NoError(t, stats.QueryRow(ctx, `SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0)
            FROM pg_stat_user_tables WHERE relname = 'deliveries'`).Scan(&n))
		return n
	}
	before := scans()
	const page = 50
	got, err := store.MessageSearch(ctx, db.MessageFilter{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour)},
		db.MessagePosition{}, page)
	require.NoError(t, err)
	require.Len(t, got, page)
	for _, m := range got {
		require.Len(t, m.Deliveries, 1)
		require.Equal(t, db.DeliveryPending, m.Deliveries[0].State)
	}
	// A backend reports its table statistics when it exits (when idle, only
	// within 10 s).
	store.Close()
	waitSessionsGone(t, stats)
	n := scans() - before
	t.Logf("%d scans of the queue for a page of %d messages", n, page)
	require.Less(t, n, int64(page/5), "the queue is read once for the page, not once a message")
}
