package db_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestStatSampleCountsTheWindow: a sample counts the callbacks and attempts of
// its window only, the backlog per logical queue, the oldest pending age,
// dead letters and latency percentiles; samples round-trip and are trimmed.
func TestStatSampleCountsTheWindow(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	from, to := now.Add(-20*time.Second), now.Add(-10*time.Second)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := conn.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	// 3 callbacks in the window, 1 before, 1 after.
	for _, at := range []time.Time{from.Add(-time.Second), from, from.Add(time.Second), to.Add(-time.Millisecond), to} {
		exec(`INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
			VALUES ($1, 1, 'k', 0, '\x7b7d', 2, '\x00')`, at)
	}
	// Attempts in the window: 3 successes with e2e 100, 200, 300 ms (+ 10 ms latency) and 1 failure.
	for i, e2e := range []int{100, 200, 300} {
		at := from.Add(time.Duration(i+1) * time.Second)
		exec(`INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome, latency_ms)
			VALUES ($1, $1, $2, 1, 1, $3, 'success', 10)`, i+1, at.Add(-time.Duration(e2e)*time.Millisecond), at)
	}
	exec(`INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome)
		VALUES (9, 9, $1, 1, 1, $1, 'failed')`, from.Add(5*time.Second))
	exec(`INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome)
		VALUES (10, 10, $1, 1, 1, $1, 'failed')`, to.Add(time.Second)) // outside
	// Backlog: 2 on queue 3, 1 on queue 7; the oldest received a minute ago.
	for _, d := range []struct {
		q  int
		at time.Time
	}{{3, now.Add(-time.Minute)}, {3, now}, {7, now}} {
		exec(`INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at) VALUES ($1, 1, 'k', 1, $2)`, d.q, d.at)
	}
	exec(`INSERT INTO dead_letters (id, message_id, message_received_at, endpoint_id, merchant_id, carrier_id, queue, ordering_key, attempts)
		VALUES (1, 1, now(), 1, 1, 1, 0, 'k', 8)`)

	s, err := store.StatSampleTake(ctx, from, to, now, 32)
	require.NoError(t, err)
	require.EqualValues(t, 3, s.Ingested)
	require.GreaterOrEqual(t, s.IngestedTotal, int64(5))
	require.EqualValues(t, 3, s.Delivered)
	require.EqualValues(t, 1, s.Failed)
	require.InDelta(t, 0.25, s.ErrorRate, 1e-9)
	require.InEpsilon(t, 210, s.E2EP50Ms, 0.005)
	require.InEpsilon(t, 308, s.E2EP99Ms, 0.005)
	require.EqualValues(t, 3, s.BacklogTotal)
	require.Len(t, s.BacklogPerQueue, 32)
	require.EqualValues(t, 2, s.BacklogPerQueue[3])
	require.EqualValues(t, 1, s.BacklogPerQueue[7])
	require.InDelta(t, 60, s.OldestPendingAgeSeconds, 0.01)
	require.EqualValues(t, 1, s.DeadLettersTotal)
	require.InDelta(t, 0.3, s.Rate(s.Ingested), 1e-9)

	old := s
	old.SampledAt = now.Add(-3 * time.Hour)
	require.NoError(t, store.StatSampleInsert(ctx, old))
	require.NoError(t, store.StatSampleInsert(ctx, s))
	got, err := store.StatSamplesSince(ctx, now.Add(-time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.True(t, got[0].SampledAt.Equal(now))
	require.Equal(t, s.BacklogPerQueue, got[0].BacklogPerQueue)
	n, err := store.StatSamplesTrim(ctx, now.Add(-2*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	latest, err := store.StatSampleLatest(ctx)
	require.NoError(t, err)
	require.True(t, latest.SampledAt.Equal(now))
	_, err = store.StatSamplesTrim(ctx, now.Add(time.Hour))
	require.NoError(t, err)
	_, err = store.StatSampleLatest(ctx)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
}

// TestStatSampleEstimatesLargeBacklog: above StatExactBacklog the backlog is
// estimated from the statistics and a block sample, within a few percent.
func TestStatSampleEstimatesLargeBacklog(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	now := time.Now().UTC()
	n := db.StatExactBacklog + 30_000
	// One implicit transaction: its end flushes the statistics at once.
	_, err = conn.Exec(t.Context(), `SELECT pg_stat_force_next_flush();
		INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT CASE WHEN g % 4 = 0 THEN 1 ELSE 2 END, 1, 'k' || g, g, now() - interval '1 minute' FROM generate_series(1, `+itoa(n)+`) g`)
	require.NoError(t, err)
	s, err := store.StatSampleTake(t.Context(), now.Add(-time.Minute), now, now, 4)
	require.NoError(t, err)
	require.True(t, s.BacklogEstimated)
	require.EqualValues(t, n, s.BacklogTotal)
	require.InDelta(t, float64(n)/4, float64(s.BacklogPerQueue[1]), float64(n)/20)
	require.InDelta(t, float64(n)*3/4, float64(s.BacklogPerQueue[2]), float64(n)/20)
	require.InDelta(t, 60, s.OldestPendingAgeSeconds, 5)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestStatSampleReadsOnlyItsWindow: a stat sample reads the history through
// the BRIN indexes, a few block ranges for its 10 s, however large the day
// partition has grown and whether or not the partition has statistics (the
// CI server runs without autovacuum, so this one never has). Before the
// maintenance role summarized the new ranges, and before the sample's own
// plan settings, each sample read the whole day (its time grew from 0.15 to
// 0.6 s within ten minutes of a soak, holding the xmin horizon meanwhile).
// It reads the window in one-second slices, one statement each.
func TestStatSampleReadsOnlyItsWindow(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	ctx := t.Context()
	// A store whose sessions are closed when fn returns: a backend reports
	// the blocks it read to the shared statistics at the latest when it
	// exits (an idle one may wait 10 s), so once they are gone the counters
	// hold everything fn read.
	withStore := func(fn func(store *db.DB)) {
		t.Helper()
		store := dbtest.Open(t, url, db.Config{})
		fn(store)
		store.Close()
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n))
			return n == 0
		}, 20*time.Second, 20*time.Millisecond)
	}
	// Two hours of tomorrow's partitions (created ahead, so attached while
	// empty, as every day partition is): one row every 0.24 s, in time order.
	withStore(func(*db.DB) {}) // opening a store creates the partitions ahead
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	start, n := day.Add(10*time.Hour), 30_000
	_, err = conn.Exec(ctx, `INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
		SELECT $1::timestamptz + g * interval '240 milliseconds', 1, 'k' || g, 0, convert_to(repeat('x', 300), 'UTF8'), 300, '\x00'
		FROM generate_series(0, $2::integer - 1) g`, start, n)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome, latency_ms, response_excerpt)
		SELECT g, g, $1::timestamptz + g * interval '240 milliseconds', 1, 1, $1::timestamptz + g * interval '240 milliseconds' + interval '50 milliseconds',
		       CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'success' END, 10, repeat('y', 200)
		FROM generate_series(0, $2::integer - 1) g`, start, n)
	require.NoError(t, err)
	// This session's own counts go out with its next statement.
	_, err = conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)
	parts := []string{"messages_p" + day.Format("20060102"), "delivery_attempts_p" + day.Format("20060102")}
	// perPartition runs sql, which reports (partition, count) for the
	// partitions in $1.
	perPartition := func(sql string) map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		rows, err := conn.Query(ctx, sql, parts)
		require.NoError(t, err)
		for rows.Next() {
			var name string
			var n int64
			require.NoError(t, rows.Scan(&name, &n))
			out[name] = n
		}
		require.NoError(t, rows.Err())
		return out
	}
	blocks := func() map[string]int64 {
		return perPartition(`SELECT relname::text, coalesce(heap_blks_read, 0) + coalesce(heap_blks_hit, 0) + coalesce(idx_blks_read, 0) + coalesce(idx_blks_hit, 0)
			FROM pg_statio_user_tables WHERE relname = ANY($1)`)
	}
	// The smallest B-tree of each partition, in pages: a scan of the day's
	// table, or of a whole index, reads at least that many.
	smallest := map[string]int64{}
	for _, p := range parts {
		var heap, btree int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT pg_relation_size($1::regclass) / 8192,
			(SELECT min(pg_relation_size(i.indexrelid)) / 8192 FROM pg_index i
			 JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam AND a.amname = 'btree'
			 WHERE i.indrelid = $1::regclass)`, p).Scan(&heap, &btree))
		smallest[p] = min(heap, btree)
		require.Greater(t, smallest[p], int64(80), "%s is too small to tell a scan of the day from one of the window", p)
	}

	// The window: the last 10 s (41 rows of each table).
	to := start.Add(time.Duration(n) * 240 * time.Millisecond)
	from := to.Add(-10 * time.Second)
	withStore(func(store *db.DB) {
		ranges, err := store.HistoryIndexesSummarize(ctx, from, to, time.Second)
		require.NoError(t, err)
		require.Positive(t, ranges)
		ranges, err = store.HistoryIndexesSummarize(ctx, from, to, time.Second)
		require.NoError(t, err)
		require.Zero(t, ranges, "a second call has nothing new to summarize")
	})

	// Scans of each partition's BRIN index: one per statement that read it.
	brinScans := func() map[string]int64 {
		return perPartition(`SELECT s.relname::text, sum(s.idx_scan)::bigint FROM pg_stat_user_indexes s
			JOIN pg_class c ON c.oid = s.indexrelid JOIN pg_am a ON a.oid = c.relam AND a.amname = 'brin'
			WHERE s.relname = ANY($1) GROUP BY 1`)
	}

	before, scansBefore := blocks(), brinScans()
	withStore(func(store *db.DB) {
		s, err := store.StatSampleTake(ctx, from, to, time.Now(), 32)
		require.NoError(t, err)
		require.EqualValues(t, 41, s.Ingested) // g = 29959 .. 29999
		require.EqualValues(t, 41, s.Delivered+s.Failed)
		require.InEpsilon(t, 60, s.E2EP50Ms, 0.005) // 50 ms after receipt, 10 ms latency
	})
	after, scansAfter := blocks(), brinScans()
	for _, p := range parts {
		// Each one-second slice of the window is read by a statement of
		// its own, so that none holds a snapshot for the whole window.
		require.EqualValues(t, int64(10*time.Second/db.StatSlice), scansAfter[p]-scansBefore[p],
			"%s: statements that read the 10-s window", p)
		read := after[p] - before[p]
		perSlice := read / (scansAfter[p] - scansBefore[p])
		t.Logf("%s: %d pages read by the sample, %d per slice; its smallest B-tree has %d", p, read, perSlice, smallest[p])
		require.Positive(t, read, "%s: the sample's reads were not counted", p)
		// The window's rows are in the last BRIN block range, which holds
		// only the last 21 pages of the table here: each slice reads that
		// range and the BRIN index.
		require.Less(t, perSlice, smallest[p]/2, "%s: a slice read %d pages, a scan of the day's table or a whole index", p, perSlice)
	}
}

