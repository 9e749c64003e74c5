package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestMessageSearchRareStateReadsTheSet: a search by a rare state (pending,
// dead) reads its candidates from the queue or the dead letters, not by
// walking every message of the window; pages and cursor stay newest first.
func TestMessageSearchRareStateReadsTheSet(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	e, _ := dbtest.Endpoint(t, store, nil)
	dead := dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: c.ID, OrderingKey: "dead-key", EndpointIDs: []int64{e.ID}})
	ackAll(t, store, "dead-key", db.AckDead, 0)
	var pending []int64
	for range 3 {
		m := dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: c.ID, EndpointIDs: []int64{e.ID, e.ID}})
		pending = append([]int64{m.ID}, pending...)
	}
	for range 400 {
		dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: c.ID})
	}
	stats, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer stats.Close(ctx)
	reads := func() (n int64) {
		_, err := stats.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(t, err)
		require.NoError(t, stats.QueryRow(ctx, `SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)::bigint
            FROM pg_stat_user_tables WHERE relname LIKE 'messages%'`).Scan(&n))
		return n
	}
	before := reads()
	f := db.MessageFilter{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour), State: db.DeliveryPending}
	var got []int64
	var pos db.MessagePosition
	for {
		page, err := store.MessageSearch(ctx, f, pos, 2)
		require.NoError(t, err)
		for _, m := range page {
			got = append(got, m.ID)
		}
		if len(page) < 2 {
			break
		}
		pos = db.MessagePosition{ID: page[len(page)-1].ID}
	}
	require.Equal(t, pending, got)
	f.State = db.DeliveryDead
	page, err := store.MessageSearch(ctx, f, db.MessagePosition{}, 20)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, dead.ID, page[0].ID)
	f.CarrierID = c.ID + 1000
	page, err = store.MessageSearch(ctx, f, db.MessagePosition{}, 20)
	require.NoError(t, err)
	require.Empty(t, page, "the other filters still apply")
	// A backend reports its table statistics when it exits.
	store.Close()
	waitSessionsGone(t, stats)
	n := reads() - before
	t.Logf("%d message rows read", n)
	require.Less(t, n, int64(100), "the messages of the window are not walked")
}

// TestMessageSearchByEndpointReadsItsAttempts: a search by a rare endpoint
// or merchant reads its candidates from the endpoint's attempts (and the
// queue and dead letters), not by walking every message of the window;
// pages and cursor stay newest first, and every state is found.
func TestMessageSearchByEndpointReadsItsAttempts(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	setup := dbtest.Open(t, url, db.Config{})
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, setup, nil)
	mer, _ := dbtest.Merchant(t, setup, nil)
	e, _ := dbtest.Endpoint(t, setup, &dbtest.EndpointOpts{MerchantID: mer.ID})
	other, _ := dbtest.Endpoint(t, setup, nil)
	var want []int64 // newest first
	for i, kind := range []db.AckKind{db.AckSuccess, db.AckDead, db.AckSuccess, ""} {
		key := fmt.Sprintf("rare-%d", i)
		m := dbtest.Message(t, setup, &dbtest.MessageOpts{CarrierID: c.ID, OrderingKey: key, EndpointIDs: []int64{e.ID}})
		want = append([]int64{m.ID}, want...)
		if kind != "" { // the last one stays queued, never attempted
			ackAll(t, setup, key, kind, 0)
		}
		for range 100 {
			dbtest.Message(t, setup, &dbtest.MessageOpts{CarrierID: c.ID, EndpointIDs: []int64{other.ID}})
		}
	}
	stats, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer stats.Close(ctx)
	reads := func() (n int64) {
		_, err := stats.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(t, err)
		require.NoError(t, stats.QueryRow(ctx, `SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)::bigint
            FROM pg_stat_user_tables WHERE relname LIKE 'messages%'`).Scan(&n))
		return n
	}
	// A backend reports its table statistics when it exits: the setup's
	// own reads are counted before the searches start.
	setup.Close()
	waitSessionsGone(t, stats)
	before := reads()
	store := dbtest.Open(t, url, db.Config{})
	search := func(f db.MessageFilter) []int64 {
		t.Helper()
		f.Since, f.Until = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		var got []int64
		var pos db.MessagePosition
		for range 20 {
			page, err := store.MessageSearch(ctx, f, pos, 2)
			require.NoError(t, err)
			for _, m := range page {
				got = append(got, m.ID)
			}
			if len(page) < 2 {
				return got
			}
			pos = db.MessagePosition{ID: page[len(page)-1].ID}
		}
		t.Fatal("more pages than messages")
		return nil
	}
	require.Equal(t, want, search(db.MessageFilter{EndpointID: e.ID}))
	require.Equal(t, want, search(db.MessageFilter{MerchantID: mer.ID}))
	require.Equal(t, []int64{want[1], want[3]}, search(db.MessageFilter{EndpointID: e.ID, State: db.DeliveryDelivered}))
	require.Equal(t, []int64{want[2]}, search(db.MessageFilter{MerchantID: mer.ID, State: db.DeliveryDead}))
	require.Equal(t, []int64{want[0]}, search(db.MessageFilter{EndpointID: e.ID, State: db.DeliveryPending}))
	store.Close()
	waitSessionsGone(t, stats)
	n := reads() - before
	t.Logf("%d message rows read", n)
	require.Less(t, n, int64(100), "the messages of the window are not walked")
	// (Not measured: on tables this small a carrier's filter is planned as
	// a sequential read of the messages.)
	store = dbtest.Open(t, url, db.Config{})
	require.Empty(t, search(db.MessageFilter{EndpointID: e.ID, CarrierID: c.ID + 1000}), "the other filters still apply")
}

// waitSessionsGone waits until conn is the only client session on its
// database. A backend reports its statistics before it leaves
// pg_stat_activity, so those of a closed store's sessions are counted from
// then on.
func waitSessionsGone(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the closed store's sessions to end", func() bool {
		var n int
		require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n))
		return n == 0
	})
}
