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

// TestDueNotifyReachesListeners: an announcement reaches every listening
// session of the database with its sender's token, none of another database;
// a listener whose session is terminated reports it lost.
func TestDueNotifyReachesListeners(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := db.Open(ctx, db.Config{URL: dbtest.NewURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	other, err := db.Open(ctx, db.Config{URL: dbtest.NewURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(other.Close)

	var listeners []*db.DueListener
	for range 2 {
		l, err := store.ListenDue(ctx, "hookrelay-test-listen")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close(context.Background()) })
		listeners = append(listeners, l)
	}
	elsewhere, err := other.ListenDue(ctx, "hookrelay-test-listen")
	require.NoError(t, err)
	t.Cleanup(func() { elsewhere.Close(context.Background()) })

	require.NoError(t, store.DueNotify(ctx, "process-a"))
	require.NoError(t, store.DueNotify(ctx, "process-b"))
	for _, l := range listeners {
		for _, want := range []string{"process-a", "process-b"} {
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			got, err := l.Wait(wctx)
			wcancel()
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = elsewhere.Wait(wctx)
	wcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "another database's listener heard nothing")

	conn, err := pgx.Connect(ctx, dbtest.NewURL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	// A terminated session: Wait says so, as unavailable.
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", listeners[0].PID()).Scan(&ok))
	require.True(t, ok)
	wctx, wcancel = context.WithTimeout(ctx, 10*time.Second)
	_, err = listeners[0].Wait(wctx)
	wcancel()
	require.Error(t, err)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.ErrorCode(err), "%v", err)
	// The other listener still hears.
	require.NoError(t, store.DueNotify(ctx, "process-c"))
	wctx, wcancel = context.WithTimeout(ctx, 5*time.Second)
	got, err := listeners[1].Wait(wctx)
	wcancel()
	require.NoError(t, err)
	require.Equal(t, "process-c", got)
}
