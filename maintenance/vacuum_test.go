package maintenance

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
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

// TestAnalyzesTableThatOutgrewItsStatistics: a VACUUM of the emptied queue
// table records 0 rows over its pages, and the planner then takes it for
// empty however large it grows; a backlog arriving next is counted by
// n_live_tup at once, and the vacuum loop runs ANALYZE (autovacuum is off
// for the table here, so nothing else would), bringing the planner's count
// to the table's.
func TestAnalyzesTableThatOutgrewItsStatistics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	exec := func(sql string) { t.Helper(); b.exec(t, sql) }
	b.fillDeliveries(t, 5000)
	exec("SELECT pg_stat_force_next_flush(); DELETE FROM deliveries")
	exec("VACUUM deliveries")
	planned := func() (pages int, tuples float64) {
		t.Helper()
		require.NoError(t, b.sql.QueryRow(ctx, "SELECT relpages, reltuples FROM pg_class WHERE relname = 'deliveries'").Scan(&pages, &tuples))
		return pages, tuples
	}
	pages, tuples := planned()
	require.Positive(t, pages)
	require.Zero(t, tuples, "a VACUUM of the empty table counts 0 rows over its pages")

	// No dead tuples, so no VACUUM will come to correct the count.
	// One implicit transaction: its end flushes the statistics at once.
	exec(`SELECT pg_stat_force_next_flush(); INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT 0, 1, 'k' || g, g, now() FROM generate_series(1, 20000) g`)
	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 50 * time.Millisecond})
	require.Eventually(t, func() bool { return value(t, r.mt.m.analyzes.WithLabelValues("deliveries")) >= 1 },
		10*time.Second, 20*time.Millisecond)
	_, tuples = planned()
	require.InDelta(t, 20000, tuples, 2000, "the planner's row count after the ANALYZE")
	require.Zero(t, value(t, r.mt.m.vacuums.WithLabelValues("deliveries")), "no dead tuples: no VACUUM")

	// The count now matches: no further ANALYZE in the checks of 300 ms.
	r.waitVacuumCheck(t, time.Now().Add(300*time.Millisecond))
	require.Equal(t, 1.0, value(t, r.mt.m.analyzes.WithLabelValues("deliveries")))
}

// TestHeapPassesBetweenFullVacuums: within VacuumFullGap of a full VACUUM
// the loop runs heap passes (INDEX_CLEANUP OFF): the deleted rows' storage is
// gone (no normal line pointer left) but their line pointers stay dead
// (lp_flags 3) for the next full VACUUM, which sets them unused.
func TestHeapPassesBetweenFullVacuums(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.sql.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pageinspect")
	require.NoError(t, err)
	lineStates := func() (normal, dead int) {
		t.Helper()
		require.NoError(t, b.sql.QueryRow(ctx, `SELECT count(*) FILTER (WHERE i.lp_flags = 1), count(*) FILTER (WHERE i.lp_flags = 3)
			FROM generate_series(0, (pg_relation_size('deliveries') / 8192)::integer - 1) AS blk,
			     LATERAL heap_page_items(get_raw_page('deliveries', blk)) AS i`).Scan(&normal, &dead))
		return normal, dead
	}
	churn := func() {
		t.Helper()
		_, err := b.sql.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
			SELECT 0, 1, 'k' || g, g, now() FROM generate_series(1, 2000) g`)
		require.NoError(t, err)
		_, err = b.sql.Exec(ctx, "SELECT pg_stat_force_next_flush(); DELETE FROM deliveries")
		require.NoError(t, err)
	}
	churn()
	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 50 * time.Millisecond, VacuumMinGap: 50 * time.Millisecond,
		VacuumMinDead: 100, VacuumDeadTuples: 1_000_000, VacuumFullGap: time.Hour})
	count := func() float64 { return value(t, r.mt.m.vacuums.WithLabelValues("deliveries")) }
	require.Eventually(t, func() bool { return count() >= 1 }, 10*time.Second, 20*time.Millisecond)
	normal, dead := lineStates()
	require.Zero(t, normal, "the first VACUUM of a table is a full one")
	require.Zero(t, dead, "a full VACUUM leaves no dead line pointer")

	churn()
	require.Eventually(t, func() bool { return count() >= 2 }, 10*time.Second, 20*time.Millisecond)
	normal, dead = lineStates()
	require.Zero(t, normal, "the heap pass removed the deleted rows' storage")
	require.Positive(t, dead, "and left their line pointers for the next full VACUUM")
}

// TestReindexesBloatedHotIndex: an index far larger than the table's live
// rows need is rebuilt concurrently, and an invalid leftover of an
// interrupted rebuild is dropped.
func TestReindexesBloatedHotIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.sql.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT g % 2, 1, 'k' || g, g, now() FROM generate_series(1, 20000) g`)
	require.NoError(t, err)
	_, err = b.sql.Exec(ctx, "SELECT pg_stat_force_next_flush(); DELETE FROM deliveries WHERE id > 10")
	require.NoError(t, err)
	// A unique index that cannot be built is left invalid, like an
	// interrupted REINDEX CONCURRENTLY's copy.
	_, err = b.sql.Exec(ctx, "CREATE UNIQUE INDEX CONCURRENTLY deliveries_claim_idx_ccnew ON deliveries (endpoint_id)")
	require.Error(t, err)
	var before int64
	require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_relation_size('deliveries_chain_idx')").Scan(&before))

	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 50 * time.Millisecond,
		ReindexInterval: 100 * time.Millisecond, ReindexMinBytes: 64 << 10})
	require.Eventually(t, func() bool { return value(t, r.mt.m.reindexes.WithLabelValues("deliveries_chain_idx")) >= 1 },
		20*time.Second, 20*time.Millisecond)
	var after int64
	require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_relation_size('deliveries_chain_idx')").Scan(&after))
	require.Less(t, after, before/4)
	require.Eventually(t, func() bool {
		var gone bool
		require.NoError(t, b.sql.QueryRow(ctx, "SELECT to_regclass('deliveries_claim_idx_ccnew') IS NULL").Scan(&gone))
		return gone
	}, 10*time.Second, 20*time.Millisecond)
}

