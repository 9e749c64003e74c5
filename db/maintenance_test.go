package db_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestVacuumRunsWithoutParallelWorkers: the full VACUUM of a hot table reads
// its indexes in the session's own backend. The session is set up so that
// the server would start workers for any VACUUM that allows them (every
// index large enough, two workers allowed), and the table has dead tuples on
// every page, so the VACUUM does vacuum its three indexes; the server's
// DEBUG2 messages, sent to the session, say whether it launched workers.
func TestVacuumRunsWithoutParallelWorkers(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	var mu sync.Mutex
	var notices []string
	sess, err := db.OpenSessionNotices(ctx, store, db.SessionConfig{}, func(m string) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, m)
	})
	require.NoError(t, err)
	defer sess.Close()
	for _, sql := range []string{
		`CREATE TABLE vacuum_probe (id bigint PRIMARY KEY, a int, b int) WITH (autovacuum_enabled = off)`,
		`CREATE INDEX vacuum_probe_a ON vacuum_probe (a)`,
		`CREATE INDEX vacuum_probe_b ON vacuum_probe (b)`,
		`INSERT INTO vacuum_probe SELECT i, i % 97, i % 89 FROM generate_series(1, 20000) i`,
		`DELETE FROM vacuum_probe WHERE id % 2 = 0`,
		`SET min_parallel_index_scan_size = 0`,
		`SET max_parallel_maintenance_workers = 2`,
		`SET client_min_messages = debug2`,
	} {
		require.NoError(t, db.SessionExec(ctx, sess, sql), sql)
	}
	require.NoError(t, sess.Vacuum(ctx, "vacuum_probe"))
	require.NoError(t, db.SessionExec(ctx, sess, `SET client_min_messages = notice`))

	mu.Lock()
	defer mu.Unlock()
	var indexPasses int
	for _, m := range notices {
		require.NotContains(t, m, "parallel vacuum worker", "the VACUUM started workers")
		if strings.HasPrefix(m, "scanned index \"vacuum_probe") && strings.HasSuffix(m, "remove 10000 row versions") {
			indexPasses++
		}
	}
	require.Equal(t, 3, indexPasses, "each index's removal of the 10,000 dead tuples reported; notices: %q", notices)
}

// TestVacuumStatementBuiltOncePerSession: a session builds a table's VACUUM
// statement (the server quotes the name) once per kind and runs the kept
// one afterwards, so a heap pass is one round trip; a name that needs
// quoting still works.
func TestVacuumStatementBuiltOncePerSession(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	ctx := t.Context()
	sess, err := store.OpenSession(ctx, db.SessionConfig{})
	require.NoError(t, err)
	defer sess.Close()
	require.NoError(t, db.SessionExec(ctx, sess, `CREATE TABLE "Vacuum Probe" (id bigint PRIMARY KEY)`))
	for range 3 {
		require.NoError(t, sess.VacuumHeap(ctx, "Vacuum Probe"))
	}
	require.Equal(t, 1, db.SessionVacuumsBuilt(sess))
	require.NoError(t, sess.Vacuum(ctx, "Vacuum Probe"))
	require.NoError(t, sess.Vacuum(ctx, "Vacuum Probe"))
	require.Equal(t, 2, db.SessionVacuumsBuilt(sess))
	require.Error(t, sess.VacuumHeap(ctx, "no such table"))
	require.Equal(t, 3, db.SessionVacuumsBuilt(sess), "a statement that failed to run is still well built")
}
