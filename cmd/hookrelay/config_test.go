package main

import (
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/maintenance"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/storage"
	"github.com/hookrelay/hookrelay/throttle"
	"github.com/hookrelay/hookrelay/web"
)

// processVariables are the variables loadConfig reads that belong to the
// process rather than to a package's Config: their defaults live in cmd.
var processVariables = []string{
	"DATABASE_URL", "HOOKRELAY_ADDR", "HOOKRELAY_ADMIN_TOKEN", "HOOKRELAY_DATA_DIR",
	"HOOKRELAY_S3_ENDPOINT", "HOOKRELAY_S3_EMBED_ADDR", "HOOKRELAY_LOG_FORMAT",
	"HOOKRELAY_LOG_LEVEL", "HOOKRELAY_PPROF_ADDR", "HOOKRELAY_ENCRYPTION_KEY", "HOOKRELAY_ENCRYPTION_KEYS_OLD",
	"HOOKRELAY_ENCRYPTION_LOST_KEY_IDS", "HOOKRELAY_TRACING", "HOOKRELAY_ROLES",
}

// TestConfigDefaultsArePackageDefaults loads the configuration from an empty
// environment and checks every variable's value against the default its
// package's WithDefaults applies; it also checks that the table names every
// variable loadConfig reads, so a new variable cannot skip the check.
func TestConfigDefaultsArePackageDefaults(t *testing.T) {
	t.Parallel()
	var read []string
	c, err := loadConfig(func(k string) string { read = append(read, k); return "" })
	require.NoError(t, err)

	dbDef := db.Config{}.WithDefaults()
	sessDef := db.SessionConfig{}.WithDefaults()
	in, inDef := c.API, api.Config{}.WithDefaults()
	d, dDef := c.Dispatch, dispatch.Config{}.WithDefaults()
	m, mDef := c.Maintenance, maintenance.Config{}.WithDefaults()
	w, wDef := c.Web, web.Config{}.WithDefaults()
	opsDef := ops.Config{}.WithDefaults()
	s3Def := storage.Config{}.WithDefaults()
	thDef := throttle.Config{}.WithDefaults()
	rows := []struct {
		name      string
		got, want any
	}{
		{"HOOKRELAY_QUEUES", in.Queues, inDef.Queues},
		{"HOOKRELAY_QUEUES", d.Queues, dDef.Queues},
		{"HOOKRELAY_QUEUES", m.Queues, mDef.Queues},
		{"HOOKRELAY_QUEUES", w.Queues, wDef.Queues},
		{"HOOKRELAY_QUEUES", c.Ops.Queues, opsDef.Queues},
		{"HOOKRELAY_LEASE", d.Lease, dDef.Lease},
		// The packages' zero configurations have no budget (their tests
		// run unpaced); the product's default is the dispatch package's
		// constant, one value for both roles.
		{"HOOKRELAY_LATENCY_BUDGET", d.LatencyBudget, dispatch.DefaultLatencyBudget},
		{"HOOKRELAY_LATENCY_BUDGET", in.Batcher.LatencyBudget, dispatch.DefaultLatencyBudget},
		{"HOOKRELAY_ALLOW_PRIVATE_TARGETS", c.Ops.AllowPrivateTargets, opsDef.AllowPrivateTargets},
		{"HOOKRELAY_ALLOW_PRIVATE_TARGETS", d.AllowPrivateTargets, dDef.AllowPrivateTargets},
		// The one process-level default among the packages' settings: see
		// defaultNotify.
		{"HOOKRELAY_NOTIFY", in.Announce, defaultNotify},
		{"HOOKRELAY_NOTIFY", d.Listen, defaultNotify},
		{"HOOKRELAY_S3_BUCKET", c.S3.Bucket, s3Def.Bucket},
		{"HOOKRELAY_S3_REGION", c.S3.Region, s3Def.Region},

		{"HOOKRELAY_DB_MAX_CONNS", c.DB.MaxConns, dbDef.MaxConns},
		{"HOOKRELAY_DB_POOLER", c.DB.Pooler, dbDef.Pooler},
		{"HOOKRELAY_DATABASE_DIRECT_URL", c.DB.DirectURL, dbDef.DirectURL},
		{"HOOKRELAY_STATEMENT_TIMEOUT", c.DB.StatementTimeout, dbDef.StatementTimeout},
		{"HOOKRELAY_IDLE_IN_TX_TIMEOUT", c.DB.IdleInTransactionTimeout, dbDef.IdleInTransactionTimeout},
		{"HOOKRELAY_IDLE_IN_TX_TIMEOUT", m.Session.IdleInTransactionTimeout, sessDef.IdleInTransactionTimeout},
		{"HOOKRELAY_LOCK_TIMEOUT", c.DB.LockTimeout, dbDef.LockTimeout},

		{"HOOKRELAY_MAX_BODY_BYTES", in.MaxBodyBytes, inDef.MaxBodyBytes},
		{"HOOKRELAY_OFFLOAD_BYTES", in.OffloadBytes, inDef.OffloadBytes},
		{"HOOKRELAY_INGEST_MEMORY", in.MemoryBytes, inDef.MemoryBytes},
		{"HOOKRELAY_REQUIRE_HTTPS", c.Ops.RequireHTTPS, opsDef.RequireHTTPS},
		{"HOOKRELAY_INGEST_CACHE_TTL", in.CacheTTL, inDef.CacheTTL},
		{"HOOKRELAY_INGEST_BATCH_WAIT", in.Batcher.MaxWait, inDef.Batcher.MaxWait},
		{"HOOKRELAY_INGEST_BATCH_ROWS", in.Batcher.MaxRows, inDef.Batcher.MaxRows},
		{"HOOKRELAY_INGEST_FLUSHERS", in.Batcher.Flushers, inDef.Batcher.Flushers},
		{"HOOKRELAY_INGEST_SATURATION", in.Batcher.Saturation, inDef.Batcher.Saturation},
		{"HOOKRELAY_INGEST_NOTIFY_INTERVAL", in.AnnounceInterval, inDef.AnnounceInterval},
		{"HOOKRELAY_TRUSTED_PROXIES", in.TrustedProxies, inDef.TrustedProxies},

		{"HOOKRELAY_DISPATCH_CONCURRENCY", d.Concurrency, dDef.Concurrency},
		{"HOOKRELAY_DISPATCH_BATCH", d.BatchSize, dDef.BatchSize},
		{"HOOKRELAY_DISPATCH_MAX_RATE", d.MaxRate, dDef.MaxRate},
		{"HOOKRELAY_DISPATCH_IDLE_POLL", d.IdlePoll, dDef.IdlePoll},
		{"HOOKRELAY_DISPATCH_BUSY_POLL", d.BusyPoll, dDef.BusyPoll},
		{"HOOKRELAY_DISPATCH_CLAIM_LOOPS", d.ClaimLoops, dDef.ClaimLoops},
		{"HOOKRELAY_DISPATCH_ACK_FLUSHERS", d.AckFlushers, dDef.AckFlushers},
		{"HOOKRELAY_DISPATCH_ACK_INTERVAL", d.AckInterval, dDef.AckInterval},
		{"HOOKRELAY_DISPATCH_ACK_BATCH", d.AckBatch, dDef.AckBatch},
		{"HOOKRELAY_DISPATCH_DRAIN_TIMEOUT", d.DrainTimeout, dDef.DrainTimeout},
		{"HOOKRELAY_DISPATCH_QUICK_RETRIES", d.QuickRetries, dDef.QuickRetries},
		{"HOOKRELAY_OPS_TIMEOUT", d.OpsTimeout, dDef.OpsTimeout},
		{"HOOKRELAY_OPS_RETRY_BASE", d.OpsRetryBase, dDef.OpsRetryBase},
		{"HOOKRELAY_OPS_RETRY_MAX", d.OpsRetryMax, dDef.OpsRetryMax},
		{"HOOKRELAY_OPS_ATTEMPTS", d.OpsAttempts, dDef.OpsAttempts},
		{"HOOKRELAY_OPS_COALESCE", d.OpsCoalesce, dDef.OpsCoalesce},
		// No proxy: none of these is set.
		{"HOOKRELAY_EGRESS_PROXY", d.EgressProxy, dDef.EgressProxy},
		{"HTTPS_PROXY", d.EgressProxy, dDef.EgressProxy},
		{"https_proxy", d.EgressProxy, dDef.EgressProxy},
		{"HTTP_PROXY", d.EgressProxy, dDef.EgressProxy},
		{"http_proxy", d.EgressProxy, dDef.EgressProxy},
		{"NO_PROXY", d.EgressProxy, dDef.EgressProxy},
		{"no_proxy", d.EgressProxy, dDef.EgressProxy},

		{"HOOKRELAY_RETENTION", m.Retention, mDef.Retention},
		{"HOOKRELAY_AUDIT_RETENTION", m.AuditRetention, mDef.AuditRetention},
		{"HOOKRELAY_PARTITIONS_AHEAD", m.PartitionsAhead, mDef.PartitionsAhead},
		{"HOOKRELAY_RETENTION_INTERVAL", m.RetentionInterval, mDef.RetentionInterval},
		{"HOOKRELAY_VACUUM_INTERVAL", m.VacuumInterval, mDef.VacuumInterval},
		{"HOOKRELAY_VACUUM_MIN_GAP", m.VacuumMinGap, mDef.VacuumMinGap},
		{"HOOKRELAY_VACUUM_CHURN_WINDOW", m.VacuumChurnWindow, mDef.VacuumChurnWindow},
		{"HOOKRELAY_VACUUM_DEAD_SPACE_PERMILLE", m.VacuumDeadSpace, mDef.VacuumDeadSpace},
		{"HOOKRELAY_VACUUM_MAX_GAP", m.VacuumMaxGap, mDef.VacuumMaxGap},
		{"HOOKRELAY_VACUUM_MIN_CHURN", m.VacuumMinChurn, mDef.VacuumMinChurn},
		{"HOOKRELAY_VACUUM_HEAP_BUDGET_PERCENT", m.VacuumHeapBudget, mDef.VacuumHeapBudget},
		{"HOOKRELAY_VACUUM_FULL_GAP", m.VacuumFullGap, mDef.VacuumFullGap},
		{"HOOKRELAY_VACUUM_DEAD_TUPLES", m.VacuumDeadTuples, mDef.VacuumDeadTuples},
		{"HOOKRELAY_VACUUM_DEAD_PERCENT", m.VacuumDeadRatio, mDef.VacuumDeadRatio},
		{"HOOKRELAY_VACUUM_MIN_DEAD", m.VacuumMinDead, mDef.VacuumMinDead},
		{"HOOKRELAY_HISTORY_ANALYZE_ROWS", m.HistoryAnalyzeRows, mDef.HistoryAnalyzeRows},
		{"HOOKRELAY_REINDEX_INTERVAL", m.ReindexInterval, mDef.ReindexInterval},
		{"HOOKRELAY_HEALTH_INTERVAL", m.HealthInterval, mDef.HealthInterval},
		{"HOOKRELAY_LONG_TRANSACTION", m.LongTransaction, mDef.LongTransaction},
		{"HOOKRELAY_POLL_LAG_ALERT", m.PollLagAlert, mDef.PollLagAlert},
		{"HOOKRELAY_STAT_INTERVAL", m.StatInterval, mDef.StatInterval},
		{"HOOKRELAY_REPLAY_BATCH", m.Replay.Batch, maintenance.DefaultReplayBatch},
		{"HOOKRELAY_REPLAY_INTERVAL", m.Replay.Interval, maintenance.DefaultReplayInterval},
		{"HOOKRELAY_MAINTENANCE_LOCK_RETRY", m.LockRetry, mDef.LockRetry},
		{"HOOKRELAY_MAINTENANCE_STATEMENT_TIMEOUT", m.Session.StatementTimeout, sessDef.StatementTimeout},
		{"HOOKRELAY_MAINTENANCE_LOCK_TIMEOUT", m.Session.LockTimeout, sessDef.LockTimeout},

		{"HOOKRELAY_UI_SECURE_COOKIE", w.SecureCookie, wDef.SecureCookie},
		{"HOOKRELAY_DATABASE_REPLICA_URL", c.ReplicaURL, ""}, // none: the pages read DATABASE_URL
		{"HOOKRELAY_PORTAL_FRAME_ANCESTORS", w.PortalFrameAncestors, wDef.PortalFrameAncestors},
		// No single sign-on: HOOKRELAY_OIDC_ISSUER is unset.
		{"HOOKRELAY_OIDC_ISSUER", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_CLIENT_ID", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_CLIENT_SECRET", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_REDIRECT_URL", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_SCOPES", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_ALLOWED_DOMAINS", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_ALLOWED_GROUPS", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_GROUPS_CLAIM", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_ROLE_MAP", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_DEFAULT_ROLE", w.SSO, wDef.SSO},
		{"HOOKRELAY_OIDC_REQUIRE_VERIFIED_EMAIL", w.SSO, wDef.SSO},

		{"HOOKRELAY_AUTH_THROTTLE_FREE", c.AuthThrottle.Free, thDef.Free},
		{"HOOKRELAY_AUTH_THROTTLE_MAX", c.AuthThrottle.Max, thDef.Max},
	}
	checked := slices.Clone(processVariables)
	for _, r := range rows {
		require.Equal(t, r.want, r.got, "%s: default differs from the package's", r.name)
		checked = append(checked, r.name)
	}
	slices.Sort(read)
	slices.Sort(checked)
	require.Equal(t, slices.Compact(checked), slices.Compact(read),
		"the variables loadConfig reads and the variables this test checks differ")
}

// TestServeRejectsBadRoleSettingsBeforeDatabase starts serve with bad
// settings of several roles and a database nobody listens on: serve must
// name every bad variable and give up at once, without waiting for the
// database (retryStartup would keep trying it for 30 s).
func TestServeRejectsBadRoleSettingsBeforeDatabase(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())

	bad := map[string]string{
		"HOOKRELAY_DISPATCH_BATCH":             "0",
		"HOOKRELAY_VACUUM_INTERVAL":            "x",
		"HOOKRELAY_INGEST_FLUSHERS":            "65",
		"HOOKRELAY_INGEST_SATURATION":          "0",
		"HOOKRELAY_VACUUM_DEAD_SPACE_PERMILLE": "0.5",
		"HOOKRELAY_UI_SECURE_COOKIE":           "maybe",
		"HOOKRELAY_PPROF_ADDR":                 "6060",
		"HOOKRELAY_TRACING":                    "sometimes",
		"HOOKRELAY_PORTAL_FRAME_ANCESTORS":     "https://console.example.com/path",
	}
	env := map[string]string{"DATABASE_URL": "postgres://postgres@" + closed + "/hookrelay?sslmode=disable"}
	for k, v := range bad {
		env[k] = v
	}
	// Settings of roles the process does not run are checked as well.
	for _, roles := range []string{"all", "maintenance"} {
		start := time.Now()
		err := run(context.Background(), []string{"hookrelay", "serve", "--roles", roles},
			func(k string) string { return env[k] }, io.Discard, io.Discard)
		require.Error(t, err, roles)
		require.Less(t, time.Since(start), 5*time.Second, "serve waited for the database")
		require.Contains(t, err.Error(), "configuration:", roles)
		for k := range bad {
			require.Contains(t, err.Error(), k, roles)
		}
		require.NotContains(t, err.Error(), "connect", roles)
	}
}

