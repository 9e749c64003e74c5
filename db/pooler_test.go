package db_test

import (
	"context"
	"net"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestPoolerPgBouncerRelaysNoSessionState: with Pooler PgBouncer the pool
// sends no timeouts at connection (PgBouncer refuses them), so its sessions
// have the role's; SettingMismatches names those that differ from the
// configuration. The claim's home sessions SET nothing, and the dedicated
// sessions go to DirectURL. (The fault suite's TestPgBouncer runs the real
// binary through Debian's pgbouncer.)
func TestPoolerPgBouncerRelaysNoSessionState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	cfg := db.Config{URL: url, MaxConns: 4, Keys: dbtest.Keys(), StatementTimeout: 7 * time.Second,
		IdleInTransactionTimeout: 8 * time.Second, LockTimeout: 9 * time.Second}

	plain, err := db.Open(ctx, cfg)
	require.NoError(t, err)
	bad, err := plain.SettingMismatches(ctx)
	plain.Close()
	require.NoError(t, err)
	require.Empty(t, bad, "without a pooler the timeouts are startup parameters")
	require.True(t, db.ClaimSessionSettings(plain))

	// The role's settings in this database: two match, one does not.
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var name string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&name))
	for _, set := range []string{"statement_timeout = '7s'", "idle_in_transaction_session_timeout = '8s'", "lock_timeout = '2s'"} {
		_, err := conn.Exec(ctx, "ALTER ROLE CURRENT_USER IN DATABASE "+pgx.Identifier{name}.Sanitize()+" SET "+set)
		require.NoError(t, err)
	}

	pooled := cfg
	pooled.Pooler = db.PoolerPgBouncer
	// Nothing listens there: a dedicated session must fail to connect
	// while the pool works, which shows where each goes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := ln.Addr().String()
	ln.Close()
	pooled.DirectURL = strings.Replace(url, "@"+hostOf(t, url), "@"+deadAddr, 1)
	require.NotEqual(t, url, pooled.DirectURL)
	store, err := db.Open(ctx, pooled)
	require.NoError(t, err)
	defer store.Close()
	require.False(t, db.ClaimSessionSettings(store), "behind pgbouncer the claim's sessions SET nothing")
	bad, err = store.SettingMismatches(ctx)
	require.NoError(t, err)
	require.Equal(t, []db.Setting{{Name: "lock_timeout", Want: "9000", Got: "2000"}}, bad)
	require.NoError(t, store.Ping(ctx))
	_, err = store.OpenSession(ctx, db.SessionConfig{})
	require.Error(t, err, "the dedicated session went to DATABASE_URL, not to the direct URL")
	_, err = store.Migrate(ctx, nil)
	require.Error(t, err, "the migrations went to DATABASE_URL, not to the direct URL")
}

// hostOf returns the host:port of a postgres:// URL.
func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := neturl.Parse(raw)
	require.NoError(t, err)
	return u.Host
}
