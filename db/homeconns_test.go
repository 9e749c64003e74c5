package db_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestHotStatementsKeepTheirSessions checks the home connections of the hot
// statements: the same sessions come back, no more than a quarter of the
// pool is kept, a connection that saw an error is not kept, and closing the
// store does not wait for them.
func TestHotStatementsKeepTheirSessions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store, err := db.Open(ctx, db.Config{URL: url, MaxConns: 8}) // two home connections
	require.NoError(t, err)

	pids, home, held, err := db.ClaimHomeLeases(ctx, store, 3, nil)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false}, home, "a third lease at once is a plain pool connection")
	require.Equal(t, 2, held)
	kept := map[int32]bool{pids[0]: true, pids[1]: true}

	for range 5 {
		again, home, held, err := db.ClaimHomeLeases(ctx, store, 2, nil)
		require.NoError(t, err)
		require.Equal(t, []bool{true, true}, home)
		require.Equal(t, 2, held)
		require.True(t, kept[again[0]] && kept[again[1]], "home sessions %v, got %v", kept, again)
	}

	_, _, held, err = db.ClaimHomeLeases(ctx, store, 1, []error{errors.New("statement failed")})
	require.NoError(t, err)
	require.Equal(t, 1, held, "a connection whose statement failed goes back to the pool")

	// A home session ended by the server (a restart, pg_terminate_backend)
	// while it waited is noticed by a ping, not by a failed statement.
	idle, _, _, err := db.ClaimHomeLeases(ctx, store, 1, nil)
	require.NoError(t, err)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	var ended bool
	require.NoError(t, admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", idle[0]).Scan(&ended))
	require.True(t, ended)
	time.Sleep(1100 * time.Millisecond)
	after, home, _, err := db.ClaimHomeLeases(ctx, store, 1, nil)
	require.NoError(t, err, "the ended session was handed out")
	require.True(t, home[0])
	require.NotEqual(t, idle[0], after[0])

	done := make(chan struct{})
	go func() {
		store.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for the home connections")
	}
}

// TestClaimPlanSurvivesGrowth: the claim's home sessions keep one generic
// plan of it, made here on a small table. After the table has grown by
// thousands of due rows, with no VACUUM or ANALYZE in between to replace the
// plan, that plan still reads deliveries by index only. A home session that
// goes back to the pool leaves its settings behind.
func TestClaimPlanSurvivesGrowth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{MaxConns: 4}) // one claim home connection
	claim := func(token int64) int {
		got, err := dbtest.DeliveryClaim(ctx, store, []int{0}, 50, 50, 1, token, time.Minute)
		require.NoError(t, err)
		return len(got)
	}
	ep, _ := dbtest.Endpoint(t, store, nil)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	// A small table, vacuumed and analyzed as the maintenance role keeps it:
	// a plan made for it alone would read it sequentially or by bitmap.
	_, err = admin.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at)
		SELECT 1, $1, 'small-' || g, g, now() FROM generate_series(1, 200) g`, ep.ID)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "VACUUM ANALYZE deliveries")
	require.NoError(t, err)
	for i := range 3 {
		require.Zero(t, claim(int64(i+1)))
	}
	_, err = admin.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at, visible_at)
		SELECT 0, $1, 'grow-' || g, g, now(), now() - interval '1 minute' FROM generate_series(1, 5000) g`, ep.ID)
	require.NoError(t, err)

	text := keptClaimPlan(ctx, t, store, "", "'{0}', '{0}', '{}', 32, 50, 50, '1 minute', 1, 99")
	require.NotContains(t, text, "Seq Scan on deliveries", text)
	require.NotContains(t, text, "Bitmap Heap Scan on deliveries", text)
	require.Equal(t, 50, claim(100), "the kept plan claims from the grown table")

	_, _, held, err := db.ClaimHomeLeases(ctx, store, 1, []error{errors.New("statement failed")})
	require.NoError(t, err)
	require.Zero(t, held)
	require.Equal(t, []string{"auto"}, db.PoolSettings(ctx, t, store, "plan_cache_mode"),
		"a session back in the pool keeps the claim's settings")
}

// TestClaimPlanOnBacklog: the generic claim plan made once the table holds
// a backlog (each VACUUM or ANALYZE of the table has the next claim plan it
// again) joins by nested loops of index look-ups only. A claim touches at
// most a batch of rows; a hash or merge join reads a whole side. Draining a
// backlog of 1,000,000, the lease's UPDATE joined by merge read the primary
// key from its first entry to the batch's last (up to 20,000 entries, half
// the claim's pages) in one claim of five.
func TestClaimPlanOnBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{MaxConns: 4}) // one claim home connection
	ep, _ := dbtest.Endpoint(t, store, nil)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at, visible_at)
		SELECT g % 32, $1, 'key-' || g % 10000, g, now(), now() - interval '1 minute' FROM generate_series(1, 1000000) g`, ep.ID)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "VACUUM ANALYZE deliveries")
	require.NoError(t, err)
	queues := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	got, err := dbtest.DeliveryClaim(ctx, store, queues, 13, 50, 1, 1, time.Minute)
	require.NoError(t, err)
	require.NotEmpty(t, got)

	text := keptClaimPlan(ctx, t, store, "", "'{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}', '{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}', '{}', 32, 13, 50, '1 minute', 1, 99")
	require.Contains(t, text, "Update on deliveries", text)
	require.NotRegexp(t, `(Hash|Merge)( Left| Right| Semi| Anti)? Join`, text, text)
	// Nor is it compiled: the estimates of a generic plan on a backlog pass
	// jit_above_cost, and compiling took 47 ms of each 49 ms claim.
	require.NotContains(t, text, "JIT", text)
}

// keptClaimPlan returns the EXPLAIN of the claim's kept plan on its home
// session, executed with args; the plan must be a generic one, never a
// custom one. options are EXPLAIN's ("(ANALYZE, BUFFERS)": the claim runs).
func keptClaimPlan(ctx context.Context, t *testing.T, store *db.DB, options, args string) string {
	t.Helper()
	var plan []string
	require.NoError(t, db.OnClaimHomeConn(ctx, store, func(c *pgx.Conn) error {
		var name string
		var generic, custom int64
		// The look-up's own text holds the pattern too.
		if err := c.QueryRow(ctx, `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements
			WHERE statement LIKE '%name: DeliveryClaim :many%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&name, &generic, &custom); err != nil {
			return err
		}
		if generic == 0 || custom != 0 {
			return fmt.Errorf("claim plans: %d generic, %d custom", generic, custom)
		}
		rows, err := c.Query(ctx, "EXPLAIN "+options+" EXECUTE "+name+"("+args+")")
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}))
	return strings.Join(plan, "\n")
}

