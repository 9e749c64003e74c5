package db_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestHistoryPartitionsAnalyzeSmallSamples: every column of every history
// partition, those created ahead included, has statistics target 10, so an
// ANALYZE of a day partition samples 3,000 rows, not 30,000. An ANALYZE holds
// a snapshot while it samples: with the default target, autovacuum's ANALYZE
// of a busy day held back every VACUUM in the cluster for 2 s and the hot
// queue's dead space reached 63-73 % of its heap (migration 00080).
func TestHistoryPartitionsAnalyzeSmallSamples(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	// The migrations made yesterday's to the day after tomorrow's
	// partitions; these two days' are made by hookrelay_ensure_partitions as
	// it stands now.
	later := time.Now().UTC().Add(10 * 24 * time.Hour)
	created, err := store.EnsurePartitions(ctx, later, 0)
	require.NoError(t, err)
	require.Equal(t, 8, created)
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer conn.Close(ctx)

	var wrong []string
	tables := map[string]int{} // columns checked per table
	rows, err := conn.Query(ctx, `SELECT c.relname::text, a.attname::text || '=' || a.attstattarget::text
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE c.relname ~ '^(messages|delivery_attempts|idempotency_keys|carrier_refusals)(_p[0-9]{8})?$'`)
	require.NoError(t, err)
	for rows.Next() {
		var table, col string
		require.NoError(t, rows.Scan(&table, &col))
		tables[table]++
		if !strings.HasSuffix(col, "=10") {
			wrong = append(wrong, table+"."+col)
		}
	}
	require.NoError(t, rows.Err())
	require.Empty(t, wrong, "history columns without statistics target 10")
	for _, d := range []time.Time{later.Add(-24 * time.Hour), later} {
		sfx := "_p" + d.Format("20060102")
		require.Equal(t, 17, tables["messages"+sfx], "columns of messages%s", sfx)
		require.Equal(t, 12, tables["delivery_attempts"+sfx], "columns of delivery_attempts%s", sfx)
		require.Equal(t, 7, tables["idempotency_keys"+sfx], "columns of idempotency_keys%s", sfx)
		require.Equal(t, 10, tables["carrier_refusals"+sfx], "columns of carrier_refusals%s", sfx)
	}
	require.Equal(t, 17, tables["messages"])

	day := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	part := "messages_p" + day.Format("20060102")
	_, err = conn.Exec(ctx, `INSERT INTO messages (received_at, carrier_id, ordering_key, queue, payload, payload_size, payload_sha256)
		SELECT $1::timestamptz + g * interval '1 second', 1, 'k' || g, 0, '\x7b7d', 2, '\x00'
		FROM generate_series(1, 20000) g`, day)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "ANALYZE VERBOSE "+pgx.Identifier{part}.Sanitize())
	require.NoError(t, err)
	sampled := -1
	re := regexp.MustCompile(`(\d+) rows in sample`)
	for _, n := range notices {
		if m := re.FindStringSubmatch(n); m != nil {
			sampled, _ = strconv.Atoi(m[1])
		}
	}
	require.Equal(t, 3000, sampled, "ANALYZE's notices: %q", notices)
}

// TestHistoryPartitionsLeftAloneByAutovacuum: every day partition of the
// history, those the migrations made and those made ahead since, carries an
// autovacuum_analyze_threshold no day reaches and no insert-driven VACUUM,
// so autovacuum neither ANALYZEs it nor VACUUMs it for its inserts; the
// maintenance role analyzes a day while it is small and vacuums it once
// closed (migration 00090: an ANALYZE of a day of millions of rows held back
// every VACUUM in the cluster, and an insert-driven VACUUM of the open day
// locked out the stat sampler's BRIN summary for minutes).
func TestHistoryPartitionsLeftAloneByAutovacuum(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	later := time.Now().UTC().Add(10 * 24 * time.Hour)
	_, err := store.EnsurePartitions(ctx, later, 0)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT c.relname::text, coalesce(array_to_string(c.reloptions, ','), '')
		FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
		WHERE i.inhparent IN ('messages'::regclass, 'delivery_attempts'::regclass, 'idempotency_keys'::regclass)`)
	require.NoError(t, err)
	options, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Name    string
		Options string
	}])
	require.NoError(t, err)
	names := map[string]bool{}
	for _, o := range options {
		names[o.Name] = true
		require.Contains(t, strings.Split(o.Options, ","), "autovacuum_analyze_threshold=2147483647", o.Name)
		require.Contains(t, strings.Split(o.Options, ","), "autovacuum_vacuum_insert_threshold=-1", o.Name)
	}
	for _, p := range []string{"messages", "delivery_attempts", "idempotency_keys"} {
		require.True(t, names[p+"_p"+time.Now().UTC().Format("20060102")], "today's %s partition (made by the migrations)", p)
		require.True(t, names[p+"_p"+later.Format("20060102")], "the %s partition made ahead", p)
	}
}

// TestVacuumFreezeRestoresSession: the closed day's VACUUM (FREEZE) runs
// without the session's statement timeout and under autovacuum's cost
// settings, and the session has its own back afterwards (it goes on with the
// maintenance role's other statements).
func TestVacuumFreezeRestoresSession(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	sess, err := store.OpenSession(ctx, db.SessionConfig{StatementTimeout: 7 * time.Second})
	require.NoError(t, err)
	defer sess.Close()
	before := [3]string{}
	before[0], before[1], before[2], err = db.SessionSettings(ctx, sess)
	require.NoError(t, err)
	require.Equal(t, [3]string{"7s", "0", "200"}, before)
	part := "messages_p" + time.Now().UTC().Format("20060102")
	require.NoError(t, sess.VacuumFreeze(ctx, part))
	require.Error(t, sess.VacuumFreeze(ctx, "no_such_table"))
	after := [3]string{}
	after[0], after[1], after[2], err = db.SessionSettings(ctx, sess)
	require.NoError(t, err)
	require.Equal(t, before, after)
}
