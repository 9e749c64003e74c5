package maintenance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestHistoryAnalyzePolicy: a day partition is analyzed once it has 1,000
// rows and no statistics, again each time it has grown fourfold since, and
// no more once an ANALYZE has seen HistoryAnalyzeRows rows; after a
// statistics reset (counters from 0) a partition the planner already counts
// as large is left alone.
func TestHistoryAnalyzePolicy(t *testing.T) {
	t.Parallel()
	mt := &Maintainer{cfg: Config{}.WithDefaults()} // HistoryAnalyzeRows 100,000
	for _, tc := range []struct {
		name          string
		live, mod     int64
		planned       float64
		stats, wanted bool
	}{
		{"empty", 0, 0, -1, false, false},
		{"too small", 999, 999, -1, false, false},
		{"first", 1_000, 1_000, -1, false, true},
		{"first, counted by a VACUUM", 1_500, 1_500, 1_200, false, true},
		{"grown 3x", 3_000, 2_000, 3_000, true, false},
		{"grown 4x", 4_000, 3_000, 3_000, true, false},
		{"grown past 4x", 4_001, 3_001, 3_000, true, true},
		{"last ANALYZE saw 64,000", 255_000, 191_000, 250_000, true, false},
		{"grown past 4x of 64,000", 257_000, 193_000, 250_000, true, true},
		{"an ANALYZE saw 100,000", 10_000_000, 9_900_000, 9_000_000, true, false},
		{"an ANALYZE saw 257,000", 600_000_000, 599_743_000, 500_000_000, true, false},
		// A crash reset the counters: live and modified count from 0.
		{"reset, planned large", 50_000, 50_000, 5_000_000, true, false},
		{"reset, planned small", 50_000, 50_000, 20_000, true, true},
		// A large partition never analyzed (autovacuum analyzed none since
		// 00090, the maintenance role was down): analyzed once, whatever
		// its size.
		{"large without statistics", 50_000_000, 50_000_000, 49_000_000, false, true},
	} {
		got := mt.needsHistoryAnalyze(db.PartitionRows{Table: "messages_p20261202", Live: tc.live,
			Modified: tc.mod, Planned: tc.planned, HasStats: tc.stats})
		require.Equal(t, tc.wanted, got, tc.name)
	}
}

// TestAnalyzesHistoryPartitionsWhileSmall: the vacuum loop analyzes a day
// partition of messages as it grows (autovacuum no longer does) and stops
// once an ANALYZE has seen HistoryAnalyzeRows rows; the empty partitions of
// the other days are never analyzed.
func TestAnalyzesHistoryPartitionsWhileSmall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	at := day(time.Now()).Add(time.Hour)
	part := partName("messages", at)
	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 20 * time.Millisecond,
		HistoryAnalyzeInterval: 50 * time.Millisecond, HistoryAnalyzeRows: 20_000})
	total := 0
	// insert adds n messages to the partition; the statistics are flushed at
	// the end of its transaction.
	insert := func(n int) {
		t.Helper()
		b.exec(t, fmt.Sprintf(`SELECT pg_stat_force_next_flush();
			INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
			SELECT '%s'::timestamptz + g * interval '1 millisecond', 1, 'k' || g %% 500, (g %% 32)::smallint, '\x7b7d', 2, '\x00'
			FROM generate_series(1, %d) g`, at.Format(time.RFC3339), n))
		total += n
	}
	// analyzed returns how many ANALYZEs of the partition there were and
	// the rows the last one saw.
	analyzed := func() (count, seen int64) {
		t.Helper()
		require.NoError(t, b.sql.QueryRow(ctx, `SELECT pg_stat_clear_snapshot()::text IS NULL`).Scan(new(bool)))
		require.NoError(t, b.sql.QueryRow(ctx, `SELECT analyze_count, n_live_tup - n_mod_since_analyze
			FROM pg_stat_user_tables WHERE relname = $1`, part).Scan(&count, &seen))
		return count, seen
	}
	// expect waits for the partition's count-th ANALYZE (after its
	// statistics show the rows), or, when none more is due, gives the loop
	// a dozen checks (600 ms of them) and finds none.
	expect := func(count int64) {
		t.Helper()
		if c, _ := analyzed(); c == count {
			r.waitVacuumCheck(t, time.Now().Add(600*time.Millisecond))
			c, _ = analyzed()
			require.Equal(t, count, c, "ANALYZEs of %s at %d rows", part, total)
			return
		}
		require.Eventually(t, func() bool { c, _ := analyzed(); return c >= count }, 10*time.Second, 20*time.Millisecond)
		c, seen := analyzed()
		require.Equal(t, count, c, "ANALYZEs of %s at %d rows", part, total)
		require.EqualValues(t, total, seen, "rows the last ANALYZE saw")
	}

	insert(900)
	expect(0) // too few rows
	insert(600)
	expect(1) // 1,500: the first statistics
	insert(4_400)
	expect(1) // 5,900: not yet four times 1,500
	insert(200)
	expect(2) // 6,100
	insert(20_000)
	expect(3) // 26,100: an ANALYZE has seen HistoryAnalyzeRows
	insert(100_000)
	expect(3) // 126,100: no more
	require.Equal(t, 3.0, value(t, r.mt.m.analyzes.WithLabelValues("messages")))
	require.Zero(t, value(t, r.mt.m.analyzes.WithLabelValues("delivery_attempts")), "empty partitions were analyzed")
}
