package maintenance

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
)

// TestRetentionOverDaysOfTraffic drives a week of simulated days: partitions
// exist ahead, history past retention goes by whole partitions (no row is
// DELETEd) with its S3 payloads, idempotency keys are kept two days, and a
// restart after a long pause catches up at once.
func TestRetentionOverDaysOfTraffic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.forbidDeletes(t)
	const retention = 72 * time.Hour
	d0 := day(time.Now()).AddDate(0, 0, 1)
	noon := func(i int) time.Time { return d0.AddDate(0, 0, i).Add(12 * time.Hour) }
	b.clock.Set(noon(0))
	r := b.start(t, Config{Retention: retention, PartitionsAhead: 3})

	keys := map[int]string{}
	var dropped []string
	for i := 0; i <= 5; i++ {
		b.clock.Set(noon(i))
		dropped = append(dropped, r.pass(t, noon(i)).Dropped...)
		_, keys[i] = b.addTraffic(t, noon(i))
		for a := 0; a <= 3; a++ {
			for _, parent := range []string{"messages", "delivery_attempts", "idempotency_keys"} {
				require.True(t, b.tableExists(t, partName(parent, d0.AddDate(0, 0, i+a))), "day %d: %s %d days ahead", i, parent, a)
			}
		}
		for j := 0; j <= i; j++ {
			dj := d0.AddDate(0, 0, j)
			kept := j >= i-3 // the whole day is younger than 72 h before noon of day i
			require.Equal(t, kept, b.tableExists(t, partName("messages", dj)), "day %d: messages of day %d", i, j)
			require.Equal(t, kept, b.tableExists(t, partName("delivery_attempts", dj)), "day %d: attempts of day %d", i, j)
			require.Equal(t, j >= i-1, b.tableExists(t, partName("idempotency_keys", dj)), "day %d: keys of day %d", i, j)
			if j < i { // today's traffic is added after the pass
				require.Equal(t, kept, b.objectExists(t, keys[j]), "day %d: payload of day %d", i, j)
			}
		}
	}
	require.Zero(t, b.historyRowsDeleted(t), "history rows were DELETEd")
	for j := 0; j <= 5; j++ {
		require.Equal(t, j <= 1, slices.Contains(dropped, partName("messages", d0.AddDate(0, 0, j))), "day %d", j)
	}
	require.GreaterOrEqual(t, value(t, r.mt.m.retentionDropped.WithLabelValues("messages")), 2.0)

	// The process is down for ten days, then starts again.
	r.stop()
	b.clock.Set(noon(15))
	require.False(t, b.tableExists(t, partName("messages", d0.AddDate(0, 0, 15))))
	r2 := b.start(t, Config{Retention: retention, PartitionsAhead: 3})
	r2.pass(t, noon(15))
	for j := 2; j <= 8; j++ {
		require.False(t, b.tableExists(t, partName("messages", d0.AddDate(0, 0, j))), "day %d kept after catch-up", j)
	}
	for j := 2; j <= 5; j++ {
		require.False(t, b.objectExists(t, keys[j]), "payload of day %d kept after catch-up", j)
	}
	for j := 14; j <= 18; j++ {
		require.True(t, b.tableExists(t, partName("messages", d0.AddDate(0, 0, j))), "day %d not created", j)
	}
	runs, err := b.store.MaintenanceRuns(t.Context(), retentionJob)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.True(t, runs[0].LastRunAt.Equal(noon(15)))
	require.Zero(t, b.historyRowsDeleted(t), "history rows were DELETEd")
}

