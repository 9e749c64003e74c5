package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueueTableFillfactorFollowsLiveRows: the migrations leave the queue
// table sparse; once its live rows pass PackAbove the vacuum loop packs it,
// and once they fall under SparseBelow (SparseAfter later) makes it sparse
// again. Rows inserted meanwhile go where the fillfactor of the moment puts
// them: ~5 per page sparse, dozens packed.
func TestQueueTableFillfactorFollowsLiveRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	fillfactor := func() int {
		t.Helper()
		var ff int
		require.NoError(t, b.sql.QueryRow(ctx, `SELECT coalesce((SELECT option_value::int FROM pg_options_to_table(reloptions)
			WHERE option_name = 'fillfactor'), 100) FROM pg_class WHERE oid = 'deliveries'::regclass`).Scan(&ff))
		return ff
	}
	pagesFor := func(rows int) int64 {
		t.Helper()
		var before, after int64
		require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_relation_size('deliveries') / 8192").Scan(&before))
		_, err := b.sql.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
			SELECT 0, 1, 'k' || g, g, now() FROM generate_series(1, $1::int) g`, rows)
		require.NoError(t, err)
		_, err = b.sql.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		require.NoError(t, err)
		require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_relation_size('deliveries') / 8192").Scan(&after))
		return after - before
	}
	require.Equal(t, 10, fillfactor(), "migration 00080")
	require.GreaterOrEqual(t, pagesFor(500), int64(50), "sparse: a few rows per page")

	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 50 * time.Millisecond,
		PackAbove: 400, SparseBelow: 100, SparseAfter: 200 * time.Millisecond})
	require.Eventually(t, func() bool { return fillfactor() == 70 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 70.0, value(t, r.mt.m.fillfactor.WithLabelValues("deliveries")))
	require.Less(t, pagesFor(500), int64(30), "packed: dozens of rows per page")

	_, err := b.sql.Exec(ctx, "DELETE FROM deliveries; SELECT pg_stat_force_next_flush()")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return fillfactor() == 10 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 10.0, value(t, r.mt.m.fillfactor.WithLabelValues("deliveries")))
}
