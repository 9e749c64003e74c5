package db_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func newMsg(carrierID int64, key, idem string, eps ...int64) db.NewMessage {
	p := []byte(`{"tracking_no":"` + key + `"}`)
	sum := sha256.Sum256(p)
	return db.NewMessage{
		CarrierID: carrierID, OrderingKey: key, EventType: "delivered", Queue: hookrelay.QueueFor(key, 32),
		IdempotencyKey: idem, Payload: p, PayloadSize: len(p), PayloadSHA256: sum[:], EndpointIDs: eps,
	}
}

func TestMessageInsertManyStoresMessagesAndDeliveries(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	e1, _ := dbtest.Endpoint(t, store, nil)
	e2, _ := dbtest.Endpoint(t, store, nil)

	res, err := store.MessageInsertMany(ctx, []db.NewMessage{
		newMsg(c.ID, "A1", "", e1.ID, e2.ID),
		newMsg(c.ID, "A2", "", e1.ID),
		newMsg(c.ID, "A3", ""),
	})
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.Len(t, res[0].DeliveryIDs, 2)
	require.Len(t, res[1].DeliveryIDs, 1)
	require.Empty(t, res[2].DeliveryIDs)
	require.NotEqual(t, res[0].ID, res[1].ID)
	for i, r := range res {
		m, err := dbtest.MessageGet(ctx, store, r.ID, r.ReceivedAt)
		require.NoError(t, err)
		require.Equal(t, []byte(`{"tracking_no":"A`+string(rune('1'+i))+`"}`), m.Payload)
		require.Equal(t, r.Deliveries, m.Deliveries)
	}
	_, err = dbtest.MessageGet(ctx, store, res[0].ID+1000, res[0].ReceivedAt)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
}

// TestMessageInsertManyIDsInInputOrder: the statement takes the ids of a
// batch in input order (chains are ordered by delivery id), keeps a message
// id reserved beforehand, and files each delivery under its own message and
// endpoint.
func TestMessageInsertManyIDsInInputOrder(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	e1, _ := dbtest.Endpoint(t, store, nil)
	e2, _ := dbtest.Endpoint(t, store, nil)
	reserved, err := store.MessageIDsReserve(ctx, 1)
	require.NoError(t, err)
	var msgs []db.NewMessage
	for i := range 40 {
		eps := []int64{e1.ID, e2.ID}
		if i%3 == 0 {
			eps = []int64{e2.ID}
		}
		m := newMsg(c.ID, fmt.Sprintf("O%d", i%7), "", eps...)
		if i == 17 {
			m.ID = reserved[0]
		}
		msgs = append(msgs, m)
	}
	res, err := store.MessageInsertMany(ctx, msgs)
	require.NoError(t, err)
	require.Equal(t, reserved[0], res[17].ID, "the reserved id is kept")
	var lastMsg, lastDel int64
	for i, r := range res {
		if i != 17 {
			require.Greater(t, r.ID, lastMsg, "message %d", i)
			lastMsg = r.ID
		}
		require.Len(t, r.DeliveryIDs, len(msgs[i].EndpointIDs))
		for j, id := range r.DeliveryIDs {
			require.Greater(t, id, lastDel, "delivery %d of message %d", j, i)
			lastDel = id
			d, _, err := store.DeliveryGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, r.ID, d.MessageID)
			require.Equal(t, msgs[i].EndpointIDs[j], d.EndpointID)
			require.Equal(t, msgs[i].OrderingKey, d.OrderingKey)
		}
	}
}

func TestMessageInsertManyOffloadedAndReservedID(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	ids, err := store.MessageIDsReserve(ctx, 2)
	require.NoError(t, err)
	require.Len(t, ids, 2)
	c, _ := dbtest.Carrier(t, store, nil)
	m := newMsg(c.ID, "K", "")
	m.ID, m.Payload, m.PayloadKey = ids[1], nil, "payloads/x/1"
	res, err := store.MessageInsertMany(ctx, []db.NewMessage{m})
	require.NoError(t, err)
	require.Equal(t, ids[1], res[0].ID)
	got, err := dbtest.MessageGetByID(ctx, store, ids[1])
	require.NoError(t, err)
	require.Nil(t, got.Payload)
	require.Equal(t, "payloads/x/1", got.PayloadKey)
}