// TestVacuumPolicy: below VacuumDeadTuples, the relative trigger fires at
// most once per gap — VacuumMinGap, or the last heap pass's duration over
// VacuumHeapBudget when that is longer (a bloated table is not vacuumed back
// to back); the absolute one as soon as that budget allows. A gap has passed
// at the tick nearest to it (ticks jitter).
func TestVacuumPolicy(t *testing.T) {
	t.Parallel()
	// The table below is of a 250-ms tick and gap and a 25 % heap budget
	// (the defaults until the churn passes); the churn cases further down
	// use today's defaults.
	mt := &Maintainer{cfg: Config{VacuumInterval: 250 * time.Millisecond, VacuumMinGap: 250 * time.Millisecond, VacuumHeapBudget: 0.25}.WithDefaults()}
	never := time.Duration(1 << 62)
	ms := time.Millisecond
	for _, tc := range []struct {
		dead, live  int64
		since, took time.Duration
		want        bool
	}{
		{dead: 999, live: 0, since: never, want: false},
		{dead: 1_000, live: 300, since: never, want: true},
		{dead: 5_000, live: 300, since: 100 * ms, took: 2 * ms, want: false},
		{dead: 5_000, live: 300, since: 250 * ms, took: 2 * ms, want: true},
		// The next tick, reported a few milliseconds early, is still due.
		{dead: 5_000, live: 300, since: 247 * ms, took: 2 * ms, want: true},
		{dead: 5_000, live: 300, since: 10 * time.Second, took: 20 * ms, want: true},
		// A heap pass of 200 ms buys 800 ms of quiet from the relative
		// trigger, to the tick nearest to it.
		{dead: 5_000, live: 300, since: 500 * ms, took: 200 * ms, want: false},
		{dead: 5_000, live: 300, since: 750 * ms, took: 200 * ms, want: true},
		{dead: 10_000, live: 300, since: 100 * ms, took: 5 * ms, want: true},
		// The absolute trigger ignores VacuumMinGap but not the budget.
		{dead: 50_000, live: 1_000_000, since: 500 * ms, took: 175 * ms, want: false},
		{dead: 50_000, live: 1_000_000, since: 700 * ms, took: 175 * ms, want: true},
		{dead: 5_000, live: 100_000, since: never, want: false},
		// The first check of a table: time.Since of the zero time.
		{dead: 1_000, live: 300, since: time.Duration(math.MaxInt64), want: true},
	} {
		got := mt.needsVacuum(db.TupleCount{Table: "deliveries", Dead: tc.dead, Live: tc.live}, tc.since, tc.took, 0)
		require.Equal(t, tc.want, got, "dead %d live %d since %v took %v", tc.dead, tc.live, tc.since, tc.took)
	}
	// A churning table gets a heap pass every churn gap (here 150 ms, to
	// the tick nearest: 25 ms of slack), whatever the count, as its budget
	// allows.
	mt = &Maintainer{cfg: Config{}.WithDefaults()}
	for _, tc := range []struct {
		dead        int64
		since, took time.Duration
		want        bool
	}{
		{dead: 0, since: 130 * ms, took: 2 * ms, want: true},
		{dead: 0, since: 100 * ms, took: 2 * ms, want: false},
		{dead: 999, since: 150 * ms, took: 2 * ms, want: true},
		{dead: 0, since: 150 * ms, took: 100 * ms, want: false}, // a 100-ms pass buys 200 ms
		{dead: 0, since: 200 * ms, took: 100 * ms, want: true},
	} {
		got := mt.needsVacuum(db.TupleCount{Table: "deliveries", Dead: tc.dead, Live: 300}, tc.since, tc.took, 150*ms)
		require.Equal(t, tc.want, got, "churning: dead %d since %v took %v", tc.dead, tc.since, tc.took)
	}
}

