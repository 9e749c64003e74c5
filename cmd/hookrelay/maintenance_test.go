package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/logtest"
)

// metricValue returns the value of an unlabelled series in /metrics (-1 when absent).
func metricValue(t *testing.T, baseURL, name string) float64 {
	t.Helper()
	resp, err := http.Get(baseURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

// TestServeMaintenanceReportsIdleTransaction: with the maintenance role, a
// transaction left idle by another client shows in /metrics within the
// health interval, and the role holds the lock.
func TestServeMaintenanceReportsIdleTransaction(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	s := startServe(t, map[string]string{
		"DATABASE_URL":               url,
		"HOOKRELAY_HEALTH_INTERVAL":  "100ms",
		"HOOKRELAY_LONG_TRANSACTION": "1s",
	}, "--roles", "maintenance")
	require.Eventually(t, func() bool { return metricValue(t, s.URL, "hookrelay_maintenance_leader") == 1 },
		10*time.Second, 20*time.Millisecond)

	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(t.Context(), "SELECT 1")
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		return metricValue(t, s.URL, "hookrelay_db_long_transactions") >= 1 &&
			metricValue(t, s.URL, "hookrelay_db_idle_in_transaction_sessions") >= 1 &&
			metricValue(t, s.URL, "hookrelay_db_oldest_xact_seconds") >= 1
	}, 15*time.Second, 50*time.Millisecond)
	// The metrics count the whole cluster (other tests' sessions too); the
	// warning names this session, as one of this database.
	pid := strconv.Itoa(int(conn.PgConn().PID()))
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(s.Logs.String(), "\n") {
			if strings.Contains(line, `"pid":`+pid+",") {
				return strings.Contains(line, "long transaction holds back vacuum of this database's tables")
			}
		}
		return false
	}, 15*time.Second, 50*time.Millisecond, "no warning naming the idle session %s", pid)
	require.Greater(t, metricValue(t, s.URL, "hookrelay_db_max_connections"), 0.0)
	require.NoError(t, s.Stop(t))
	require.Contains(t, s.Logs.String(), "maintenance: role released")
}

// TestMaintenanceConfigErrors: bad maintenance settings are refused at start,
// each naming its variable.
func TestMaintenanceConfigErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL":               dbtest.NewURL(t),
		"HOOKRELAY_ADDR":             "127.0.0.1:0",
		"HOOKRELAY_S3_EMBED_ADDR":    "127.0.0.1:0",
		"HOOKRELAY_DATA_DIR":         t.TempDir(),
		"HOOKRELAY_ADMIN_TOKEN":      "hra_test_admin_token_0123456789",
		"HOOKRELAY_PARTITIONS_AHEAD": "1",
		"HOOKRELAY_VACUUM_INTERVAL":  "often",
	}
	var out, errOut logtest.Buffer
	err := run(t.Context(), []string{"hookrelay", "serve", "--roles", "maintenance"}, func(k string) string { return env[k] }, &out, &errOut)
	require.Error(t, err)
	require.Contains(t, err.Error(), "HOOKRELAY_PARTITIONS_AHEAD")
	require.Contains(t, err.Error(), "HOOKRELAY_VACUUM_INTERVAL")
}
