package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/api"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/keyring"
	"github.com/hookrelay/hookrelay/maintenance"
	"github.com/hookrelay/hookrelay/ops"
	"github.com/hookrelay/hookrelay/storage"
	"github.com/hookrelay/hookrelay/throttle"
	"github.com/hookrelay/hookrelay/web"
)

// config is the process configuration, read from the environment (docs/operations/configuration.md)
// by loadConfig: the settings of the process itself, and the Config of each
// package a role runs, filled from the environment. The role files add only
// what exists at run time (logger, store, tokens, callbacks).
type config struct {
	Addr        string         // HOOKRELAY_ADDR: API and dashboard
	AdminToken  string         // HOOKRELAY_ADMIN_TOKEN; generated and printed once when unset
	DataDir     string         // HOOKRELAY_DATA_DIR: local state (embedded S3 under s3/)
	S3          storage.Config // HOOKRELAY_S3_*; Endpoint empty = embedded store
	S3EmbedAddr string         // HOOKRELAY_S3_EMBED_ADDR: embedded store address
	LogFormat   string         // HOOKRELAY_LOG_FORMAT: json | text | auto
	LogLevel    string         // HOOKRELAY_LOG_LEVEL: debug | info | warn | error
	PprofAddr   string         // HOOKRELAY_PPROF_ADDR: net/http/pprof listener; empty = none
	Roles       []string       // HOOKRELAY_ROLES (serve's --roles wins): the roles serve runs
	// Tracing (HOOKRELAY_TRACING) exports OpenTelemetry traces over OTLP/HTTP,
	// configured by the standard OTEL_* variables (newTracerProvider).
	Tracing bool
	// Keys (HOOKRELAY_ENCRYPTION_KEY, HOOKRELAY_ENCRYPTION_KEYS_OLD) seal the
	// secrets kept in the database; nil when unset (requireKeys).
	Keys *keyring.Keyring

	DB db.Config // DATABASE_URL, HOOKRELAY_DB_MAX_CONNS and timeouts
	// ReplicaURL (HOOKRELAY_DATABASE_REPLICA_URL) is a read replica the
	// dashboard's read-only pages read from; empty: they read DATABASE_URL.
	ReplicaURL string
	API        api.Config // the api role (its callback intake: package ingest)
	// Ops configures the operations of the api and web roles: the policy
	// of endpoint URLs (the dispatcher, their sender, is set at run time).
	Ops         ops.Config
	Dispatch    dispatch.Config    // the dispatch role (and the pings of api and web)
	Maintenance maintenance.Config // the maintenance role
	Web         web.Config         // the web role
	// AuthThrottle delays authentication from client addresses that failed
	// too often, on the API and the dashboard (one per process, shared).
	AuthThrottle throttle.Config
}

// Defaults of the settings that belong to the process rather than to a
// package.
const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/hookrelay?sslmode=disable"
	defaultAddr        = "127.0.0.1:8080"
	defaultDataDir     = "./data"
	defaultS3EmbedAddr = "127.0.0.1:9000"
	defaultLogFormat   = "auto"
	defaultLogLevel    = "info"
	// defaultNotify turns on what the packages leave off (a bool's zero
	// value): APIs announce stored callbacks and dispatchers LISTEN, so an
	// idle dispatcher in another process claims them at once. Off is for
	// pgbouncer in transaction mode, where LISTEN has no session to keep.
	defaultNotify = true
	// maxIngestMemory is HOOKRELAY_INGEST_MEMORY's upper bound, 64 GiB
	// (less where int is 32 bits).
	maxIngestMemory = min(64<<30, math.MaxInt)
)

// loadConfig reads and validates every variable, those of every role
// included, before anything starts; the error lists every bad variable.
// Defaults come from the packages' Default constants.
func loadConfig(getenv func(string) string) (config, error) {
	p := &envParser{getenv: getenv}
	c := readConfig(p)
	return c, p.err()
}