// TestClaimSessionSettingsOnlyWithCachedStatements: the claim's session
// settings are for sessions that keep their prepared statements (pgx's
// default); with another exec mode, chosen for pgbouncer in transaction mode,
// they are left out so that no SET reaches a shared server session.
func TestClaimSessionSettingsOnlyWithCachedStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	for _, c := range []struct{ suffix, want string }{
		{"", "force_generic_plan"},
		{"&default_query_exec_mode=exec", "auto"},
	} {
		store := dbtest.Open(t, url+c.suffix, db.Config{MaxConns: 4})
		var got string
		require.NoError(t, db.OnClaimHomeConn(ctx, store, func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SELECT current_setting('plan_cache_mode')").Scan(&got)
		}))
		require.Equal(t, c.want, got, "URL suffix %q", c.suffix)
	}
}

// TestClaimReadsLittleBehindIdleBacklogs: a backlog the claim cannot take
// (an endpoint at its max_in_flight, named in skip; or every row waiting for
// a retry) costs a claim of the queue about what an empty queue does, not a
// read of the backlog: the endpoint before B in the claim index has 50,000
// such rows, and the claim that gives B its 2 reads a few dozen buffers and
// throws away no more than a handful of rows at any step. A claim that
// locked a queue's due rows as it scanned them in index order read every
// skipped row from the heap, and every waiting row's index entry (CHANGELOG,
// "Tried and not kept").
func TestClaimReadsLittleBehindIdleBacklogs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		visibleAt string // of the backlog's rows
		skip      bool
	}{{"skipped", "now() - interval '1 minute'", true}, {"waiting", "now() + interval '1 hour'", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := dbtest.NewURL(t)
			store := dbtest.Open(t, url, db.Config{MaxConns: 4}) // one claim home connection
			a, _ := dbtest.Endpoint(t, store, nil)
			b, _ := dbtest.Endpoint(t, store, nil)
			admin, err := pgx.Connect(ctx, url)
			require.NoError(t, err)
			defer admin.Close(ctx)
			_, err = admin.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at, visible_at)
				SELECT 3, $1, 'a-' || g, g, now(), `+c.visibleAt+` FROM generate_series(1, 50000) g`, a.ID)
			require.NoError(t, err)
			_, err = admin.Exec(ctx, `INSERT INTO deliveries (queue, endpoint_id, ordering_key, message_id, message_received_at, visible_at)
				SELECT 3, $1, 'b-' || g, g, now(), now() - interval '1 minute' FROM generate_series(1, 2) g`, b.ID)
			require.NoError(t, err)
			_, err = admin.Exec(ctx, "VACUUM ANALYZE deliveries")
			require.NoError(t, err)
			skip := "'{}'"
			var skipIDs []int64
			if c.skip {
				skip = fmt.Sprintf("'{%d}'", a.ID)
				skipIDs = []int64{a.ID}
			}
			// The first claim prepares the statement on its home session.
			got, _, err := store.DeliveryClaim(ctx, db.ClaimParams{Queues: []int{4}, Skip: skipIDs, PerQueue: 7, Batch: 50, Owner: 1, Token: 1, Lease: time.Minute})
			require.NoError(t, err)
			require.Empty(t, got)

			text := keptClaimPlan(ctx, t, store, "(ANALYZE, BUFFERS, TIMING OFF)",
				"'{3}', '{0}', "+skip+", 32, 7, 50, '1 minute', 1, 99")
			var leased int
			require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE lease_token = 99`).Scan(&leased))
			require.Equal(t, 2, leased, "B's rows claimed\n%s", text)
			m := regexp.MustCompile(`Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?`).FindStringSubmatch(text)
			require.NotNil(t, m, text)
			buffers := 0
			for _, n := range m[1:] {
				if n != "" {
					v, err := strconv.Atoi(n)
					require.NoError(t, err)
					buffers += v
				}
			}
			t.Logf("claim buffers: %d", buffers)
			require.Less(t, buffers, 400, "buffers of the claim behind a backlog it cannot take\n%s", text)
			// Each plan node's rows read and thrown away: the filtered scan
			// of the backlog shows here, whatever its pages cost.
			removed := 0
			for _, m := range regexp.MustCompile(`Rows Removed by (?:Filter|Join Filter|Index Recheck): (\d+)`).FindAllStringSubmatch(text, -1) {
				n, err := strconv.Atoi(m[1])
				require.NoError(t, err)
				removed = max(removed, n)
			}
			t.Logf("most rows removed by one node: %d", removed)
			require.Less(t, removed, 1000, "the claim read through the backlog it cannot take\n%s", text)
		})
	}
}
