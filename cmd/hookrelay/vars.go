package main

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// knownVars lists every variable the configuration reads, in reading
// order, with its default and the values it takes: readConfig run on an
// empty environment notes them all (envParser.get), so the help and the
// check of unknown variables cannot miss one the parser reads.
func knownVars() []envVar {
	p := &envParser{getenv: func(string) string { return "" }}
	readConfig(p)
	return p.vars
}

// varMeanings says in one line what each variable of knownVars is for, for
// the help (docs/operations/configuration.md says it at length).
// TestVarMeanings keeps it and the parser's list the same.
var varMeanings = map[string]string{
	"DATABASE_URL":                            "the database, created if missing and migrated at start",
	"HOOKRELAY_ADDR":                          "host:port of the API, the dashboard (/ui/), /healthz, /readyz and /metrics",
	"HOOKRELAY_ADMIN_TOKEN":                   "the admin bearer token and dashboard login (at least 16 characters); unset: generated on the first start, printed once",
	"HOOKRELAY_DATA_DIR":                      "local state; the embedded S3 store under s3/",
	"HOOKRELAY_S3_ENDPOINT":                   "an S3-compatible store (http(s) URL); unset: the embedded store",
	"HOOKRELAY_S3_BUCKET":                     "the payload store's bucket",
	"HOOKRELAY_S3_REGION":                     "the payload store's region",
	"HOOKRELAY_S3_EMBED_ADDR":                 "the embedded store's address (keep it on loopback)",
	"HOOKRELAY_LOG_FORMAT":                    "log format; auto is text on a terminal, else json",
	"HOOKRELAY_LOG_LEVEL":                     "the lowest level logged",
	"HOOKRELAY_PPROF_ADDR":                    "serve net/http/pprof on this separate host:port",
	"HOOKRELAY_TRACING":                       "export OpenTelemetry traces over OTLP/HTTP (OTEL_* variables)",
	"HOOKRELAY_ROLES":                         "the roles serve runs (--roles wins)",
	"HOOKRELAY_QUEUES":                        "logical queues; keep it fixed once data exists",
	"HOOKRELAY_LEASE":                         "how long a claimed delivery or held queue stays with a silent dispatcher",
	"HOOKRELAY_LATENCY_BUDGET":                "delay a callback may gain so that statements carry more rows at a moderate rate; 0 is the lowest latency",
	"HOOKRELAY_ALLOW_PRIVATE_TARGETS":         "allow endpoints on loopback, private and link-local addresses (tests, demos)",
	"HOOKRELAY_NOTIFY":                        "announce stored callbacks with NOTIFY, dispatchers LISTEN; false behind pgbouncer in transaction mode",
	"HOOKRELAY_DB_POOLER":                     "pgbouncer: DATABASE_URL is PgBouncer in transaction mode",
	"HOOKRELAY_DATABASE_DIRECT_URL":           "PostgreSQL without a transaction-mode pooler (migrations, maintenance, LISTEN); unset: DATABASE_URL",
	"HOOKRELAY_DB_MAX_CONNS":                  "connections in this process's pool",
	"HOOKRELAY_STATEMENT_TIMEOUT":             "statement_timeout of the app's sessions",
	"HOOKRELAY_IDLE_IN_TX_TIMEOUT":            "idle_in_transaction_session_timeout of the app's sessions",
	"HOOKRELAY_LOCK_TIMEOUT":                  "lock_timeout of the app's sessions",
	"HOOKRELAY_DATABASE_REPLICA_URL":          "a read replica for the dashboard's read pages",
	"HOOKRELAY_ENCRYPTION_KEY":                "seals the secrets kept in the database (`hookrelay encryption-key` prints one)",
	"HOOKRELAY_ENCRYPTION_KEYS_OLD":           "previous keys: they only open, during a rotation",
	"HOOKRELAY_ENCRYPTION_LOST_KEY_IDS":       "key ids (8 hex digits, comma-separated) of keys lost for good",
	"HOOKRELAY_MAX_BODY_BYTES":                "larger callbacks get 413",
	"HOOKRELAY_OFFLOAD_BYTES":                 "larger payloads go to the S3 store",
	"HOOKRELAY_INGEST_MEMORY":                 "bytes the bodies of the callbacks in flight may hold together; beyond it 503",
	"HOOKRELAY_INGEST_CACHE_TTL":              "the longest a snapshot of carriers and routes lags a change made elsewhere",
	"HOOKRELAY_INGEST_BATCH_WAIT":             "how long a group-commit batch stays open after its first callback",
	"HOOKRELAY_INGEST_BATCH_ROWS":             "rows that close a batch at once",
	"HOOKRELAY_INGEST_FLUSHERS":               "batches committing at once",
	"HOOKRELAY_INGEST_SATURATION":             "callbacks waiting for the group commit from which each carrier gets only its share (429 beyond)",
	"HOOKRELAY_INGEST_NOTIFY_INTERVAL":        "pause between two announcements to dispatchers",
	"HOOKRELAY_REQUIRE_HTTPS":                 "refuse http:// endpoint URLs",
	"HOOKRELAY_DISPATCH_CONCURRENCY":          "deliveries in flight in this process",
	"HOOKRELAY_DISPATCH_BATCH":                "rows one claim takes",
	"HOOKRELAY_DISPATCH_MAX_RATE":             "deliveries this process claims per second at most; 0 is no cap",
	"HOOKRELAY_DISPATCH_IDLE_POLL":            "longest pause between claims when nothing is due",
	"HOOKRELAY_DISPATCH_BUSY_POLL":            "pause after a claim that found less than a full batch",
	"HOOKRELAY_DISPATCH_CLAIM_LOOPS":          "claim loops sharing the held queues",
	"HOOKRELAY_DISPATCH_ACK_FLUSHERS":         "acknowledgement transactions at once",
	"HOOKRELAY_DISPATCH_ACK_INTERVAL":         "longest wait of a result before its acknowledgement",
	"HOOKRELAY_DISPATCH_ACK_BATCH":            "results per acknowledgement transaction",
	"HOOKRELAY_DISPATCH_DRAIN_TIMEOUT":        "on shutdown, the wait for deliveries in flight before the rest are released",
	"HOOKRELAY_DISPATCH_QUICK_RETRIES":        "waits after a delivery's first failures, before its endpoint's retry_schedule",
	"HOOKRELAY_OPS_TIMEOUT":                   "one attempt of an operational webhook",
	"HOOKRELAY_OPS_RETRY_BASE":                "an ops message's wait after its first failed attempt (then doubling)",
	"HOOKRELAY_OPS_RETRY_MAX":                 "an ops message's longest wait between attempts",
	"HOOKRELAY_OPS_ATTEMPTS":                  "attempts of an ops message before it is dropped",
	"HOOKRELAY_OPS_COALESCE":                  "the window of an endpoint's dead letters that makes one delivery.dead_lettered",
	"HOOKRELAY_EGRESS_PROXY":                  "http:// proxy every delivery goes through; unset: HTTPS_PROXY, HTTP_PROXY (with NO_PROXY)",
	"HOOKRELAY_UI_SECURE_COOKIE":              "mark the dashboard's cookies Secure (serve it over HTTPS)",
	"HOOKRELAY_PORTAL_FRAME_ANCESTORS":        "origins allowed to embed the merchant portal",
	"HOOKRELAY_OIDC_ISSUER":                   "single sign-on: the OpenID provider's issuer URL; unset: no single sign-on",
	"HOOKRELAY_OIDC_CLIENT_ID":                "single sign-on: the dashboard's client id at the provider",
	"HOOKRELAY_OIDC_CLIENT_SECRET":            "single sign-on: the client's secret",
	"HOOKRELAY_OIDC_REDIRECT_URL":             "single sign-on: the dashboard's callback as the provider has it registered",
	"HOOKRELAY_OIDC_SCOPES":                   "single sign-on: the scopes asked for (openid is always added)",
	"HOOKRELAY_OIDC_ALLOWED_DOMAINS":          "single sign-on: the email domains that may sign in",
	"HOOKRELAY_OIDC_ALLOWED_GROUPS":           "single sign-on: a user must be in one of these groups of the provider",
	"HOOKRELAY_OIDC_GROUPS_CLAIM":             "single sign-on: the claim that lists a user's groups",
	"HOOKRELAY_OIDC_ROLE_MAP":                 "single sign-on: the provider's groups to roles; a user in several gets the strongest",
	"HOOKRELAY_OIDC_DEFAULT_ROLE":             "single sign-on: the role of a user in no mapped group",
	"HOOKRELAY_OIDC_REQUIRE_VERIFIED_EMAIL":   "single sign-on: refuse users whose email the provider does not call verified",
	"HOOKRELAY_AUTH_THROTTLE_FREE":            "failed authentications a client address may have before each further attempt waits",
	"HOOKRELAY_AUTH_THROTTLE_MAX":             "the longest such wait",
	"HOOKRELAY_TRUSTED_PROXIES":               "proxies whose X-Forwarded-For names a callback's client address (carriers' allowed addresses)",
	"HOOKRELAY_RETENTION":                     "history kept; older day partitions are dropped",
	"HOOKRELAY_AUDIT_RETENTION":               "audit log kept; older day partitions are dropped, the chain anchored at the last entry dropped",
	"HOOKRELAY_PARTITIONS_AHEAD":              "days of partitions created ahead",
	"HOOKRELAY_RETENTION_INTERVAL":            "time between retention passes",
	"HOOKRELAY_VACUUM_INTERVAL":               "how often the hot tables' statistics are checked",
	"HOOKRELAY_VACUUM_MIN_GAP":                "shortest gap between two VACUUMs by the percentage trigger",
	"HOOKRELAY_VACUUM_CHURN_WINDOW":           "a table whose churn counter moved within this window is churning",
	"HOOKRELAY_VACUUM_DEAD_SPACE_PERMILLE":    "share (per mille) of a churning heap its churn may fill between heap passes",
	"HOOKRELAY_VACUUM_MAX_GAP":                "longest gap between heap passes of a churning table",
	"HOOKRELAY_VACUUM_MIN_CHURN":              "fewest rows a churning table churns between two heap passes",
	"HOOKRELAY_VACUUM_HEAP_BUDGET_PERCENT":    "share (%) of wall time heap passes may spend on one table",
	"HOOKRELAY_VACUUM_FULL_GAP":               "shortest gap between two full VACUUMs (indexes included) of a table",
	"HOOKRELAY_VACUUM_DEAD_TUPLES":            "dead tuples that trigger a VACUUM at any time",
	"HOOKRELAY_VACUUM_DEAD_PERCENT":           "dead tuples, in % of live ones, that trigger a VACUUM",
	"HOOKRELAY_VACUUM_MIN_DEAD":               "fewest dead tuples worth a VACUUM",
	"HOOKRELAY_HISTORY_ANALYZE_ROWS":          "rows a day partition's ANALYZE must have seen before it stops",
	"HOOKRELAY_REINDEX_INTERVAL":              "how often the hot tables' indexes are checked for bloat",
	"HOOKRELAY_HEALTH_INTERVAL":               "time between health samples",
	"HOOKRELAY_LONG_TRANSACTION":              "age from which a transaction is reported",
	"HOOKRELAY_POLL_LAG_ALERT":                "age of a poll endpoint's oldest unacknowledged delivery from which it is reported lagging (0: off)",
	"HOOKRELAY_STAT_INTERVAL":                 "time between stat samples (the dashboard's charts)",
	"HOOKRELAY_REPLAY_BATCH":                  "rows of a replay's window one transaction queues again",
	"HOOKRELAY_REPLAY_INTERVAL":               "how often an idle replay runner looks for work",
	"HOOKRELAY_MAINTENANCE_LOCK_RETRY":        "how often a standby tries to take the maintenance role",
	"HOOKRELAY_MAINTENANCE_STATEMENT_TIMEOUT": "statement_timeout of the maintenance sessions",
	"HOOKRELAY_MAINTENANCE_LOCK_TIMEOUT":      "lock_timeout of the maintenance sessions",
}