// loadServiceConfig is loadConfig for the commands that open the database
// (serve, migrate, rotate-encryption-key): a missing encryption key is one
// more problem of the same message.
func loadServiceConfig(getenv func(string) string) (config, error) {
	p := &envParser{getenv: getenv}
	c := readConfig(p)
	if strings.TrimSpace(getenv("HOOKRELAY_ENCRYPTION_KEY")) == "" {
		p.errs = append(p.errs, errKeyRequired)
	}
	return c, p.err()
}

// readConfig reads every variable through p, which collects the problems.
func readConfig(p *envParser) config {
	c := config{
		Addr:       p.str("HOOKRELAY_ADDR", defaultAddr),
		AdminToken: p.str("HOOKRELAY_ADMIN_TOKEN", ""),
		DataDir:    p.str("HOOKRELAY_DATA_DIR", defaultDataDir),
		S3: storage.Config{
			Endpoint:     p.str("HOOKRELAY_S3_ENDPOINT", ""),
			Bucket:       p.str("HOOKRELAY_S3_BUCKET", storage.DefaultBucket),
			Region:       p.str("HOOKRELAY_S3_REGION", storage.DefaultRegion),
			UsePathStyle: true,
		},
		S3EmbedAddr: p.str("HOOKRELAY_S3_EMBED_ADDR", defaultS3EmbedAddr),
		LogFormat:   p.oneOf("HOOKRELAY_LOG_FORMAT", defaultLogFormat, "auto", "json", "text"),
		LogLevel:    p.oneOf("HOOKRELAY_LOG_LEVEL", defaultLogLevel, "debug", "info", "warn", "error"),
		PprofAddr:   p.str("HOOKRELAY_PPROF_ADDR", ""),
		Tracing:     p.bool("HOOKRELAY_TRACING", false),
		Roles:       loadRoles(p),
	}
	// Shared by several roles.
	queues := p.int("HOOKRELAY_QUEUES", hookrelay.DefaultQueues, 1, 1024)
	lease := p.duration("HOOKRELAY_LEASE", dispatch.DefaultLease, time.Second, time.Hour)
	allowPrivate := p.bool("HOOKRELAY_ALLOW_PRIVATE_TARGETS", false)
	notify := p.bool("HOOKRELAY_NOTIFY", defaultNotify)
	// The delay a callback may gain so that the group commit, the claims
	// and the acknowledgements carry more rows at a moderate rate; 0 is the
	// lowest latency.
	budget := p.duration("HOOKRELAY_LATENCY_BUDGET", dispatch.DefaultLatencyBudget, 0, time.Second)

	c.DB = loadDB(p, lease)
	c.ReplicaURL = p.str("HOOKRELAY_DATABASE_REPLICA_URL", "")
	c.Keys = loadKeys(p)
	c.DB.Keys = c.Keys
	c.DB.LostKeyIDs = loadLostKeyIDs(p)
	c.API = loadAPI(p, queues, notify)
	c.Ops = ops.Config{
		AllowPrivateTargets: allowPrivate,
		// Refuses http:// endpoint URLs.
		RequireHTTPS: p.bool("HOOKRELAY_REQUIRE_HTTPS", false),
		Queues:       queues,
	}
	// A group commit gets as long as any statement: past it the callbacks
	// are answered 503 (a commit waiting for a synchronous standby that is
	// gone is cut short there; docs/operations/postgresql.md, "Running on a cluster").
	c.API.Batcher.CommitTimeout = c.DB.StatementTimeout
	c.API.Batcher.LatencyBudget = budget
	c.Dispatch = loadDispatch(p, queues, lease, allowPrivate, notify)
	c.Dispatch.LatencyBudget = budget
	c.Maintenance = loadMaintenance(p, queues, c.DB.IdleInTransactionTimeout)
	c.Web = web.Config{
		Queues: queues,
		// Sets the Secure flag on the dashboard's cookies (serve it over HTTPS).
		SecureCookie: p.bool("HOOKRELAY_UI_SECURE_COOKIE", false),
		// Origins allowed to embed the merchant portal (CSP frame-ancestors).
		PortalFrameAncestors: frameAncestors(p, "HOOKRELAY_PORTAL_FRAME_ANCESTORS"),
		// Single sign-on with an OpenID provider (HOOKRELAY_OIDC_*); nil: off.
		SSO: loadSSO(p),
	}
	c.AuthThrottle = throttle.Config{
		// Failed authentications a client address may have before it waits.
		Free: p.int("HOOKRELAY_AUTH_THROTTLE_FREE", throttle.DefaultFree, 1, 1_000_000),
		// The longest wait (each failure past the free ones doubles it).
		Max: p.duration("HOOKRELAY_AUTH_THROTTLE_MAX", throttle.DefaultMax, time.Second, 24*time.Hour),
	}
	c.check(p)
	return c
}

