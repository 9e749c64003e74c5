package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVacuumsHotTableWhenDeadTuplesPileUp: deleting a batch of deliveries
// leaves dead tuples; the vacuum loop notices within its interval and runs
// VACUUM, and the dead tuples are gone.
func TestVacuumsHotTableWhenDeadTuplesPileUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 50 * time.Millisecond,
		VacuumMinDead: 100, VacuumDeadTuples: 1000})
	ctx := t.Context()
	_, err := b.sql.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT 0, 1, 'k' || g, g, now() FROM generate_series(1, 5000) g`)
	require.NoError(t, err)
	// One implicit transaction: its end flushes the statistics at once.
	_, err = b.sql.Exec(ctx, "SELECT pg_stat_force_next_flush(); DELETE FROM deliveries")
	require.NoError(t, err)

	require.Eventually(t, func() bool { return value(t, r.mt.m.vacuums.WithLabelValues("deliveries")) >= 1 },
		10*time.Second, 20*time.Millisecond)
	var dead int64
	require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_stat_clear_snapshot()::text IS NULL").Scan(new(bool)))
	require.NoError(t, b.sql.QueryRow(ctx, "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'deliveries'").Scan(&dead))
	require.Less(t, dead, int64(100))
	require.Zero(t, value(t, r.mt.m.vacuums.WithLabelValues("endpoint_health")), "a table without dead tuples was vacuumed")
}
