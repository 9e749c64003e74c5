package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/internal/logtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/storage"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
	// since, when set (Run), is the real time from which the clock moves on
	// by itself.
	since time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.since.IsZero() {
		return c.now.Add(time.Since(c.since))
	}
	return c.now
}

// Set stops the clock at t.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.since = t, time.Time{}
}

// Run lets the clock move on from where it is at the pace of real time.
func (c *fakeClock) Run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since = time.Now()
}

// bundle is what the tests work with: a database of their own, an SQL
// connection to it for fixtures and checks, an embedded S3 store, a clock.
type bundle struct {
	url      string
	store    *db.DB
	sql      *pgx.Conn
	payloads *storage.Store
	clock    *fakeClock
	logs     *logtest.Buffer
	logger   *slog.Logger
}

func setup(t *testing.T) *bundle {
	t.Helper()
	env := testenv.New(t, testenv.Options{LogLevel: slog.LevelDebug, LogS3: true})
	conn, err := pgx.Connect(t.Context(), env.DBURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return &bundle{url: env.DBURL, store: env.DB, sql: conn, payloads: env.Payloads,
		clock: &fakeClock{now: time.Now().UTC()}, logs: env.Logs, logger: env.Logger}
}

// running is a Maintainer whose Run goroutine the test owns.
type running struct {
	mt      *Maintainer
	reg     *prometheus.Registry
	reports chan RetentionReport
	stop    func()

	mu          sync.Mutex // mu guards vacuumCheck
	vacuumCheck time.Time  // when the last check of the hot tables started
}

// waitVacuumCheck waits until a check of the hot tables that started at
// after or later (any check, for the zero time) is done.
func (r *running) waitVacuumCheck(t *testing.T, after time.Time) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "a check of the hot tables", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.vacuumCheck.IsZero() && !r.vacuumCheck.Before(after)
	})
}

// start runs a Maintainer with cfg (clock, reports and quiet defaults filled
// in) until the test ends or stop is called.
func (b *bundle) start(t *testing.T, cfg Config) *running {
	t.Helper()
	r := &running{reg: prometheus.NewRegistry(), reports: make(chan RetentionReport, 64)}
	cfg.Now = b.clock.Now
	cfg.OnRetention = func(rep RetentionReport) { r.reports <- rep }
	cfg.RetentionInterval = cmp.Or(cfg.RetentionInterval, time.Hour)
	cfg.VacuumInterval = cmp.Or(cfg.VacuumInterval, -1)
	cfg.HealthInterval = cmp.Or(cfg.HealthInterval, -1)
	cfg.StatInterval = cmp.Or(cfg.StatInterval, -1)
	cfg.LockRetry = cmp.Or(cfg.LockRetry, 50*time.Millisecond)
	r.mt = New(b.logger, cfg, b.store, b.payloads, r.reg)
	r.mt.test.vacuumChecked = func(now time.Time) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.vacuumCheck = now
	}
	stop := testenv.Go(t, "the maintainer", r.mt.Run)
	r.stop = func() { require.NoError(t, stop()) }
	t.Cleanup(r.stop)
	return r
}

// pass waits for the retention pass run for the clock's current time,
// kicking the maintainer when no pass is reported for a while or a pass
// reports an earlier time. It leaves no kick behind: a pass it asked for
// but did not need would run at the old time while the test prepares the
// next one (it once purged a day's objects before the pass under test).
func (r *running) pass(t *testing.T, at time.Time) RetentionReport {
	t.Helper()
	deadline := time.After(30 * time.Second)
	quiet := time.NewTicker(200 * time.Millisecond)
	defer quiet.Stop()
	for {
		select {
		case rep := <-r.reports:
			if rep.At.Equal(at) {
				require.NoError(t, rep.Err)
				select {
				case <-r.mt.kick:
				default:
				}
				return rep
			}
			r.mt.Kick()
		case <-quiet.C:
			r.mt.Kick()
		case <-deadline:
			t.Fatalf("no retention pass for %s", at)
		}
	}
}

// day returns the UTC midnight of t.
func day(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// partName names the day table of parent for d.
func partName(parent string, d time.Time) string {
	return fmt.Sprintf("%s_p%s", parent, d.UTC().Format("20060102"))
}

// exec runs sql (statements of one implicit transaction) on the test's
// own connection.
func (b *bundle) exec(t *testing.T, sql string) {
	t.Helper()
	_, err := b.sql.Exec(t.Context(), sql)
	require.NoError(t, err)
}

// fillDeliveries turns autovacuum off for the queue table (so that only the
// maintainer vacuums or analyzes it) and inserts n rows into it.
func (b *bundle) fillDeliveries(t *testing.T, n int) {
	t.Helper()
	b.exec(t, "ALTER TABLE deliveries SET (autovacuum_enabled = off)")
	b.exec(t, fmt.Sprintf(`INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT 0, 1, 'k' || g, g, now() FROM generate_series(1, %d) g`, n))
}

// tableExists reports whether the table exists.
func (b *bundle) tableExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, b.sql.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok))
	return ok
}