// check adds to p what no single variable's parse can see: URL and address
// shapes, and limits between variables.
func (c config) check(p *envParser) {
	if !isDatabaseURL(c.DB.URL) {
		p.fail("DATABASE_URL", redactURL(c.DB.URL), "want postgres://user@host:port/dbname")
	}
	if c.DB.DirectURL != "" && !isDatabaseURL(c.DB.DirectURL) {
		p.fail("HOOKRELAY_DATABASE_DIRECT_URL", redactURL(c.DB.DirectURL), "want postgres://user@host:port/dbname")
	}
	if c.DB.Pooler == db.PoolerPgBouncer && c.DB.DirectURL == "" {
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_DATABASE_DIRECT_URL: required with HOOKRELAY_DB_POOLER=pgbouncer "+
			"(the migrations' lock, the maintenance role's sessions and LISTEN need a PostgreSQL session of their own; "+
			"point it at PostgreSQL or at a session-mode pool)"))
	}
	if c.ReplicaURL != "" {
		if u, err := url.Parse(c.ReplicaURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || strings.Trim(u.Path, "/") == "" {
			p.fail("HOOKRELAY_DATABASE_REPLICA_URL", redactURL(c.ReplicaURL), "want postgres://user@host:port/dbname")
		}
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		p.fail("HOOKRELAY_ADDR", c.Addr, "want host:port, such as 127.0.0.1:8080")
	}
	if c.S3.Endpoint == "" {
		if _, _, err := net.SplitHostPort(c.S3EmbedAddr); err != nil {
			p.fail("HOOKRELAY_S3_EMBED_ADDR", c.S3EmbedAddr, "want host:port")
		}
	} else if u, err := url.Parse(c.S3.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail("HOOKRELAY_S3_ENDPOINT", c.S3.Endpoint, "want an http(s) URL")
	}
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			p.fail("HOOKRELAY_PPROF_ADDR", c.PprofAddr, "want host:port, such as 127.0.0.1:6060")
		}
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_ADMIN_TOKEN: too short (want at least 16 characters)"))
	}
	if c.API.OffloadBytes > c.API.MaxBodyBytes {
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_OFFLOAD_BYTES (%d) is larger than HOOKRELAY_MAX_BODY_BYTES (%d)", c.API.OffloadBytes, c.API.MaxBodyBytes))
	}
	if c.Dispatch.OpsRetryMax < c.Dispatch.OpsRetryBase {
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_OPS_RETRY_MAX (%s) is shorter than HOOKRELAY_OPS_RETRY_BASE (%s)", c.Dispatch.OpsRetryMax, c.Dispatch.OpsRetryBase))
	}
	// Reading a body of the largest size holds its buffer and the one it
	// grew from: with less, such a callback would always get 503.
	if int64(c.API.MemoryBytes) < 2*(int64(c.API.MaxBodyBytes)+1) {
		p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_INGEST_MEMORY (%d) is less than twice HOOKRELAY_MAX_BODY_BYTES (%d)", c.API.MemoryBytes, c.API.MaxBodyBytes))
	}
}