// TestRetentionPinsDayOfPendingDelivery: a day past retention that a pending
// delivery still references is not dropped (metric and warning) until the
// delivery is gone; dead letters past retention are discarded, not pinning.
func TestRetentionPinsDayOfPendingDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d0 := day(time.Now()).AddDate(0, 0, 1)
	b.clock.Set(d0.Add(12 * time.Hour))
	r := b.start(t, Config{Retention: 72 * time.Hour})
	r.pass(t, d0.Add(12*time.Hour))

	pinnedAt, deadAt := d0.Add(12*time.Hour), d0.AddDate(0, 0, 1).Add(12*time.Hour)
	pinnedID, pinnedKey := b.addTraffic(t, pinnedAt)
	deadID, deadKey := b.addTraffic(t, deadAt)
	_, err := b.sql.Exec(t.Context(), `INSERT INTO deliveries (id, queue, endpoint_id, ordering_key, message_id, message_received_at)
		VALUES (900001, 0, 1, 'T1', $1, $2)`, pinnedID, pinnedAt)
	require.NoError(t, err)
	_, err = b.sql.Exec(t.Context(), `INSERT INTO dead_letters (id, message_id, message_received_at, endpoint_id, merchant_id, carrier_id, queue, ordering_key, attempts)
		VALUES (900002, $1, $2, 1, 1, 1, 0, 'T1', 8)`, deadID, deadAt)
	require.NoError(t, err)

	later := d0.AddDate(0, 0, 5).Add(12 * time.Hour)
	b.clock.Set(later)
	rep := r.pass(t, later)
	require.Equal(t, []string{partName("messages", d0)}, rep.Blocked)
	require.EqualValues(t, 1, rep.DeadLettersDiscarded)
	require.Equal(t, 1.0, value(t, r.mt.m.retentionBlocked))
	require.Contains(t, b.logs.String(), "drop postponed")
	require.True(t, b.tableExists(t, partName("messages", d0)), "pinned day dropped")
	require.True(t, b.objectExists(t, pinnedKey), "pinned day's payload deleted")
	require.False(t, b.tableExists(t, partName("delivery_attempts", d0)), "attempts do not pin")
	require.False(t, b.tableExists(t, partName("messages", d0.AddDate(0, 0, 1))), "dead letter pinned its day")
	require.False(t, b.objectExists(t, deadKey))
	var deadLetters int
	require.NoError(t, b.sql.QueryRow(t.Context(), "SELECT count(*) FROM dead_letters").Scan(&deadLetters))
	require.Zero(t, deadLetters)

	// The delivery finishes (the dispatcher deletes it): the day goes.
	_, err = b.sql.Exec(t.Context(), "DELETE FROM deliveries WHERE id = 900001")
	require.NoError(t, err)
	later = later.Add(time.Minute)
	b.clock.Set(later)
	rep = r.pass(t, later)
	require.Empty(t, rep.Blocked)
	// The day may go in this pass or in one that a kick of the helper's
	// previous wait started after the DELETE, still at the previous clock:
	// the table and its payload are checked, not this report's Dropped.
	require.False(t, b.tableExists(t, partName("messages", d0)), "the day stayed after its delivery finished")
	require.Zero(t, value(t, r.mt.m.retentionBlocked))
	require.False(t, b.objectExists(t, pinnedKey))
}

// TestRetentionFinishesInterruptedWork: a partition left detached (or
// detach-pending) by a crashed pass is dropped, and a day whose S3 purge did
// not happen is purged, on the next pass.
func TestRetentionFinishesInterruptedWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d0 := day(time.Now()).AddDate(0, 0, 1)
	b.clock.Set(d0.Add(12 * time.Hour))
	r := b.start(t, Config{Retention: 72 * time.Hour})
	r.pass(t, d0.Add(12*time.Hour))
	_, key := b.addTraffic(t, d0.Add(13*time.Hour))
	old := partName("delivery_attempts", d0.AddDate(0, 0, 2))
	_, err := b.sql.Exec(t.Context(), "ALTER TABLE delivery_attempts DETACH PARTITION "+old)
	require.NoError(t, err)
	// A crash after recording the purge and dropping the day, before S3.
	require.NoError(t, b.store.MaintenanceRunSet(t.Context(), db.MaintenanceRun{
		Job: payloadPurgeJob + d0.Format(dayLayout), LastRunAt: d0}))

	later := d0.Add(14 * time.Hour)
	b.clock.Set(later)
	rep := r.pass(t, later)
	require.Contains(t, rep.Dropped, old)
	require.False(t, b.tableExists(t, old))
	require.False(t, b.objectExists(t, key))
	require.Equal(t, 1, rep.PayloadObjectsDeleted)
	runs, err := b.store.MaintenanceRuns(t.Context(), payloadPurgeJob)
	require.NoError(t, err)
	require.Empty(t, runs)
	require.False(t, strings.Contains(b.logs.String(), `"level":"ERROR"`))
}

func TestRetentionPrunesOldDispatcherRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.sql.Exec(t.Context(), `INSERT INTO dispatchers (hostname, pid, started_at, heartbeat_at, stopped_at) VALUES
		('old', 1, now() - interval '3 days', now() - interval '3 days', now() - interval '3 days'),
		('live', 2, now(), now(), NULL)`)
	require.NoError(t, err)
	now := time.Now().UTC()
	b.clock.Set(now)
	r := b.start(t, Config{})
	r.pass(t, now)
	rows, err := b.sql.Query(t.Context(), "SELECT hostname FROM dispatchers ORDER BY hostname")
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"live"}, names)
}

