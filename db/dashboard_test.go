package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// finish claims the head delivery of key and acknowledges it with kind.
func finish(t *testing.T, store *db.DB, key string, kind db.AckKind) int64 {
	t.Helper()
	ctx := context.Background()
	rows, err := dbtest.DeliveryClaim(ctx, store, []int{hookrelay.QueueFor(key, 32)}, 50, 50, 1, 77, time.Minute)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	r := rows[0]
	res := db.DeliveryResult{ID: r.ID, LeaseToken: 77, EndpointID: r.EndpointID, Kind: kind, Spend: true,
		Outcome: "success", Status: 200, Latency: 12 * time.Millisecond, Excerpt: "ok", AttemptedAt: time.Now()}
	if kind == db.AckDead {
		res.Outcome, res.Status, res.Error, res.Excerpt = "failed", 500, "HTTP 500", "down"
	}
	_, err = store.DeliveryAckBatch(ctx, 1, []db.DeliveryResult{res}, nil,
		db.HealthPolicy{Threshold: 10, BaseBackoff: time.Minute, MaxBackoff: time.Hour, DisableAfter: 100 * time.Hour})
	require.NoError(t, err)
	return r.ID
}

func TestDashboardOverviewAndDeliveryStates(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	ep, _ := dbtest.Endpoint(t, store, nil)
	keys := []string{"A-1", "B-2", "C-3"}
	for _, k := range keys {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: k})
	}

	o, err := store.OverviewGet(ctx, 32, true)
	require.NoError(t, err)
	require.Len(t, o.Backlog, 32)
	for _, k := range keys {
		require.Positive(t, o.Backlog[hookrelay.QueueFor(k, 32)], k)
	}
	var total int64
	for _, n := range o.Backlog {
		total += n
	}
	require.EqualValues(t, 3, total)
	require.False(t, o.OldestPending.IsZero())
	require.Zero(t, o.DeadLetters)
	require.True(t, o.DeadLettersExact)

	deadID := finish(t, store, "A-1", db.AckDead)
	okID := finish(t, store, "B-2", db.AckSuccess)
	o, err = store.OverviewGet(ctx, 32, true)
	require.NoError(t, err)
	require.EqualValues(t, 1, o.DeadLetters)

	v, err := store.DeliveryRead(ctx, deadID)
	require.NoError(t, err)
	require.Equal(t, "dead", v.State)
	require.NotNil(t, v.DeadLetter)
	require.Len(t, v.Attempts, 1)
	require.Equal(t, 500, v.Attempts[0].StatusCode)
	require.Equal(t, "down", v.Attempts[0].ResponseExcerpt)

	v, err = store.DeliveryRead(ctx, okID)
	require.NoError(t, err)
	require.Equal(t, "delivered", v.State)
	require.Equal(t, ep.ID, v.EndpointID)
	require.Equal(t, 12*time.Millisecond, v.Attempts[0].Latency)

	pending, err := store.DeliveryListPendingNewest(ctx, ep.ID, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	v, err = store.DeliveryRead(ctx, pending[0].ID)
	require.NoError(t, err)
	require.Equal(t, "pending", v.State)
	m, err := store.MessageRead(ctx, v.MessageID, &v.ReceivedAt, 0)
	require.NoError(t, err)
	require.Equal(t, "C-3", m.OrderingKey)
	require.JSONEq(t, `{"tracking_no":"C-3","status":"delivered"}`, string(m.Payload))

	_, err = store.DeliveryRead(ctx, 987654321)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	_, err = store.MessageRead(ctx, 987654321, nil, 0)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	recent, err := store.AttemptListRecent(ctx, ep.ID, time.Now().Add(-time.Hour), time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, recent, 2)
	require.False(t, recent[0].AttemptedAt.Before(recent[1].AttemptedAt), "newest first")

	eps, err := store.EndpointStatusList(ctx, ep.MerchantID, 0, 10)
	require.NoError(t, err)
	require.Len(t, eps, 1)
	n, err := store.DeliveryCountByEndpoint(ctx, []int64{ep.ID, 987654}, 100)
	require.NoError(t, err)
	require.Equal(t, map[int64]int64{ep.ID: 1, 987654: 0}, n)
}