// loadKeys reads the encryption keys: HOOKRELAY_ENCRYPTION_KEY seals and
// opens, HOOKRELAY_ENCRYPTION_KEYS_OLD (comma-separated) only open, for the
// rows sealed before a rotation. Each is the base64 of 32 bytes (`hookrelay
// encryption-key` prints one). Errors never show a key.
func loadKeys(p *envParser) *keyring.Keyring {
	cur := p.get("HOOKRELAY_ENCRYPTION_KEY", "required by serve, migrate and rotate-encryption-key", "the base64 of 32 random bytes")
	old := p.get("HOOKRELAY_ENCRYPTION_KEYS_OLD", "", "keys like HOOKRELAY_ENCRYPTION_KEY, comma-separated")
	if cur == "" {
		if old != "" {
			p.errs = append(p.errs, fmt.Errorf("HOOKRELAY_ENCRYPTION_KEYS_OLD is set without HOOKRELAY_ENCRYPTION_KEY"))
		}
		return nil
	}
	k, err := keyring.Parse(cur, old)
	if err != nil {
		name := "HOOKRELAY_ENCRYPTION_KEY"
		if strings.HasPrefix(err.Error(), "old") {
			name = "HOOKRELAY_ENCRYPTION_KEYS_OLD"
		}
		p.errs = append(p.errs, fmt.Errorf("%s: %v (want the base64 of 32 random bytes, such as `hookrelay encryption-key` prints)", name, err))
		return nil
	}
	return k
}

// lostKeyIDsVar declares encryption keys lost for good, by key id.
const lostKeyIDsVar = "HOOKRELAY_ENCRYPTION_LOST_KEY_IDS"

// loadLostKeyIDs reads the key ids declared lost (comma- or
// space-separated, 8 hex digits each): the key check at start lets the
// values they sealed be, unreadable (docs/operations/security.md).
func loadLostKeyIDs(p *envParser) []string {
	raw := p.str(lostKeyIDsVar, "")
	var ids []string
	for _, id := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		id = strings.ToLower(id)
		if _, err := hex.DecodeString(id); err != nil || len(id) != 8 {
			p.fail(lostKeyIDsVar, raw, "key ids of 8 hex digits, as the key check's refusal names them, separated by commas")
			return nil
		}
		ids = append(ids, id)
	}
	return ids
}

// errKeyRequired is the problem of a command that opens the database
// without an encryption key: it needs one, to seal and open the secrets it
// keeps.
var errKeyRequired = errors.New("HOOKRELAY_ENCRYPTION_KEY is required (the base64 of 32 random bytes; `hookrelay encryption-key` prints a new one, `make run` keeps one in data/encryption-key)")

// requireKeys fails when no encryption key is configured (loadServiceConfig
// has said so already; this guards openDatabase's other callers).
func (c config) requireKeys() error {
	if c.Keys == nil {
		return fmt.Errorf("configuration: %w", errKeyRequired)
	}
	return nil
}

// loadRoles reads HOOKRELAY_ROLES: some of allRoles, comma-separated, or
// all (the default).
func loadRoles(p *envParser) []string {
	raw := p.get("HOOKRELAY_ROLES", "all", strings.Join(allRoles, ",")+" (some of them) or all")
	roles, err := parseRoles(raw)
	if err != nil {
		p.fail("HOOKRELAY_ROLES", raw, "want some of "+strings.Join(allRoles, ",")+", comma-separated, or all")
		return allRoles
	}
	return roles
}