// TestChurnGap: a churning table's heap passes are spaced so that its churn
// fills VacuumDeadSpace of its heap between two, or churns VacuumMinChurn
// rows when that takes longer, within [VacuumInterval, VacuumMaxGap];
// VacuumMinGap while the rate is unknown.
func TestChurnGap(t *testing.T) {
	t.Parallel()
	mt := &Maintainer{cfg: Config{}.WithDefaults()}
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		heap      int64
		row, rate float64
		want      time.Duration
	}{
		// The queue table at full load: 400 kB of heap, 5,400 rows (2,700
		// deliveries) a second of 150 bytes: 5 % of the heap is 133 rows,
		// a tick's churn 270.
		{"full load: every tick", 400_000, 150, 5_400, 50 * ms},
		// On a slow machine at full load: 500 kB of heap, 3,000 rows
		// (1,500 deliveries) a second of 128 bytes: 5 % is 195 rows, under
		// the 250 of the floor.
		{"slow full load: the floor", 500_000, 128, 3_000, 83 * ms},
		{"larger heap, same churn: the share", 2_000_000, 128, 3_000, 260 * ms},
		// 500 callbacks a second: a heap of 100 kB, 1,000 rows a second;
		// 5 % of the heap (33 rows) would ask for a pass every tick.
		{"moderate rate: the floor", 100_000, 150, 1_000, 250 * ms},
		{"at least a tick", 500_000, 128, 30_000, 50 * ms},
		{"at most VacuumMaxGap", 500_000, 128, 30, time.Second},
		{"a few pages count as eight", 8192, 10, 1_000, 327 * ms},
		{"rate unknown", 500_000, 128, 0, 150 * ms},
	} {
		require.InDelta(t, tc.want, mt.churnGap(tc.heap, tc.row, tc.rate), float64(ms), tc.name)
	}
	mt.cfg.VacuumMinChurn = 1
	require.InDelta(t, 133*ms, mt.churnGap(400_000, 150, 1_000), float64(ms), "without the floor: the share")
}

// TestChurnRate: the rate is the counter's over the last 3 s, unknown until
// a second has been seen, and starts again after a statistics reset.
func TestChurnRate(t *testing.T) {
	t.Parallel()
	var c churnRate
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	c.observe(at(0), 1_000)
	require.Zero(t, c.rate())
	c.observe(at(500*time.Millisecond), 1_000) // the counter moves in steps
	require.Zero(t, c.rate(), "under a second")
	c.observe(at(time.Second), 3_000)
	require.InDelta(t, 2_000, c.rate(), 1e-9)
	// 50-ms checks for 5 s at 1,000 a second, reported in 1-s steps: the
	// points older than the window go, and the rate follows the new pace.
	for i := 1; i <= 100; i++ {
		d := time.Second + time.Duration(i)*50*time.Millisecond
		c.observe(at(d), 3_000+int64(i/20)*1_000)
	}
	require.InDelta(t, 1_000, c.rate(), 100)
	require.LessOrEqual(t, len(c.points), 3*20+2, "points beyond the window are dropped")
	c.observe(at(7*time.Second), 10) // reset
	require.Zero(t, c.rate())
}

