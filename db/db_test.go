package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	// Several processes starting at once: each opens its own pool and migrates.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			store, err := db.Open(ctx, db.Config{URL: url, MaxConns: 2})
			if err != nil {
				errs[i] = err
				return
			}
			defer store.Close()
			_, errs[i] = store.Migrate(ctx, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	store := dbtest.Open(t, url, db.Config{})
	applied, err := store.Migrate(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, applied, "a second migrate applies nothing")
}

func TestEnsureDatabaseCreatesMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	_ = store
	// The test database exists: EnsureDatabase is a no-op on it.
	require.NoError(t, db.EnsureDatabase(ctx, url))
}

func TestSessionSettings(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, dbtest.NewURL(t), db.Config{
		StatementTimeout:         7 * time.Second,
		IdleInTransactionTimeout: 11 * time.Second,
		LockTimeout:              3 * time.Second,
	})
	got, err := store.SessionSettings(context.Background())
	require.NoError(t, err)
	require.Equal(t, "7s", got["statement_timeout"])
	require.Equal(t, "11s", got["idle_in_transaction_session_timeout"])
	require.Equal(t, "3s", got["lock_timeout"])
}

func TestPartitionsAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	future := time.Now().AddDate(0, 0, 10)
	n, err := store.EnsurePartitions(ctx, future, 2)
	require.NoError(t, err)
	require.Equal(t, 16, n, "4 days x 4 partitioned tables")
	n, err = store.EnsurePartitions(ctx, future, 2)
	require.NoError(t, err)
	require.Zero(t, n, "idempotent")
}

func TestSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	_, err := store.SettingGet(ctx, "nope")
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	ok, err := store.SettingPutIfAbsent(ctx, "k", "v1")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = store.SettingPutIfAbsent(ctx, "k", "v2")
	require.NoError(t, err)
	require.False(t, ok)
	v, err := store.SettingGet(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v1", v)
}

// Creating partitions must not wait for (or deadlock with) transactions that
// are writing to the partitioned tables: ATTACH PARTITION needs only SHARE
// UPDATE EXCLUSIVE on the parent.
func TestEnsurePartitionsDoesNotBlockWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{LockTimeout: 2 * time.Second})
	writer, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer writer.Close(ctx)
	tx, err := writer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	// An open writing transaction on every partitioned parent.
	_, err = tx.Exec(ctx, `INSERT INTO messages (carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
		VALUES (1, 'k', 0, '{}', 2, '\x00')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (carrier_id, idem_key, day, message_id, message_received_at)
		VALUES (1, 'k', current_date, 1, now())`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, outcome)
		VALUES (1, 1, now(), 1, 1, 'success')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO carrier_refusals (carrier_id, received_at, status, reason, message)
		VALUES (1, now(), 400, 'parse', 'm')`)
	require.NoError(t, err)

	n, err := store.EnsurePartitions(ctx, time.Now().AddDate(0, 0, 20), 1)
	require.NoError(t, err, "partition creation waited for the writers (lock_timeout 2s)")
	require.Equal(t, 12, n)
}
