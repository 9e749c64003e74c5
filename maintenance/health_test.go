package maintenance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// TestHealthReportsIdleTransaction: a transaction left idle by another
// connection shows in the metrics, the health snapshot and a warning log
// within the sampling interval once it passes the threshold, and in one
// database.long_transaction operational webhook event.
func TestHealthReportsIdleTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.OpsEndpointCreate(t.Context(), "http://127.0.0.1:9/ops", []string{hookrelay.OpsEventDatabaseLongXact}, "", hookrelay.NewSecret())
	require.NoError(t, err)
	r := b.start(t, Config{HealthInterval: 100 * time.Millisecond, LongTransaction: time.Second, RetentionInterval: -1})

	other, err := pgx.Connect(t.Context(), b.url)
	require.NoError(t, err)
	defer other.Close(context.Background())
	tx, err := other.BeginTx(t.Context(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	var one int
	require.NoError(t, tx.QueryRow(t.Context(), "SELECT 1").Scan(&one)) // takes a snapshot: holds xmin
	pid := int(other.PgConn().PID())
	for i := range 3 { // transactions after the snapshot age its xmin
		_, err := b.sql.Exec(t.Context(), "INSERT INTO settings (name, value) VALUES ($1, 'x')", itoa(i))
		require.NoError(t, err)
	}

	require.Eventually(t, func() bool {
		return value(t, r.mt.m.longTransactions) >= 1 && value(t, r.mt.m.idleInTransaction) >= 1 &&
			value(t, r.mt.m.oldestXact) >= 1 && value(t, r.mt.m.oldestXminAge) >= 3
	}, 10*time.Second, 20*time.Millisecond)
	// The same idle transaction in another database of the cluster: listed
	// too, but as holding back only the shared catalogs' VACUUMs.
	cfg, err := pgx.ParseConfig(b.url)
	require.NoError(t, err)
	cfg.Database = "postgres"
	elsewhere, err := pgx.ConnectConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer elsewhere.Close(context.Background())
	otherTx, err := elsewhere.BeginTx(t.Context(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = otherTx.Rollback(context.Background()) }()
	require.NoError(t, otherTx.QueryRow(t.Context(), "SELECT 1").Scan(&one))
	otherPID := int(elsewhere.PgConn().PID())

	require.Eventually(t, func() bool { return containsPID(b.logs.String(), pid) }, 5*time.Second, 20*time.Millisecond,
		"no warning naming the session")
	require.Eventually(t, func() bool { return containsPID(b.logs.String(), otherPID) }, 5*time.Second, 20*time.Millisecond,
		"no warning naming the session of the other database")
	for _, line := range splitLines(b.logs.String()) {
		switch {
		case containsPID(line, pid):
			require.Contains(t, line, "holds back vacuum of this database's tables")
		case containsPID(line, otherPID):
			require.Contains(t, line, "in another database holds back vacuum of the shared catalogs")
		}
	}

	h, err := b.store.HealthSnapshotWith(t.Context(), db.HealthOptions{LongTransaction: time.Second})
	require.NoError(t, err)
	i := slices.IndexFunc(h.Sessions, func(s db.HealthSession) bool { return s.PID == pid })
	require.GreaterOrEqual(t, i, 0, "session not listed: %+v", h.Sessions)
	s := h.Sessions[i]
	require.True(t, s.SameDatabase)
	require.Equal(t, "idle in transaction", s.State)
	require.GreaterOrEqual(t, s.XactSeconds, 1.0)
	require.GreaterOrEqual(t, s.XminAge, 3)
	i = slices.IndexFunc(h.Sessions, func(s db.HealthSession) bool { return s.PID == otherPID })
	require.GreaterOrEqual(t, i, 0, "session of the other database not listed: %+v", h.Sessions)
	require.False(t, h.Sessions[i].SameDatabase)
	require.Equal(t, "postgres", h.Sessions[i].Database)
	require.GreaterOrEqual(t, h.LongTransactions, 1)
	require.GreaterOrEqual(t, h.IdleInTransaction, 1)
	require.Positive(t, h.MaxConnections)
	require.NotEmpty(t, h.Tables)
	require.NotEmpty(t, h.Partitions)

	// Its first sighting, and only that, is an operational webhook event.
	waitSamples(t, r, 3) // a few more samples
	var events int
	require.NoError(t, b.sql.QueryRow(t.Context(), `SELECT count(*) FROM ops_events
		WHERE type = 'database.long_transaction' AND (data->>'pid')::int = $1
		AND data->>'state' = 'idle in transaction' AND (data->>'same_database')::boolean`, pid).Scan(&events))
	require.Equal(t, 1, events)

	// Once it ends, this session is no longer listed.
	require.NoError(t, tx.Rollback(t.Context()))
	h, err = b.store.HealthSnapshotWith(t.Context(), db.HealthOptions{LongTransaction: time.Second})
	require.NoError(t, err)
	require.False(t, slices.ContainsFunc(h.Sessions, func(s db.HealthSession) bool { return s.PID == pid }))
}

// TestHealthReportsAutovacuumOff: the snapshot, the gauge and (when off) a
// warning say whether the server runs autovacuum. The CI server runs without
// it (its conf.d turns it off), so there the warning is what is checked.
func TestHealthReportsAutovacuumOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var setting string
	require.NoError(t, b.sql.QueryRow(t.Context(), "SHOW autovacuum").Scan(&setting))
	on := setting == "on"
	r := b.start(t, Config{HealthInterval: 50 * time.Millisecond, RetentionInterval: -1})
	want := 1.0
	if on {
		want = 0
	}
	require.Eventually(t, func() bool {
		return value(t, r.mt.m.leader.WithLabelValues()) == 1 && value(t, r.mt.m.maxConnections) > 0
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, want, value(t, r.mt.m.autovacuumOff))
	h, err := b.store.HealthSnapshotWith(t.Context(), db.HealthOptions{})
	require.NoError(t, err)
	require.Equal(t, on, h.Autovacuum)
	warned := func() int { return strings.Count(b.logs.String(), "autovacuum off") }
	if on {
		require.Zero(t, warned())
		return
	}
	require.Eventually(t, func() bool { return warned() == 1 }, 5*time.Second, 20*time.Millisecond)
	waitSamples(t, r, 6) // warned once an hour, not at each sample
	require.Equal(t, 1, warned())
}

func containsPID(logs string, pid int) bool {
	for _, line := range splitLines(logs) {
		if contains(line, "long transaction") && contains(line, `"pid":`+itoa(pid)+",") {
			return true
		}
	}
	return false
}

// waitSamples waits until the maintainer of r has taken and published n
// more health samples.
func waitSamples(t *testing.T, r *running, n int) {
	t.Helper()
	samples := r.mt.m.samples.WithLabelValues("health")
	want := value(t, samples) + float64(n)
	require.Eventually(t, func() bool { return value(t, samples) >= want }, 10*time.Second, 10*time.Millisecond,
		"%d more health samples", n)
}