// loadDB reads the database settings: the URL (the database is created
// when missing), the pool and the session timeouts of every connection.
func loadDB(p *envParser, lease time.Duration) db.Config {
	pooler, err := db.ParsePooler(p.str("HOOKRELAY_DB_POOLER", string(db.PoolerNone)))
	if err != nil {
		p.fail("HOOKRELAY_DB_POOLER", p.getenv("HOOKRELAY_DB_POOLER"), "want none or pgbouncer")
	}
	return db.Config{
		URL: p.str("DATABASE_URL", defaultDatabaseURL),
		// What DATABASE_URL points at: PostgreSQL (or a session-mode pool),
		// or PgBouncer in transaction mode.
		Pooler: pooler,
		// PostgreSQL without a transaction-mode pooler, for the work that
		// needs a session: migrations, the maintenance role, LISTEN.
		DirectURL: p.str("HOOKRELAY_DATABASE_DIRECT_URL", ""),
		// Connections in this process's pool.
		MaxConns:                 int32(p.int("HOOKRELAY_DB_MAX_CONNS", db.DefaultMaxConns, 2, math.MaxInt16)),
		StatementTimeout:         p.duration("HOOKRELAY_STATEMENT_TIMEOUT", db.DefaultStatementTimeout, 100*time.Millisecond, 24*time.Hour),
		IdleInTransactionTimeout: p.duration("HOOKRELAY_IDLE_IN_TX_TIMEOUT", db.DefaultIdleInTransactionTimeout, 100*time.Millisecond, 24*time.Hour),
		LockTimeout:              p.duration("HOOKRELAY_LOCK_TIMEOUT", db.DefaultLockTimeout, 10*time.Millisecond, time.Hour),
		// Half the lease: a stalled dispatcher's acknowledgement transaction
		// ends before its leases do (TestPausedDispatcher).
		AckIdleTimeout: lease / 2,
	}
}

// loadAPI reads the api role's settings, those of its callback intake
// (package ingest) included.
func loadAPI(p *envParser, queues int, notify bool) api.Config {
	return api.Config{
		Queues: queues,
		// Larger callback bodies get 413.
		MaxBodyBytes: p.int("HOOKRELAY_MAX_BODY_BYTES", api.DefaultMaxBodyBytes, 1, 1<<30),
		// Larger payloads go to the S3 store.
		OffloadBytes: p.int("HOOKRELAY_OFFLOAD_BYTES", api.DefaultOffloadBytes, 0, 64<<20),
		// What the bodies of the callbacks in flight may hold together;
		// beyond it callbacks get 503 with Retry-After.
		MemoryBytes: p.int("HOOKRELAY_INGEST_MEMORY", ingest.DefaultMemoryBytes, 1<<20, maxIngestMemory),
		// How stale the carrier/endpoint cache may be in other processes
		// after a change.
		CacheTTL: p.duration("HOOKRELAY_INGEST_CACHE_TTL", ingest.DefaultCacheTTL, 100*time.Millisecond, time.Minute),
		Batcher: ingest.BatcherConfig{
			// How long a group-commit batch stays open after its first callback.
			MaxWait: p.duration("HOOKRELAY_INGEST_BATCH_WAIT", ingest.DefaultBatchMaxWait, 100*time.Microsecond, time.Second),
			// Rows (messages + deliveries) that close a batch at once.
			MaxRows: p.int("HOOKRELAY_INGEST_BATCH_ROWS", ingest.DefaultBatchMaxRows, 1, 10000),
			// Batches committing at once.
			Flushers: p.int("HOOKRELAY_INGEST_FLUSHERS", ingest.DefaultBatchFlushers, 1, 64),
			// Callbacks waiting for the group commit from which each
			// carrier is held to its share of them (429 beyond it); at
			// most the batcher's queue (8192), which is where a
			// submission would block instead.
			Saturation: p.int("HOOKRELAY_INGEST_SATURATION", ingest.DefaultBatchSaturation, 1, 8192),
		},
		// Dispatchers in other processes (and this one's, which ignores it)
		// hear of stored callbacks at once rather than at their next poll.
		Announce: notify,
		// The pause between two announcements (above 500 deliveries a second
		// it doubles, up to 20 times).
		AnnounceInterval: p.duration("HOOKRELAY_INGEST_NOTIFY_INTERVAL", ingest.DefaultAnnounceInterval, 100*time.Microsecond, time.Second),
		// Proxies whose X-Forwarded-For names a callback's client address,
		// for the carriers' allowed source addresses.
		TrustedProxies: p.prefixes("HOOKRELAY_TRUSTED_PROXIES", 100),
	}
}