// TestConfigIngestMemory: HOOKRELAY_INGEST_MEMORY takes 1 MiB to 64 GiB and
// must leave room for a body of HOOKRELAY_MAX_BODY_BYTES while it grows.
func TestConfigIngestMemory(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) (config, error) {
		return loadConfig(func(k string) string { return env[k] })
	}
	c, err := load(map[string]string{"HOOKRELAY_INGEST_MEMORY": "33554432"})
	require.NoError(t, err)
	require.Equal(t, 32<<20, c.API.MemoryBytes)

	for _, bad := range []map[string]string{
		{"HOOKRELAY_INGEST_MEMORY": "1048575"},
		{"HOOKRELAY_INGEST_MEMORY": "68719476737"},
		{"HOOKRELAY_INGEST_MEMORY": "lots"},
		{"HOOKRELAY_INGEST_MEMORY": "16777216", "HOOKRELAY_MAX_BODY_BYTES": "8388608"},
		{"HOOKRELAY_MAX_BODY_BYTES": "268435456"},
	} {
		_, err := load(bad)
		require.Error(t, err, "%v", bad)
		require.Contains(t, err.Error(), "HOOKRELAY_INGEST_MEMORY", "%v", bad)
	}
	_, err = load(map[string]string{"HOOKRELAY_INGEST_MEMORY": "16777218", "HOOKRELAY_MAX_BODY_BYTES": "8388608"})
	require.NoError(t, err)
}

