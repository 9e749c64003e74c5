package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestPipelineIsOneTransaction: the statements of a pipeline commit together
// or not at all, and each sees what the ones before it did.
func TestPipelineIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbtest.NewURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE TABLE pipe (x integer)")
	require.NoError(t, err)
	const insert = "WITH i AS (INSERT INTO pipe VALUES (1) RETURNING 1) SELECT count(*) FROM i"
	const count = "SELECT count(*) FROM pipe"

	got, err := db.RunPipeline(ctx, conn, insert, count, insert, count)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 1, 1, 2}, got, "each statement sees the ones before it")

	_, err = db.RunPipeline(ctx, conn, insert, "SELECT 1/0", insert)
	require.ErrorContains(t, err, "division by zero")
	var n int64
	require.NoError(t, conn.QueryRow(ctx, count).Scan(&n))
	require.EqualValues(t, 2, n, "the failed pipeline's insert was rolled back")
	require.Equal(t, byte('I'), conn.PgConn().TxStatus(), "no transaction left open")

	got, err = db.RunPipeline(ctx, conn, count)
	require.NoError(t, err)
	require.Equal(t, []int64{2}, got, "the connection is usable after a failed pipeline")

	// A setting made for the transaction (as the acknowledgement makes
	// synchronous_commit off) holds for the statements after it, up to the
	// commit, and not beyond.
	const asyncCommit = "SELECT (set_config('synchronous_commit', 'off', true) = 'off')::int::bigint"
	const isAsync = "SELECT (current_setting('synchronous_commit') = 'off')::int::bigint"
	got, err = db.RunPipeline(ctx, conn, asyncCommit, isAsync)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 1}, got)
	got, err = db.RunPipeline(ctx, conn, isAsync)
	require.NoError(t, err)
	require.Equal(t, []int64{0}, got, "the setting ended with the pipeline's transaction")
}
