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

// TestOpsEventsOnlyForTransitionsAndSubscribers: enable and disable write an
// outbox event only when the status actually changes, and only for a type
// some ops endpoint wants.
func TestOpsEventsOnlyForTransitionsAndSubscribers(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	take := func() []db.OpsOutboxEvent {
		t.Helper()
		var got []db.OpsOutboxEvent
		ran, err := store.OpsFanout(ctx, 0, 100, func(evs []db.OpsOutboxEvent) []db.OpsMessage {
			got = append(got, evs...)
			return nil
		})
		require.NoError(t, err)
		require.True(t, ran)
		return got
	}
	ep, _ := dbtest.Endpoint(t, store, nil)
	_, err := store.EndpointDisable(ctx, ep.ID, "nobody listens")
	require.NoError(t, err)
	require.Empty(t, take(), "no ops endpoint: nothing written")
	_, err = store.EndpointEnable(ctx, ep.ID)
	require.NoError(t, err)

	_, err = store.OpsEndpointCreate(ctx, "http://127.0.0.1:9/ops",
		[]string{hookrelay.OpsEventEndpointDisabled, hookrelay.OpsEventEndpointEnabled}, "", hookrelay.NewSecret())
	require.NoError(t, err)
	_, err = store.EndpointDisable(ctx, ep.ID, "first")
	require.NoError(t, err)
	_, err = store.EndpointDisable(ctx, ep.ID, "again")
	require.NoError(t, err)
	_, err = store.EndpointEnable(ctx, ep.ID)
	require.NoError(t, err)
	_, err = store.EndpointEnable(ctx, ep.ID)
	require.NoError(t, err)
	require.NoError(t, store.OpsLongTransaction(ctx, db.LongTransaction{PID: 1}))
	got := take()
	require.Len(t, got, 2, "one disable, one enable; the repeats and the unwanted type wrote nothing")
	require.Equal(t, hookrelay.OpsEventEndpointDisabled, got[0].Type)
	require.JSONEq(t, `{"endpoint_id":"`+itoa(int(ep.ID))+`","merchant_id":"`+itoa(int(ep.MerchantID))+`","reason":"first","trigger":"manual"}`, string(got[0].Data))
	require.Equal(t, hookrelay.OpsEventEndpointEnabled, got[1].Type)
	require.Equal(t, ep.ID, got[1].EndpointID)
	require.Empty(t, take(), "taken rows are gone")

	_, err = store.EndpointDisable(ctx, 1<<40, "")
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
}

// TestOpsDue: a round of operational webhooks has work while the outbox
// holds a row the fan-out would take (a dead letter only once its
// endpoint's coalescing window is over) or a message is due for an
// attempt, and none once they are taken.
func TestOpsDue(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	due := func(coalesce time.Duration) bool {
		t.Helper()
		ok, err := store.OpsDue(ctx, coalesce)
		require.NoError(t, err)
		return ok
	}
	require.False(t, due(time.Minute), "nothing queued")

	_, err = store.OpsEndpointCreate(ctx, "http://127.0.0.1:9/ops", []string{hookrelay.OpsEventEndpointDisabled}, "", hookrelay.NewSecret())
	require.NoError(t, err)
	ep, _ := dbtest.Endpoint(t, store, nil)
	_, err = store.EndpointDisable(ctx, ep.ID, "ops due")
	require.NoError(t, err)
	require.True(t, due(time.Minute), "an outbox row")

	_, err = store.OpsFanout(ctx, time.Minute, 100, func(evs []db.OpsOutboxEvent) []db.OpsMessage {
		return []db.OpsMessage{{Type: evs[0].Type, MsgID: "msg_ops_due", Payload: []byte(`{}`)}}
	})
	require.NoError(t, err)
	require.True(t, due(time.Minute), "a message due")
	claimed, err := store.OpsDeliveryClaim(ctx, 10, time.Hour)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.False(t, due(time.Minute), "the message is leased")

	_, err = conn.Exec(ctx, `INSERT INTO ops_events (type, endpoint_id) VALUES ('delivery.dead_lettered', $1)`, ep.ID)
	require.NoError(t, err)
	require.False(t, due(time.Minute), "a dead letter within its coalescing window")
	require.True(t, due(time.Nanosecond), "… and once the window is over")
}