// TestConfigQuickRetries: HOOKRELAY_DISPATCH_QUICK_RETRIES takes "none" or up
// to dispatch.MaxQuickRetries durations from 10ms to 1m.
func TestConfigQuickRetries(t *testing.T) {
	t.Parallel()
	load := func(v string) (config, error) {
		return loadConfig(func(k string) string {
			if k == "HOOKRELAY_DISPATCH_QUICK_RETRIES" {
				return v
			}
			return ""
		})
	}
	c, err := load("250ms, 1s")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{250 * time.Millisecond, time.Second}, c.Dispatch.QuickRetries)
	c, err = load("none")
	require.NoError(t, err)
	require.NotNil(t, c.Dispatch.QuickRetries)
	require.Empty(t, c.Dispatch.QuickRetries, "none: no quick retries, and WithDefaults keeps it so")
	require.Empty(t, c.Dispatch.WithDefaults().QuickRetries)
	for _, bad := range []string{"soon", "5ms", "2m", "1s,,2s", "1s,1s,1s,1s,1s,1s", "0"} {
		_, err := load(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "HOOKRELAY_DISPATCH_QUICK_RETRIES", bad)
	}
}

// TestConfigPooler: HOOKRELAY_DB_POOLER takes none or pgbouncer, and
// pgbouncer needs HOOKRELAY_DATABASE_DIRECT_URL.
func TestConfigPooler(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) (config, error) {
		return loadConfig(func(k string) string { return env[k] })
	}
	direct := "postgres://hookrelay:secret@db.internal:5432/hookrelay"
	c, err := load(map[string]string{"HOOKRELAY_DB_POOLER": "pgbouncer", "HOOKRELAY_DATABASE_DIRECT_URL": direct})
	require.NoError(t, err)
	require.Equal(t, db.PoolerPgBouncer, c.DB.Pooler)
	require.Equal(t, direct, c.DB.DirectURL)
	require.Equal(t, direct, c.DB.SessionURL())
	c, err = load(nil)
	require.NoError(t, err)
	require.Equal(t, c.DB.URL, c.DB.SessionURL(), "no direct URL: sessions use DATABASE_URL")

	_, err = load(map[string]string{"HOOKRELAY_DB_POOLER": "pgbouncer"})
	require.ErrorContains(t, err, "HOOKRELAY_DATABASE_DIRECT_URL: required")
	_, err = load(map[string]string{"HOOKRELAY_DB_POOLER": "odyssey"})
	require.ErrorContains(t, err, "HOOKRELAY_DB_POOLER")
	_, err = load(map[string]string{"HOOKRELAY_DATABASE_DIRECT_URL": "mysql://db.internal:3306/x?password=hunter2"})
	require.ErrorContains(t, err, "HOOKRELAY_DATABASE_DIRECT_URL")
}

