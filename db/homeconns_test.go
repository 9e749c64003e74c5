package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestHotStatementsKeepTheirSessions checks the home connections of the hot
// statements: the same sessions come back, no more than a quarter of the
// pool is kept, a connection that saw an error is not kept, and closing the
// store does not wait for them.
func TestHotStatementsKeepTheirSessions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store, err := db.Open(ctx, db.Config{URL: url, MaxConns: 8}) // two home connections
	require.NoError(t, err)

	pids, home, held, err := db.ClaimHomeLeases(ctx, store, 3, nil)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false}, home, "a third lease at once is a plain pool connection")
	require.Equal(t, 2, held)
	kept := map[int32]bool{pids[0]: true, pids[1]: true}

	for range 5 {
		again, home, held, err := db.ClaimHomeLeases(ctx, store, 2, nil)
		require.NoError(t, err)
		require.Equal(t, []bool{true, true}, home)
		require.Equal(t, 2, held)
		require.True(t, kept[again[0]] && kept[again[1]], "home sessions %v, got %v", kept, again)
	}

	_, _, held, err = db.ClaimHomeLeases(ctx, store, 1, []error{errors.New("statement failed")})
	require.NoError(t, err)
	require.Equal(t, 1, held, "a connection whose statement failed goes back to the pool")

	// A home session ended by the server (a restart, pg_terminate_backend)
	// while it waited is noticed by a ping, not by a failed statement.
	idle, _, _, err := db.ClaimHomeLeases(ctx, store, 1, nil)
	require.NoError(t, err)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	var ended bool
	require.NoError(t, admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", idle[0]).Scan(&ended))
	require.True(t, ended)
	time.Sleep(1100 * time.Millisecond)
	after, home, _, err := db.ClaimHomeLeases(ctx, store, 1, nil)
	require.NoError(t, err, "the ended session was handed out")
	require.True(t, home[0])
	require.NotEqual(t, idle[0], after[0])

	done := make(chan struct{})
	go func() {
		store.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for the home connections")
	}
}