// loadDispatch reads the dispatch role's settings.
func loadDispatch(p *envParser, queues int, lease time.Duration, allowPrivate, notify bool) dispatch.Config {
	return dispatch.Config{
		Queues:              queues,
		Lease:               lease,
		AllowPrivateTargets: allowPrivate,
		// Deliveries in flight in this process.
		Concurrency: p.int("HOOKRELAY_DISPATCH_CONCURRENCY", dispatch.DefaultConcurrency, 1, 100000),
		// Rows one claim takes.
		BatchSize: p.int("HOOKRELAY_DISPATCH_BATCH", dispatch.DefaultBatchSize, 1, 1000),
		// Deliveries this process claims per second at most; 0 is no cap.
		MaxRate: float64(p.int("HOOKRELAY_DISPATCH_MAX_RATE", 0, 0, 10_000_000)),
		// Longest pause between claims when nothing is due.
		IdlePoll: p.duration("HOOKRELAY_DISPATCH_IDLE_POLL", dispatch.DefaultIdlePoll, time.Millisecond, 10*time.Second),
		// Pause after a claim that found less than a full batch (longer:
		// bigger batches, less CPU).
		BusyPoll: p.duration("HOOKRELAY_DISPATCH_BUSY_POLL", dispatch.DefaultBusyPoll, 100*time.Microsecond, 10*time.Second),
		// Claim loops sharing the held queues.
		ClaimLoops: p.int("HOOKRELAY_DISPATCH_CLAIM_LOOPS", dispatch.DefaultClaimLoops, 1, 64),
		// Acknowledgement transactions running at once.
		AckFlushers: p.int("HOOKRELAY_DISPATCH_ACK_FLUSHERS", dispatch.DefaultAckFlushers, 1, 64),
		// How long a result waits, and how many go in one acknowledgement
		// transaction.
		AckInterval: p.duration("HOOKRELAY_DISPATCH_ACK_INTERVAL", dispatch.DefaultAckInterval, 100*time.Microsecond, time.Second),
		AckBatch:    p.int("HOOKRELAY_DISPATCH_ACK_BATCH", dispatch.DefaultAckBatch, 1, 10000),
		// How long shutdown lets deliveries in flight finish before
		// releasing them.
		DrainTimeout: p.duration("HOOKRELAY_DISPATCH_DRAIN_TIMEOUT", dispatch.DefaultDrainTimeout, time.Millisecond, 10*time.Minute),
		// Waits after a delivery's first failures, before its endpoint's
		// retry_schedule (extra attempts); "none" turns them off.
		QuickRetries: p.durations("HOOKRELAY_DISPATCH_QUICK_RETRIES", dispatch.DefaultQuickRetries,
			dispatch.MaxQuickRetries, 10*time.Millisecond, time.Minute),
		// LISTEN for the announcements of the APIs in other processes.
		Listen: notify,
		// Operational webhooks (POST /v1/ops-endpoints): one attempt's
		// time limit; the wait after a failed attempt, doubling up to the
		// longest; attempts before a message is given up; the window in
		// which an endpoint's dead letters make one delivery.dead_lettered.
		OpsTimeout:   p.duration("HOOKRELAY_OPS_TIMEOUT", dispatch.DefaultOpsTimeout, 100*time.Millisecond, 5*time.Minute),
		OpsRetryBase: p.duration("HOOKRELAY_OPS_RETRY_BASE", dispatch.DefaultOpsRetryBase, 10*time.Millisecond, 24*time.Hour),
		OpsRetryMax:  p.duration("HOOKRELAY_OPS_RETRY_MAX", dispatch.DefaultOpsRetryMax, 10*time.Millisecond, 7*24*time.Hour),
		OpsAttempts:  p.int("HOOKRELAY_OPS_ATTEMPTS", dispatch.DefaultOpsAttempts, 1, 1000),
		OpsCoalesce:  p.duration("HOOKRELAY_OPS_COALESCE", dispatch.DefaultOpsCoalesce, time.Second, 24*time.Hour),
		// Deliveries go out through this proxy (static egress addresses).
		EgressProxy: loadEgressProxy(p),
	}
}