// TestRetentionVacuumsClosedDays: autovacuum does not VACUUM the history for
// its inserts (migration 00090); the retention pass vacuums and freezes each
// day once it has closed (ten minutes past its midnight), not the open day,
// not a day already done, and again only if rows came after.
func TestRetentionVacuumsClosedDays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	d0 := day(time.Now()).AddDate(0, 0, 1)
	b.clock.Set(d0.Add(12 * time.Hour))
	r := b.start(t, Config{PartitionsAhead: 3})
	r.pass(t, d0.Add(12*time.Hour))
	for i := range 50 {
		b.addTraffic(t, d0.Add(time.Duration(i)*time.Minute))
	}
	// vacuumed returns the VACUUMs run on a table and whether every page of
	// its heap is all-visible and every row frozen.
	vacuumed := func(table string) (count int64, done bool) {
		t.Helper()
		require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_stat_clear_snapshot()::text IS NULL").Scan(new(bool)))
		require.NoError(t, b.sql.QueryRow(ctx, `SELECT s.vacuum_count,
				c.relallvisible = pg_relation_size(c.oid) / 8192 AND c.relallvisible > 0
				AND age(c.relfrozenxid) < age((SELECT max(xmin::text::bigint)::text::xid FROM `+pgx.Identifier{table}.Sanitize()+`)) + 1
			FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = $1`, table).Scan(&count, &done))
		return count, done
	}
	tables := []string{partName("messages", d0), partName("delivery_attempts", d0), partName("idempotency_keys", d0)}

	// The open day, and its first ten minutes after midnight: not yet.
	for _, at := range []time.Time{d0.Add(23 * time.Hour), d0.Add(24*time.Hour + 5*time.Minute)} {
		b.clock.Set(at)
		rep := r.pass(t, at)
		require.Empty(t, rep.Vacuumed, "at %s", at)
	}
	// Closed: each of the day's tables, once.
	b.settleCommits(t, tables...)
	at := d0.Add(24*time.Hour + 15*time.Minute)
	b.clock.Set(at)
	rep := r.pass(t, at)
	require.ElementsMatch(t, tables, rep.Vacuumed)
	for _, table := range tables {
		n, done := vacuumed(table)
		require.EqualValues(t, 1, n, table)
		require.True(t, done, "%s: all-visible and frozen after the pass", table)
	}
	at = at.Add(time.Hour)
	b.clock.Set(at)
	require.Empty(t, r.pass(t, at).Vacuumed, "a day already vacuumed")

	// Late rows, on pages added since: not all-visible, and the next pass
	// vacuums that table again. (A late row that fits in a page the VACUUM
	// saw only clears that page's bit; the pass does not see it.)
	_, err := b.sql.Exec(ctx, `INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
		SELECT $1::timestamptz, 1, 'late', 0, '\x7b7d', 2, '\x00' FROM generate_series(1, 2000)`, d0.Add(23*time.Hour))
	require.NoError(t, err)
	at = at.Add(time.Hour)
	b.clock.Set(at)
	require.Equal(t, []string{tables[0]}, r.pass(t, at).Vacuumed)
	require.Equal(t, 4.0, value(t, r.mt.m.vacuums.WithLabelValues("messages"))+
		value(t, r.mt.m.vacuums.WithLabelValues("delivery_attempts"))+value(t, r.mt.m.vacuums.WithLabelValues("idempotency_keys")))
}

// TestRetentionDeletesExpiredSessions: the retention pass deletes the
// dashboard sessions that have expired, and only those.
func TestRetentionDeletesExpiredSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC()
	for i, exp := range []time.Time{now.Add(-time.Minute), now.Add(time.Hour)} {
		_, err := b.store.LoginSessionCreate(t.Context(), db.NewLoginSession{
			TokenSHA256: []byte{byte(i), 1, 2, 3}, Kind: db.SessionAdmin, CredentialHash: make([]byte, 32),
			Now: now.Add(-2 * time.Hour), ExpiresAt: exp,
		})
		require.NoError(t, err)
	}
	b.clock.Set(now)
	r := b.start(t, Config{})
	rep := r.pass(t, now)
	require.EqualValues(t, 1, rep.SessionsDeleted)
	var left int
	require.NoError(t, b.sql.QueryRow(t.Context(), "SELECT count(*) FROM dashboard_sessions WHERE expires_at > $1", now).Scan(&left))
	require.Equal(t, 1, left)
}
