package maintenance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOneHolderAndTakeOver: of two processes one holds the role, on a session
// that is never idle in a transaction; when its connection dies, the other
// takes over and the first stands by.
func TestOneHolderAndTakeOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := Config{RetentionInterval: -1, LockRetry: 50 * time.Millisecond}
	r1 := b.start(t, cfg)
	r2 := b.start(t, cfg)
	leaders := func() (float64, float64) {
		return value(t, r1.mt.m.leader.WithLabelValues()), value(t, r2.mt.m.leader.WithLabelValues())
	}
	require.Eventually(t, func() bool { a, c := leaders(); return a+c == 1 }, 10*time.Second, 10*time.Millisecond)
	// It stays that way.
	time.Sleep(200 * time.Millisecond)
	a, c := leaders()
	require.Equal(t, 1.0, a+c)
	holder, standby := r1, r2
	if c == 1 {
		holder, standby = r2, r1
	}

	var pid int
	var state string
	require.NoError(t, b.sql.QueryRow(t.Context(), `SELECT l.pid, a.state FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE l.locktype = 'advisory' AND l.granted AND l.objid = $1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		LockKey&0xffffffff).Scan(&pid, &state))
	require.Equal(t, "idle", state)

	_, err := b.sql.Exec(t.Context(), "SELECT pg_terminate_backend($1)", pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return value(t, standby.mt.m.leader.WithLabelValues()) == 1 && value(t, holder.mt.m.leader.WithLabelValues()) == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Contains(t, b.logs.String(), "role lost or not taken")
}