// TestHistoryIndexesSummarizeNeverWaits: a history partition that another
// session holds in a conflicting mode (as a VACUUM or ANALYZE does) is left
// for the next call; a lock that stands in the way anyway (here, a DDL
// statement queued on the partition) makes the call give up after its lock
// timeout, reported as such. Either way it does not wait.
func TestHistoryIndexesSummarizeNeverWaits(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	connect := func() *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	now := time.Now().UTC()
	part := pgx.Identifier{"messages_p" + now.Format("20060102")}.Sanitize()
	from := now.Add(-10 * time.Second)

	// A VACUUM's lock: skipped, no error.
	holder := connect()
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE `+part+` IN SHARE UPDATE EXCLUSIVE MODE`)
	require.NoError(t, err)
	began := time.Now()
	_, err = store.HistoryIndexesSummarize(ctx, from, now, 5*time.Second)
	require.NoError(t, err)
	require.Less(t, time.Since(began), 2*time.Second, "waited for the lock")
	require.NoError(t, tx.Rollback(ctx))

	// A reader holds the partition and an ALTER waits for it: the summary
	// queues behind the ALTER until its lock timeout.
	tx, err = holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM `+part+` LIMIT 1`)
	require.NoError(t, err)
	ddl := connect()
	ddlDone := make(chan error, 1)
	go func() {
		_, err := ddl.Exec(ctx, `BEGIN; LOCK TABLE `+part+` IN ACCESS EXCLUSIVE MODE; ROLLBACK`)
		ddlDone <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, holder.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)`,
			ddl.PgConn().PID()).Scan(&waiting))
		return waiting
	}, 10*time.Second, 10*time.Millisecond)
	began = time.Now()
	_, err = store.HistoryIndexesSummarize(ctx, from, now, 100*time.Millisecond)
	require.Error(t, err)
	require.True(t, db.IsLockTimeout(err), "%v", err)
	require.Less(t, time.Since(began), 2*time.Second)
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-ddlDone)
	_, err = store.HistoryIndexesSummarize(ctx, from, now, 100*time.Millisecond)
	require.NoError(t, err)
}