// TestFullVacuumPolicy: heap passes in between, a full VACUUM once
// VacuumFullGap (or the last full one's duration over the budget) has
// passed, or whenever VacuumDeadTuples dead tuples wait and the budget
// allows.
func TestFullVacuumPolicy(t *testing.T) {
	t.Parallel()
	mt := &Maintainer{cfg: Config{}.WithDefaults()}
	never := time.Duration(1 << 62)
	ms := time.Millisecond
	for _, tc := range []struct {
		dead            int64
		sinceFull, took time.Duration
		want            bool
	}{
		{dead: 2_000, sinceFull: never, want: true},
		{dead: 2_000, sinceFull: 4 * time.Second, took: 10 * ms, want: false},
		{dead: 2_000, sinceFull: 5 * time.Second, took: 10 * ms, want: true},
		{dead: 2_000, sinceFull: 5 * time.Second, took: 400 * ms, want: false},
		{dead: 2_000, sinceFull: 8 * time.Second, took: 400 * ms, want: true},
		{dead: 10_000, sinceFull: 200 * ms, took: 10 * ms, want: true},
		// Many dead tuples ask for a full one only as often as its budget
		// allows; heap passes (their own budget) run in between.
		{dead: 10_000, sinceFull: 1 * time.Second, took: 100 * ms, want: false},
		{dead: 10_000, sinceFull: 2 * time.Second, took: 100 * ms, want: true},
		{dead: 2_000, sinceFull: time.Duration(math.MaxInt64), took: 0, want: true},
	} {
		got := mt.needsFullVacuum(db.TupleCount{Table: "deliveries", Dead: tc.dead, Live: 300}, tc.sinceFull, tc.took)
		require.Equal(t, tc.want, got, "dead %d since full %v took %v", tc.dead, tc.sinceFull, tc.took)
	}
}

// TestChurningTableGetsRegularHeapPasses: a table whose rows are being
// deleted gets heap passes while it churns, though its dead tuples stay far
// under VacuumMinDead (the count alone would never ask for one), and none
// once the churn has stopped for VacuumChurnWindow. With a dead-space target
// this small and no floor of rows, the gap is a tick (50 ms).
func TestChurningTableGetsRegularHeapPasses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fillDeliveries(t, 2000)
	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 50 * time.Millisecond, VacuumChurnWindow: 500 * time.Millisecond,
		VacuumDeadSpace: 1e-6, VacuumMinChurn: 1})
	r.waitVacuumCheck(t, time.Time{}) // the first check records the counter
	vacuums := func() float64 { return value(t, r.mt.m.vacuums.WithLabelValues("deliveries")) }
	before := vacuums()

	// 20 deletes of 10 rows, 100 ms apart: 200 dead at most, under 1,000.
	churned := b.churn(t, 0, 20)
	got := vacuums() - before
	// One pass per 150 ms gap until the rate is known, then one a tick,
	// give or take the ticks and the first one.
	require.GreaterOrEqual(t, got, float64(churned/(300*time.Millisecond)), "heap passes while churning (%v)", churned)

	// The churn has stopped: within the window (and a tick) the passes stop.
	r.waitVacuumCheck(t, time.Now().Add(700*time.Millisecond))
	settled := vacuums()
	time.Sleep(time.Second) // for a VACUUM that should not come
	require.Equal(t, settled, vacuums(), "no VACUUM once the table is quiet")
}

// TestChurnGapFollowsTheHeap: with the default dead-space target, the same
// slow churn on a heap of ~400 kB (100 rows of ~130 bytes a second: 5 % of
// the heap takes ~1.5 s) gets a heap pass about once a VacuumMaxGap (1 s),
// not every VacuumMinGap.
func TestChurnGapFollowsTheHeap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fillDeliveries(t, 2000)
	r := b.start(t, Config{RetentionInterval: -1, VacuumInterval: 50 * time.Millisecond})
	r.waitVacuumCheck(t, time.Time{}) // the first check records the counter
	vacuums := func() float64 { return value(t, r.mt.m.vacuums.WithLabelValues("deliveries")) }
	b.churn(t, 0, 15) // until the rate is known
	before := vacuums()
	churned := b.churn(t, 15, 35)
	got := vacuums() - before
	require.Positive(t, got, "no heap pass while churning")
	require.LessOrEqual(t, got, float64(churned/time.Second)+2, "heap passes in %v of slow churn on a large heap", churned)
}

// churn deletes 10 rows of deliveries every 100 ms, batches from to to
// (exclusive; batch i takes the 10 rows after the first i left, in id order), reporting
// each to the statistics at once, and returns how long that took.
func (b *bundle) churn(t *testing.T, from, to int) time.Duration {
	t.Helper()
	start := time.Now()
	for i := from; i < to; i++ {
		b.exec(t, fmt.Sprintf(`SELECT pg_stat_force_next_flush(); DELETE FROM deliveries WHERE id IN
			(SELECT id FROM deliveries ORDER BY id LIMIT 10 OFFSET %d)`, i))
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}