// TestConfigEgressProxy: HOOKRELAY_EGRESS_PROXY comes first and excludes no
// host; without it HTTPS_PROXY, then HTTP_PROXY (either spelling), with
// NO_PROXY's exclusions; only http:// proxies are taken, and an error never
// shows the proxy's password.
func TestConfigEgressProxy(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) (config, error) {
		return loadConfig(func(k string) string { return env[k] })
	}
	c, err := load(map[string]string{"HOOKRELAY_EGRESS_PROXY": "http://u:p@egress.internal:3128",
		"HTTPS_PROXY": "http://other:8080", "NO_PROXY": "shop.example"})
	require.NoError(t, err)
	p := c.Dispatch.EgressProxy
	require.NotNil(t, p)
	require.Equal(t, "egress.internal:3128", p.URL.Host)
	require.Equal(t, "u", p.URL.User.Username())
	require.Nil(t, p.NoProxy, "HOOKRELAY_EGRESS_PROXY carries every delivery")

	c, err = load(map[string]string{"https_proxy": "http://s.internal:3128", "HTTP_PROXY": "http://h.internal:3128",
		"no_proxy": "shop.example,.corp.example"})
	require.NoError(t, err)
	p = c.Dispatch.EgressProxy
	require.Equal(t, "s.internal:3128", p.URL.Host)
	require.True(t, p.NoProxy("shop.example"))
	require.True(t, p.NoProxy("hooks.corp.example"))
	require.False(t, p.NoProxy("merchant.example"))

	c, err = load(map[string]string{"HTTP_PROXY": "http://h.internal:3128"})
	require.NoError(t, err)
	require.Equal(t, "h.internal:3128", c.Dispatch.EgressProxy.URL.Host)
	require.False(t, c.Dispatch.EgressProxy.NoProxy("merchant.example"))

	for _, bad := range []map[string]string{
		{"HOOKRELAY_EGRESS_PROXY": "socks5://u:hunter2@proxy:1080"},
		{"HOOKRELAY_EGRESS_PROXY": "http://u:hunter2@/"},
		{"HTTPS_PROXY": "https://u:hunter2@proxy:443"},
	} {
		_, err := load(bad)
		require.Error(t, err, "%v", bad)
		require.Contains(t, err.Error(), "PROXY", "%v", bad)
		require.NotContains(t, err.Error(), "hunter2", "%v", bad)
	}
}

func TestConfigTrustedProxies(t *testing.T) {
	t.Parallel()
	load := func(v string) (config, error) {
		return loadConfig(func(k string) string {
			if k == "HOOKRELAY_TRUSTED_PROXIES" {
				return v
			}
			return ""
		})
	}
	c, err := load(" 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("2001:db8::/32")}, c.API.TrustedProxies)
	for _, bad := range []string{"proxy.internal", "10.0.0.0/33", "10.0.0.0/8,,"} {
		_, err := load(bad)
		require.ErrorContains(t, err, "HOOKRELAY_TRUSTED_PROXIES", bad)
	}
}
