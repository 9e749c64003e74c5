package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
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
	time.Sleep(2 * time.Second)
	n := reads() - before
	t.Logf("%d message rows read", n)
	require.Less(t, n, int64(100), "the messages of the window are not walked")
}