func TestMessageInsertManyIdempotency(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	other, _ := dbtest.Carrier(t, store, nil)
	ep, _ := dbtest.Endpoint(t, store, nil)

	// Within one batch: the second use of a key is a duplicate of the first.
	res, err := store.MessageInsertMany(ctx, []db.NewMessage{
		newMsg(c.ID, "K1", "idem-1", ep.ID),
		newMsg(c.ID, "K1", "idem-1", ep.ID),
		newMsg(other.ID, "K1", "idem-1", ep.ID), // another carrier: its own key space
	})
	require.NoError(t, err)
	require.False(t, res[0].Duplicate)
	require.True(t, res[1].Duplicate)
	require.Equal(t, res[0].ID, res[1].ID)
	require.Equal(t, 1, res[1].Deliveries)
	require.False(t, res[2].Duplicate)

	// Across batches.
	res2, err := store.MessageInsertMany(ctx, []db.NewMessage{newMsg(c.ID, "K1", "idem-1", ep.ID), newMsg(c.ID, "K2", "idem-2", ep.ID)})
	require.NoError(t, err)
	require.True(t, res2[0].Duplicate)
	require.Equal(t, res[0].ID, res2[0].ID)
	require.Nil(t, res2[0].DeliveryIDs)
	require.False(t, res2[1].Duplicate)
}

func TestMessageInsertManyConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	ep, _ := dbtest.Endpoint(t, store, nil)
	const n = 8
	results := make([]db.StoredMessage, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := store.MessageInsertMany(ctx, []db.NewMessage{newMsg(c.ID, "K", "same", ep.ID)})
			require.NoError(t, err)
			results[i] = res[0]
		}()
	}
	close(start)
	wg.Wait()
	firsts := 0
	for _, r := range results {
		require.Equal(t, results[0].ID, r.ID)
		if !r.Duplicate {
			firsts++
		}
	}
	require.Equal(t, 1, firsts, "exactly one request stores the message")
	got, err := dbtest.MessageGetByID(ctx, store, results[0].ID)
	require.NoError(t, err)
	require.Equal(t, "same", got.IdempotencyKey)
}

// BenchmarkMessageInsertMany stores batches of 25 callbacks with one
// delivery each, one batch at a time: the latency of a group commit.
func BenchmarkMessageInsertMany(b *testing.B) {
	store := dbtest.New(b)
	c, _ := dbtest.Carrier(b, store, nil)
	ep, _ := dbtest.Endpoint(b, store, nil)
	batch := make([]db.NewMessage, 25)
	for i := range batch {
		batch[i] = newMsg(c.ID, "k"+string(rune('a'+i)), "", ep.ID)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := store.MessageInsertMany(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIDReservationsKeepTheirPlan checks that the id reservation, run for
// every offloaded payload, is not planned again at every execution: PostgreSQL
// tries five custom plans and keeps the generic one only when it does not
// look costlier (a generate_series(1, n) sized by its argument did, and was
// planned at every call).
func TestIDReservationsKeepTheirPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for i := range 12 {
		require.NoError(t, db.ReserveIDsOn(ctx, conn, 3+i*7))
	}
	rows, err := conn.Query(ctx, `SELECT substring(statement FROM 'name: (\w+)'), generic_plans, custom_plans
		FROM pg_prepared_statements
		WHERE statement LIKE '%IDsReserve%' AND statement NOT LIKE '%pg_prepared_statements%'`)
	require.NoError(t, err)
	seen := 0
	for rows.Next() {
		var name string
		var generic, custom int64
		require.NoError(t, rows.Scan(&name, &generic, &custom))
		require.LessOrEqual(t, custom, int64(5), "%s: %d custom plans in 12 executions", name, custom)
		require.GreaterOrEqual(t, generic, int64(7), name)
		seen++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 1, seen)
}