// loadEgressProxy reads the deliveries' proxy: HOOKRELAY_EGRESS_PROXY (every
// delivery, no exclusions), else the environment's HTTPS_PROXY or HTTP_PROXY
// with NO_PROXY's exclusions; nil when none is set.
func loadEgressProxy(p *envParser) *dispatch.EgressProxy {
	if raw := p.str("HOOKRELAY_EGRESS_PROXY", ""); raw != "" {
		u, err := dispatch.ParseEgressProxy(raw)
		if err != nil {
			p.fail("HOOKRELAY_EGRESS_PROXY", redactURL(raw), "want an http:// proxy URL such as http://proxy.internal:3128")
			return nil
		}
		return &dispatch.EgressProxy{URL: u}
	}
	proxy, err := dispatch.EgressProxyFromEnv(p.getenv)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("HTTPS_PROXY/HTTP_PROXY: %v (or set HOOKRELAY_EGRESS_PROXY)", err))
		return nil
	}
	return proxy
}

// loadMaintenance reads the maintenance role's settings: partitions and
// retention, hot-table VACUUM, the health and stat samplers, and its
// dedicated sessions.
func loadMaintenance(p *envParser, queues int, idleInTx time.Duration) maintenance.Config {
	// Age of a poll endpoint's oldest unacknowledged delivery from which it
	// is reported lagging; 0 turns the alert off.
	pollLagAlert := p.duration("HOOKRELAY_POLL_LAG_ALERT", maintenance.DefaultPollLagAlert, 0, 7*24*time.Hour)
	switch {
	case pollLagAlert == 0:
		pollLagAlert = -1
	case pollLagAlert < time.Second:
		p.fail("HOOKRELAY_POLL_LAG_ALERT", pollLagAlert.String(), "want 0 (off) or a duration from 1s to 168h")
	}
	return maintenance.Config{
		// History (messages, attempts) kept.
		Retention: p.duration("HOOKRELAY_RETENTION", maintenance.DefaultRetention, 24*time.Hour, 10*365*24*time.Hour),
		// Audit log kept.
		AuditRetention: p.duration("HOOKRELAY_AUDIT_RETENTION", maintenance.DefaultAuditRetention, 24*time.Hour, 100*365*24*time.Hour),
		// Days of partitions created ahead of today.
		PartitionsAhead: p.int("HOOKRELAY_PARTITIONS_AHEAD", maintenance.DefaultPartitionsAhead, maintenance.MinPartitionsAhead, 60),
		// Time between partition/retention passes.
		RetentionInterval: p.duration("HOOKRELAY_RETENTION_INTERVAL", maintenance.DefaultRetentionInterval, time.Second, 24*time.Hour),
		// How often the hot tables' dead tuples are checked.
		VacuumInterval: p.duration("HOOKRELAY_VACUUM_INTERVAL", maintenance.DefaultVacuumInterval, 10*time.Millisecond, time.Hour),
		// Shortest gap between two VACUUMs the relative trigger may cause.
		VacuumMinGap: p.duration("HOOKRELAY_VACUUM_MIN_GAP", maintenance.DefaultVacuumMinGap, 50*time.Millisecond, time.Hour),
		// A table whose churn counter moved within this window is churning.
		VacuumChurnWindow: p.duration("HOOKRELAY_VACUUM_CHURN_WINDOW", maintenance.DefaultVacuumChurnWindow, 100*time.Millisecond, time.Hour),
		// Share of a churning heap (in ‰) its churn may take between passes.
		VacuumDeadSpace: p.fraction("HOOKRELAY_VACUUM_DEAD_SPACE_PERMILLE", maintenance.DefaultVacuumDeadSpace, 1000, 1, 500),
		// Longest gap between the heap passes of a churning table.
		VacuumMaxGap: p.duration("HOOKRELAY_VACUUM_MAX_GAP", maintenance.DefaultVacuumMaxGap, 50*time.Millisecond, time.Hour),
		// Fewest rows a churning table churns between two heap passes.
		VacuumMinChurn: int64(p.int("HOOKRELAY_VACUUM_MIN_CHURN", maintenance.DefaultVacuumMinChurn, 1, 1<<30)),
		// Share of wall time (in %) heap passes may spend on one table.
		VacuumHeapBudget: p.fraction("HOOKRELAY_VACUUM_HEAP_BUDGET_PERCENT", maintenance.DefaultVacuumHeapBudget, 100, 1, 100),
		// Shortest gap between two full VACUUMs (indexes included).
		VacuumFullGap: p.duration("HOOKRELAY_VACUUM_FULL_GAP", maintenance.DefaultVacuumFullGap, 50*time.Millisecond, time.Hour),
		// Dead tuples that trigger a VACUUM at any time.
		VacuumDeadTuples: int64(p.int("HOOKRELAY_VACUUM_DEAD_TUPLES", maintenance.DefaultVacuumDeadTuples, 100, 1<<30)),
		// Dead tuples, in % of live ones, that trigger a VACUUM.
		VacuumDeadRatio: p.fraction("HOOKRELAY_VACUUM_DEAD_PERCENT", maintenance.DefaultVacuumDeadRatio, 100, 1, 1000),
		// Fewest dead tuples worth a VACUUM.
		VacuumMinDead: int64(p.int("HOOKRELAY_VACUUM_MIN_DEAD", maintenance.DefaultVacuumMinDead, 1, 1<<30)),
		// Rows a day partition's ANALYZE must have seen before it stops.
		HistoryAnalyzeRows: int64(p.int("HOOKRELAY_HISTORY_ANALYZE_ROWS", maintenance.DefaultHistoryAnalyzeRows, 1_000, 1<<30)),
		// How often the hot tables' indexes are checked for bloat.
		ReindexInterval: p.duration("HOOKRELAY_REINDEX_INTERVAL", maintenance.DefaultReindexInterval, time.Second, 24*time.Hour),
		// Time between health samples.
		HealthInterval: p.duration("HOOKRELAY_HEALTH_INTERVAL", maintenance.DefaultHealthInterval, 50*time.Millisecond, time.Hour),
		// Age from which a transaction is reported.
		LongTransaction: p.duration("HOOKRELAY_LONG_TRANSACTION", maintenance.DefaultLongTransaction, 100*time.Millisecond, 24*time.Hour),
		PollLagAlert:    pollLagAlert,
		// Time between stat samples.
		StatInterval: p.duration("HOOKRELAY_STAT_INTERVAL", maintenance.DefaultStatInterval, 50*time.Millisecond, time.Hour),
		Queues:       queues,
		Replay: maintenance.ReplayConfig{
			// Rows of a replay's window one transaction reads and queues again.
			Batch: p.int("HOOKRELAY_REPLAY_BATCH", maintenance.DefaultReplayBatch, 10, 10_000),
			// How often an idle replay runner looks for work.
			Interval: p.duration("HOOKRELAY_REPLAY_INTERVAL", maintenance.DefaultReplayInterval, 10*time.Millisecond, time.Hour),
		},
		// How often a standby tries to take the role.
		LockRetry: p.duration("HOOKRELAY_MAINTENANCE_LOCK_RETRY", maintenance.DefaultLockRetry, 50*time.Millisecond, 5*time.Minute),
		Session: db.SessionConfig{
			StatementTimeout:         p.duration("HOOKRELAY_MAINTENANCE_STATEMENT_TIMEOUT", db.DefaultSessionStatementTimeout, time.Second, 24*time.Hour),
			LockTimeout:              p.duration("HOOKRELAY_MAINTENANCE_LOCK_TIMEOUT", db.DefaultSessionLockTimeout, 10*time.Millisecond, time.Hour),
			IdleInTransactionTimeout: idleInTx,
		},
	}
}

// isDatabaseURL reports whether raw has the shape postgres://…/dbname.
func isDatabaseURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && strings.Trim(u.Path, "/") != ""
}

// redactURL hides the password of a URL so it can be shown in errors.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