func TestDashboardDeadLettersKeysetAndFilters(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	epA, _ := dbtest.Endpoint(t, store, nil)
	epB, _ := dbtest.Endpoint(t, store, nil)
	var all []int64
	for i := range 5 {
		ep := epA
		if i%2 == 1 {
			ep = epB
		}
		key := fmt.Sprintf("DL-%d", i)
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: key})
		all = append(all, finish(t, store, key, db.AckDead))
	}

	// Pages of two, newest first, cover every dead letter once.
	var seen []int64
	cur := db.DeadLetterPage{Newest: true}
	for {
		page, err := store.DeadLetterList(ctx, db.DeadLetterFilter{}, cur, 2)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		for i, d := range page {
			seen = append(seen, d.ID)
			if i > 0 {
				require.False(t, d.CreatedAt.After(page[i-1].CreatedAt))
			}
		}
		last := page[len(page)-1]
		cur.At, cur.ID = last.CreatedAt, last.ID
	}
	require.ElementsMatch(t, all, seen)
	require.Len(t, seen, 5)

	byA, err := store.DeadLetterList(ctx, db.DeadLetterFilter{EndpointID: epA.ID}, db.DeadLetterPage{Newest: true}, 10)
	require.NoError(t, err)
	require.Len(t, byA, 3)
	byMerchantB, err := store.DeadLetterList(ctx, db.DeadLetterFilter{MerchantID: epB.MerchantID}, db.DeadLetterPage{Newest: true}, 10)
	require.NoError(t, err)
	require.Len(t, byMerchantB, 2)
	future, err := store.DeadLetterList(ctx, db.DeadLetterFilter{Since: time.Now().Add(time.Hour)}, db.DeadLetterPage{Newest: true}, 10)
	require.NoError(t, err)
	require.Empty(t, future)

	n, err := store.DeadLetterCount(ctx, db.DeadLetterFilter{}, 3)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "capped")
	n, err = store.DeadLetterCount(ctx, db.DeadLetterFilter{EndpointID: epB.ID}, 100)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)

	got, err := store.DeadLetterGet(ctx, all[0])
	require.NoError(t, err)
	require.Equal(t, epA.ID, got.EndpointID)
	require.Equal(t, 1, got.Attempts)
}

// The id sets of a filter (an operator's scope) keep their members only: nil
// limits nothing, an empty set matches none; the list, the count, retry and
// discard apply them alike, by filter and by ids.
func TestDeadLetterFilterSets(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	epA, _ := dbtest.Endpoint(t, store, nil)
	epB, _ := dbtest.Endpoint(t, store, nil)
	var ids []int64
	var carriers []int64
	for i, ep := range []db.Endpoint{epA, epA, epB} {
		key := fmt.Sprintf("SET-%d", i)
		m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: key})
		ids = append(ids, finish(t, store, key, db.AckDead))
		msg, err := dbtest.MessageGetByID(ctx, store, m.ID)
		require.NoError(t, err)
		carriers = append(carriers, msg.CarrierID)
	}
	count := func(f db.DeadLetterFilter) int64 {
		t.Helper()
		n, err := store.DeadLetterCount(ctx, f, 100)
		require.NoError(t, err)
		rows, err := store.DeadLetterList(ctx, f, db.DeadLetterPage{}, 100)
		require.NoError(t, err)
		require.EqualValues(t, n, len(rows), "the list and the count agree")
		return n
	}
	require.EqualValues(t, 3, count(db.DeadLetterFilter{}))
	require.EqualValues(t, 2, count(db.DeadLetterFilter{MerchantIDs: []int64{epA.MerchantID}}))
	require.EqualValues(t, 3, count(db.DeadLetterFilter{MerchantIDs: []int64{epA.MerchantID, epB.MerchantID}}))
	require.EqualValues(t, 0, count(db.DeadLetterFilter{MerchantIDs: []int64{}}), "an empty set matches none")
	require.EqualValues(t, 0, count(db.DeadLetterFilter{MerchantID: epB.MerchantID, MerchantIDs: []int64{epA.MerchantID}}))
	require.EqualValues(t, 1, count(db.DeadLetterFilter{CarrierIDs: []int64{carriers[1]}}))
	require.EqualValues(t, 0, count(db.DeadLetterFilter{CarrierIDs: []int64{carriers[2]}, MerchantIDs: []int64{epA.MerchantID}}))

	// By ids, the sets still limit: B's dead letter stays.
	n, err := store.DeadLetterDiscard(ctx, ids, db.DeadLetterFilter{MerchantIDs: []int64{epA.MerchantID}, CarrierIDs: []int64{carriers[0]}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = store.DeadLetterRetry(ctx, ids, db.DeadLetterFilter{MerchantIDs: []int64{epA.MerchantID}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = store.DeadLetterRetry(ctx, nil, db.DeadLetterFilter{MerchantIDs: []int64{}})
	require.NoError(t, err)
	require.EqualValues(t, 0, n)
	left, err := store.DeadLetterList(ctx, db.DeadLetterFilter{}, db.DeadLetterPage{}, 10)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, ids[2], left[0].ID)
}