// varPrefix marks hookrelay's variables: one with it that knownVars does
// not list is reported at start (unknownVars).
const varPrefix = "HOOKRELAY_"

// foreignVars are HOOKRELAY_ variables that belong to hookrelay's tooling,
// not to the binary: the walkthrough's shell variable, deploy/compose.yaml's
// image and the test suites' (a trailing _ names a prefix). They are not
// reported.
var foreignVars = []string{"HOOKRELAY_URL", "HOOKRELAY_API_KEY", "HOOKRELAY_IMAGE", "HOOKRELAY_TEST_", "HOOKRELAY_E2E_", "HOOKRELAY_SCREENSHOT_DIR", "HOOKRELAY_UPDATE_FUNCTIONS"}

// unknownVar is a HOOKRELAY_ variable of the environment that no setting
// reads, with the known one it most likely meant ("" when none is close).
type unknownVar struct {
	Name, Suggest string
}

// unknownVars returns the HOOKRELAY_ variables of environ (NAME=value
// entries) that hookrelay does not read, sorted by name. An unknown
// variable is a warning, not an error: a deployment still setting a
// variable a release dropped, or one misspelt, keeps running, and the
// warning at start says which and what was probably meant.
func unknownVars(environ []string, known []envVar) []unknownVar {
	var out []unknownVar
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, varPrefix) || slices.ContainsFunc(known, func(v envVar) bool { return v.Name == name }) ||
			slices.ContainsFunc(foreignVars, func(f string) bool { return name == f || strings.HasSuffix(f, "_") && strings.HasPrefix(name, f) }) {
			continue
		}
		if slices.ContainsFunc(out, func(u unknownVar) bool { return u.Name == name }) {
			continue
		}
		out = append(out, unknownVar{Name: name, Suggest: closestVar(name, known)})
	}
	slices.SortFunc(out, func(a, b unknownVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// closestVar returns the known variable name most likely meant: the one
// within an edit distance of 2 (the closest), else the one name begins or
// ends with or that begins or ends with name past the prefix
// (HOOKRELAY_LEASES → HOOKRELAY_LEASE); "" when none is, or several are as
// close.
func closestVar(name string, known []envVar) string {
	best, bestD, tie := "", 3, false
	for _, v := range known {
		if d := editDistance(name, v.Name); d < bestD {
			best, bestD, tie = v.Name, d, false
		} else if d == bestD {
			tie = true
		}
	}
	if best != "" && !tie {
		return best
	}
	if best != "" {
		return ""
	}
	rest := strings.TrimPrefix(name, varPrefix)
	var match []string
	for _, v := range known {
		k := strings.TrimPrefix(v.Name, varPrefix)
		if !strings.HasPrefix(v.Name, varPrefix) || len(k) < 4 || len(rest) < 4 {
			continue
		}
		if strings.HasPrefix(rest, k) || strings.HasSuffix(rest, k) || strings.HasPrefix(k, rest) || strings.HasSuffix(k, rest) {
			match = append(match, v.Name)
		}
	}
	if len(match) == 1 {
		return match[0]
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b (bytes: variable
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// String is the warning about u.
func (u unknownVar) String() string {
	if u.Suggest == "" {
		return "unknown variable " + u.Name + " ignored (hookrelay reads no such variable)"
	}
	return "unknown variable " + u.Name + " ignored; did you mean " + u.Suggest + "?"
}

// commandConfig loads the configuration of a command that opens the
// database (loadServiceConfig) and makes its logger. Unknown HOOKRELAY_
// variables of environ are warned of in the log; when the configuration is
// refused they are named in the error instead, a misspelt name being a
// likely cause (HOOKRELAY_ENCRYPTION_KEYS for HOOKRELAY_ENCRYPTION_KEY).
func commandConfig(getenv func(string) string, environ []string, stderr io.Writer) (config, *slog.Logger, error) {
	unknown := unknownVars(environ, knownVars())
	cfg, err := loadServiceConfig(getenv)
	if err != nil {
		var notes strings.Builder
		for _, u := range unknown {
			notes.WriteString("\n(" + u.String() + ")")
		}
		return cfg, nil, fmt.Errorf("%w%s", err, notes.String())
	}
	logger := newLogger(cfg, stderr)
	for _, u := range unknown {
		attrs := []any{"variable", u.Name}
		if u.Suggest != "" {
			attrs = append(attrs, "did_you_mean", u.Suggest)
		}
		logger.Warn(u.String(), attrs...)
	}
	return cfg, logger, nil
}
