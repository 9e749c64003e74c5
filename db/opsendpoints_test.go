package db_test

import (
	"testing"

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
