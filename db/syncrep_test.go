package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestMessageInsertManyRefusesWarnedCommit: a group commit whose statement
// drew a WARNING from the server — what PostgreSQL sends when a commit's wait
// for the synchronous standby is cut short, and then reports success — is
// answered EUNAVAILABLE (the client retries), never as stored. The warning
// comes here from a trigger of the test's own database; the fault suite's
// TestSyncStandbyBlocked produces the real one.
func TestMessageInsertManyRefusesWarnedCommit(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := context.Background()
	c, _ := dbtest.Carrier(t, store, nil)
	e, _ := dbtest.Endpoint(t, store, nil)

	// Without a warning: stored.
	res, err := store.MessageInsertMany(ctx, []db.NewMessage{newMsg(c.ID, "W1", "w-1", e.ID)})
	require.NoError(t, err)
	require.False(t, res[0].Duplicate)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
CREATE FUNCTION test_warn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE WARNING 'canceling wait for synchronous replication (test)'; RETURN NULL; END $$;
CREATE TRIGGER test_warn AFTER INSERT ON messages FOR EACH STATEMENT EXECUTE FUNCTION test_warn();`)
	require.NoError(t, err)

	_, err = store.MessageInsertMany(ctx, []db.NewMessage{newMsg(c.ID, "W2", "w-2", e.ID)})
	require.Error(t, err)
	require.Equal(t, hookrelay.EUNAVAILABLE, hookrelay.CodeOf(err))
	require.Contains(t, err.Error(), "synchronous standby")

	_, err = conn.Exec(ctx, `DROP TRIGGER test_warn ON messages`)
	require.NoError(t, err)
	// The retry of the refused callback finds it (the statement did commit)
	// and reports it as a duplicate; the first one too. No warning: success.
	res, err = store.MessageInsertMany(ctx, []db.NewMessage{newMsg(c.ID, "W2", "w-2", e.ID), newMsg(c.ID, "W1", "w-1", e.ID)})
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	require.True(t, res[1].Duplicate)
}