// addTraffic stores one callback received at at, with its S3 payload, one
// delivery attempt and one idempotency key; it returns the message id and
// the payload's object key.
func (b *bundle) addTraffic(t *testing.T, at time.Time) (int64, string) {
	t.Helper()
	ctx := t.Context()
	var id int64
	require.NoError(t, b.sql.QueryRow(ctx, "SELECT nextval('messages_id_seq')").Scan(&id))
	key := storage.PayloadKey(at, fmt.Sprint(id))
	_, err := b.payloads.Put(ctx, key, []byte(`{"tracking_no":"T1"}`))
	require.NoError(t, err)
	_, err = b.sql.Exec(ctx, `INSERT INTO messages (id, received_at, carrier_id, ordering_key, queue, payload_key, payload_size, payload_sha256)
		VALUES ($1, $2, 1, 'T1', 0, $3, 20, '\x00')`, id, at, key)
	require.NoError(t, err)
	_, err = b.sql.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt, attempted_at, outcome, latency_ms)
		VALUES ($1, $1, $2, 1, 1, $2, 'success', 5)`, id, at)
	require.NoError(t, err)
	_, err = b.sql.Exec(ctx, `INSERT INTO idempotency_keys (carrier_id, idem_key, day, created_at, message_id, message_received_at)
		VALUES (1, $1, $2::timestamptz::date, $2, $3, $2)`, fmt.Sprint("k", id), at, id)
	require.NoError(t, err)
	return id, key
}

// objectExists reports whether the S3 object exists.
func (b *bundle) objectExists(t *testing.T, key string) bool {
	t.Helper()
	_, err := b.payloads.Get(t.Context(), key)
	if errors.Is(err, storage.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// forbidDeletes makes any row DELETE on the history tables fail, so retention
// cannot cheat with DELETE.
func (b *bundle) forbidDeletes(t *testing.T) {
	t.Helper()
	_, err := b.sql.Exec(t.Context(), `
CREATE FUNCTION forbid_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'row DELETE on history table %', TG_TABLE_NAME; END $$;
CREATE TRIGGER no_delete BEFORE DELETE ON messages FOR EACH ROW EXECUTE FUNCTION forbid_delete();
CREATE TRIGGER no_delete BEFORE DELETE ON delivery_attempts FOR EACH ROW EXECUTE FUNCTION forbid_delete();
CREATE TRIGGER no_delete BEFORE DELETE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION forbid_delete();`)
	require.NoError(t, err)
}

// historyRowsDeleted sums n_tup_del over the history tables' partitions.
func (b *bundle) historyRowsDeleted(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.sql.QueryRow(t.Context(), `SELECT pg_stat_clear_snapshot()::text IS NULL`).Scan(new(bool)))
	require.NoError(t, b.sql.QueryRow(t.Context(), `SELECT coalesce(sum(n_tup_del), 0)::bigint FROM pg_stat_user_tables
		WHERE relname ~ '^(messages|delivery_attempts|idempotency_keys)_p[0-9]{8}$'`).Scan(&n))
	return n
}

// value reads a gauge's or counter's current value.
func value(t testing.TB, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	switch {
	case out.Gauge != nil:
		return out.Gauge.GetValue()
	case out.Counter != nil:
		return out.Counter.GetValue()
	}
	t.Fatalf("not a gauge or counter")
	return 0
}

func splitLines(s string) []string { return strings.Split(s, "\n") }
func contains(s, sub string) bool  { return strings.Contains(s, sub) }
func itoa(n int) string            { return strconv.Itoa(n) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// settleCommits returns once every transaction whose xid shares a commit-LSN
// group of pg_xact (32 xids) with a row of tables has ended and its commit
// record is on disk. Until then a VACUUM may leave a row's commit hint bit
// unset, and so its page not all-visible: PostgreSQL keeps one LSN per group,
// that of its latest asynchronous commit, and it does not set the hint of a
// row before the WAL up to that LSN is flushed. Other tests' dispatchers
// ack with asynchronous commits whose xids fall between this test's. (The
// closed-day VACUUM runs ten minutes after the day's last commit.)
func (b *bundle) settleCommits(t *testing.T, tables ...string) {
	t.Helper()
	ctx := t.Context()
	const group = 32
	var next int64
	require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&next))
	groups := map[int64]bool{}
	for _, table := range tables {
		rows, err := b.sql.Query(ctx, "SELECT DISTINCT xmin::text::bigint FROM "+pgx.Identifier{table}.Sanitize())
		require.NoError(t, err)
		raw, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		for _, x := range raw {
			// The 64-bit xid: the latest one below next whose low half is x.
			groups[(next-(next-x)&0xFFFFFFFF)/group] = true
		}
	}
	var xids []int64
	last := int64(0)
	for g := range groups {
		for x := g * group; x < (g+1)*group; x++ {
			xids = append(xids, x)
		}
		last = max(last, (g+1)*group-1)
	}
	// Every xid of those groups assigned (each of these commits
	// synchronously) ...
	for cur := int64(0); cur <= last; {
		require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_current_xact_id()::text::bigint").Scan(&cur))
	}
	// ... and ended.
	testenv.EventuallyErr(t, 30*time.Second, func() error {
		var running int
		require.NoError(t, b.sql.QueryRow(ctx, `SELECT count(*) FROM unnest($1::bigint[]) x
			WHERE pg_xact_status(x::text::xid8) = 'in progress'`, xids).Scan(&running))
		if running > 0 {
			return fmt.Errorf("%d transactions of the rows' xid groups still running", running)
		}
		return nil
	})
	// A synchronous commit flushes the WAL up to it, their commits included.
	require.NoError(t, b.sql.QueryRow(ctx, "SELECT pg_current_xact_id()::text::bigint").Scan(new(int64)))
}
