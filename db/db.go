// Package db is hookrelay's only door to PostgreSQL: a pgx pool, the migrations,
// the sqlc-generated queries (db/internal/dbsqlc) and a small hand-written store
// that turns rows into hookrelay domain types and pgx.ErrNoRows into
// hookrelay.ENOTFOUND. Nothing outside this package writes SQL.
package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/keyring"
)

// Defaults of the settings an operator can change; cmd/hookrelay uses them
// for its environment variables.
const (
	DefaultMaxConns                 = 20
	DefaultStatementTimeout         = 30 * time.Second
	DefaultIdleInTransactionTimeout = 60 * time.Second
	DefaultLockTimeout              = 10 * time.Second
)

// Config configures the connection pool and the session settings every
// connection of the application gets. Zero fields get the defaults named
// (WithDefaults).
type Config struct {
	// URL is the PostgreSQL connection string (postgres://...) of the pool. The
	// database is created when missing (see EnsureDatabase).
	URL string
	// Pooler names what URL points at: PoolerNone (PostgreSQL itself, or a
	// pooler in session mode, which is transparent) or PoolerPgBouncer
	// (PgBouncer in transaction mode). Default PoolerNone.
	Pooler Pooler
	// DirectURL reaches PostgreSQL without a pooler in transaction mode; the
	// work that needs a session of its own uses it: migrations (a session
	// advisory lock), the dedicated sessions (OpenSession: the maintenance
	// role's lock, VACUUM, LISTEN). Empty: URL. Required with
	// PoolerPgBouncer.
	DirectURL string
	// MaxConns caps the pool. Default DefaultMaxConns (20).
	MaxConns int32
	// MinConns keeps this many connections open. Default 2.
	MinConns int32
	// AppName is sent as application_name, visible in pg_stat_activity.
	// Default "hookrelay".
	AppName string
	// StatementTimeout aborts any statement running longer. Default
	// DefaultStatementTimeout (30s).
	StatementTimeout time.Duration
	// IdleInTransactionTimeout ends a session idle inside a transaction for
	// longer, so a stuck client cannot hold back vacuum. Default
	// DefaultIdleInTransactionTimeout (60s).
	IdleInTransactionTimeout time.Duration
	// LockTimeout aborts a statement waiting longer for a lock. Default
	// DefaultLockTimeout (10s).
	LockTimeout time.Duration
	// AckIdleTimeout, when shorter, replaces IdleInTransactionTimeout inside
	// the acknowledgement transaction (DeliveryAckBatch), whose deletes lock
	// rows that other dispatchers are waiting to claim. Set it below the
	// delivery lease: a dispatcher stalled between two of its statements
	// (stopped, starved, paused by GC) then loses the transaction — its
	// results are redelivered — instead of holding the chains behind those
	// rows past its lease. Unset or longer: IdleInTransactionTimeout.
	AckIdleTimeout time.Duration
	// Keys seal the secrets the store keeps (signing secrets, custom header
	// values, endpoint credentials) and open them. Nil: a store that only
	// reads plaintext, for tools and tests that handle no secret; sealing
	// then fails.
	Keys *keyring.Keyring
	// LostKeyIDs are key ids declared lost for good: CheckKeys lets the
	// values sealed under them be (they stay unreadable: the endpoints
	// holding them are parked until given new values) and the re-seal
	// passes leave them as they are.
	LostKeyIDs []string
}

// Pooler is what Config.URL points at.
type Pooler string

const (
	// PoolerNone: PostgreSQL, or a pooler in session mode.
	PoolerNone Pooler = "none"
	// PoolerPgBouncer: PgBouncer (or a pooler like it) in transaction mode,
	// which hands each transaction to any of its server sessions. The pool
	// then relies on no session state: it sends no session settings at
	// connection (PgBouncer refuses them; set them on the role, see
	// SettingMismatches), keeps no prepared statements unless URL asks for
	// them with default_query_exec_mode, and the claim's sessions SET
	// nothing.
	PoolerPgBouncer Pooler = "pgbouncer"
)

// ParsePooler parses a Pooler name; the empty string is PoolerNone.
func ParsePooler(s string) (Pooler, error) {
	switch Pooler(s) {
	case "", PoolerNone:
		return PoolerNone, nil
	case PoolerPgBouncer:
		return PoolerPgBouncer, nil
	}
	return "", hookrelay.Errorf(hookrelay.EINVALID, "unknown pooler %q (want none or pgbouncer)", s)
}

// SessionURL returns the URL of the dedicated sessions and migrations:
// DirectURL, or URL when it is empty.
func (c Config) SessionURL() string { return cmp.Or(c.DirectURL, c.URL) }

// WithDefaults returns c with every zero field set to its default. Open
// applies it.
func (c Config) WithDefaults() Config {
	c.Pooler = cmp.Or(c.Pooler, PoolerNone)
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	c.MinConns = cmp.Or(c.MinConns, 2)
	c.AppName = cmp.Or(c.AppName, "hookrelay")
	c.StatementTimeout = cmp.Or(c.StatementTimeout, DefaultStatementTimeout)
	c.IdleInTransactionTimeout = cmp.Or(c.IdleInTransactionTimeout, DefaultIdleInTransactionTimeout)
	c.LockTimeout = cmp.Or(c.LockTimeout, DefaultLockTimeout)
	if c.AckIdleTimeout <= 0 || c.AckIdleTimeout > c.IdleInTransactionTimeout {
		c.AckIdleTimeout = c.IdleInTransactionTimeout
	}
	return c
}

// DB is the store: a pool and the generated queries.
type DB struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
	cfg  Config
	// Home connections of the hot statements (homeconns.go).
	claimConns, ackConns, storeConns *homeConns
	// warnings counts the WARNING notices of each pool connection
	// (syncrep.go).
	warnings *commitWarnings
	// claimPeek is the claim's small-queue bound (defaultClaimPeek; tests
	// set 0 to send every queue through the walk).
	claimPeek int32
	// hooks lets a test act inside a statement sequence of this DB only.
	hooks testHooks
}

// testHooks are points inside the store's statement sequences where a test
// runs code of its own, to pause a transaction or race a statement against
// it. A test sets them on its own DB (export_test.go) before using it; nil
// runs nothing, and the product never sets them.
type testHooks struct {
	// ackStall runs inside DeliveryAckBatch's transaction after the
	// acknowledgement statement, when the statements run one by one (not
	// pipelined), as a stalled dispatcher would.
	ackStall func()
	// deliveryGetRead runs in DeliveryGet between its first read and the
	// others.
	deliveryGetRead func()
}

// Open connects to the database described by cfg (which must exist; see
// EnsureDatabase) and checks the connection.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg = cfg.WithDefaults()
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, hookrelay.WrapError(hookrelay.EINVALID, "invalid database URL", err)
	}
	pcfg.MaxConns = cfg.MaxConns
	pcfg.MinConns = min(cfg.MinConns, cfg.MaxConns)
	pcfg.MaxConnIdleTime = 5 * time.Minute
	pcfg.HealthCheckPeriod = 15 * time.Second
	rp := pcfg.ConnConfig.RuntimeParams
	rp["application_name"] = cfg.AppName
	rp["timezone"] = "UTC"
	if cfg.Pooler == PoolerPgBouncer {
		// PgBouncer passes on only a few startup parameters (application_name
		// and TimeZone among them) and refuses the others: the timeouts come
		// from the role's settings (SettingMismatches checks them). And
		// unless the URL chooses a mode, no named prepared statements (they
		// would stay on one server session; PgBouncer before 1.21 does not
		// carry them between sessions): statements are described once per
		// client connection and then sent unnamed, one round trip each.
		if !execModeChosen(cfg.URL) {
			pcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		}
	} else {
		rp["statement_timeout"] = ms(cfg.StatementTimeout)
		rp["idle_in_transaction_session_timeout"] = ms(cfg.IdleInTransactionTimeout)
		rp["lock_timeout"] = ms(cfg.LockTimeout)
	}
	warnings := newCommitWarnings()
	pcfg.ConnConfig.OnNotice = warnings.record
	pcfg.BeforeClose = func(c *pgx.Conn) { warnings.forget(c.PgConn()) }
	pcfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerInfinityTime(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	// Each kind may keep a quarter of the pool; the callers run 2 claims, 4
	// acknowledgements and 4 group commits at once by default.
	home := int(cfg.MaxConns) / 4
	// Only sessions that keep prepared statements keep plans; with another
	// exec mode (chosen for pgbouncer in transaction mode, where a SET would
	// stay on a server session other clients then get) the claim is planned
	// at each call, as before.
	claimSess := claimSession
	if pcfg.ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement || cfg.Pooler == PoolerPgBouncer {
		claimSess = nil
	}
	db := &DB{pool: pool, cfg: cfg, warnings: warnings, claimPeek: defaultClaimPeek,
		claimConns: newHomeConns(pool, home, claimSess), ackConns: newHomeConns(pool, home, nil),
		storeConns: newHomeConns(pool, home, nil)}
	db.q = dbsqlc.New(unitDBTX{db: db, pool: pool})
	return db, nil
}

// claimSession is what the claim's home sessions run with. The claim is
// planned once per session and kept (a generic plan): planned at every call
// its planning costs as much as its execution, because its LIMITs are
// parameters and a plan made for known LIMITs always looks cheaper. A generic
// plan is kept until the table's statistics change, though, and one made
// while the table was small would read it with sequential or bitmap scans
// (cheapest for a few pages) after it has grown into a backlog; without
// those two the plan reads every table by index, which costs a few pages
// more on a tiny table and is the right plan on a large one
// (TestClaimPlanSurvivesGrowth). For the same reason it joins by nested
// loops only: a generic plan does not know the batch is small, and one made
// on a large backlog (each VACUUM has the next claim plan again) can lease
// its rows through a merge join that reads the primary key from its first
// entry to the batch's last, thousands of entries for a batch of a few
// (TestClaimPlanOnBacklog). And it is never JIT-compiled: a generic plan's
// estimates on a backlog pass jit_above_cost, and compiling would take
// nearly all of the claim's time.
var claimSession = &sessionSettings{
	set:   "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_mergejoin = off; SET enable_hashjoin = off; SET jit = off",
	reset: "RESET plan_cache_mode; RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_mergejoin; RESET enable_hashjoin; RESET jit",
}

// execModeChosen reports whether url sets pgx's default_query_exec_mode
// (pgx.ParseConfig consumes it, so the URL is read again).
func execModeChosen(url string) bool {
	c, err := pgconn.ParseConfig(url)
	if err != nil {
		return false
	}
	_, ok := c.RuntimeParams["default_query_exec_mode"]
	return ok
}

// Setting is one session setting the pool's sessions should have.
type Setting struct {
	Name string // as in SHOW
	Want string // the value hookrelay asks for, in milliseconds
	Got  string // what a session of the pool has, in milliseconds
}

// SettingMismatches returns the timeouts a session of the pool has that
// differ from the configured ones. Without a pooler they are startup
// parameters and always match; behind PgBouncer in transaction mode they
// come from the server (ALTER ROLE … IN DATABASE … SET), which the operator
// sets: the caller warns about each mismatch.
func (db *DB) SettingMismatches(ctx context.Context) ([]Setting, error) {
	want := []Setting{
		{Name: "statement_timeout", Want: ms(db.cfg.StatementTimeout)},
		{Name: "idle_in_transaction_session_timeout", Want: ms(db.cfg.IdleInTransactionTimeout)},
		{Name: "lock_timeout", Want: ms(db.cfg.LockTimeout)},
	}
	row, err := db.q.SessionTimeoutsMs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read session settings: %w", unavailable(err))
	}
	got := []string{row.StatementTimeout, row.IdleInTransactionSessionTimeout, row.LockTimeout}
	var out []Setting
	for i, s := range want {
		if s.Got = got[i]; s.Got != s.Want {
			out = append(out, s)
		}
	}
	return out, nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Close closes every connection of the pool.
func (db *DB) Close() {
	db.claimConns.close()
	db.ackConns.close()
	db.storeConns.close()
	db.pool.Close()
}

// Ping reports whether the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "database unreachable", err)
	}
	return nil
}

// PoolStats returns the pool's acquired, idle and maximum connections.
func (db *DB) PoolStats() (acquired, idle, max int32) {
	s := db.pool.Stat()
	return s.AcquiredConns(), s.IdleConns(), s.MaxConns()
}

// EnsureDatabase creates the database named in url when it does not exist,
// connecting to the server's "postgres" database to do so. It is safe when
// several processes start at once.
func EnsureDatabase(ctx context.Context, url string) error {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return hookrelay.WrapError(hookrelay.EINVALID, "invalid database URL", err)
	}
	name := cc.Database
	if name == "" {
		return hookrelay.Errorf(hookrelay.EINVALID, "database URL names no database")
	}
	// Connect to the database itself first: the common case needs no admin work.
	if conn, err := pgx.ConnectConfig(ctx, cc); err == nil {
		return conn.Close(ctx)
	} else if !isCode(err, "3D000") { // invalid_catalog_name
		return fmt.Errorf("connect to database %q: %w", name, err)
	}
	admin := cc.Copy()
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to server to create database %q: %w", name, err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && !isCode(err, "42P04") { // duplicate_database: another process won
		return fmt.Errorf("create database %q: %w", name, err)
	}
	return nil
}

func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// notFound maps pgx.ErrNoRows to a hookrelay not-found error naming what.
func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return hookrelay.Errorf(hookrelay.ENOTFOUND, "%s not found", what)
	}
	return err
}

// unavailable marks connection-level failures (server down, restarting, pool
// closed, timeouts) as hookrelay.EUNAVAILABLE so callers answer 503 rather
// than 500, and a text value the database cannot take (errRefusedText) as
// hookrelay.EINVALID; other errors are returned unchanged.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "22021", "22P05": // character_not_in_repertoire, untranslatable_character
			return hookrelay.WrapError(hookrelay.EINVALID, errRefusedText, err)
		}
		switch pgErr.Code[:2] {
		case "08", "53", "57": // connection exception, insufficient resources, operator intervention
			return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "database unavailable", err)
		case "40": // transaction rollback: a deadlock or serialization failure; the same request may succeed
			return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "database transaction aborted, retry", err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	// Decoding a row into the wrong Go type is a bug, not an outage.
	var scanErr pgx.ScanArgError
	var scanErrPtr *pgx.ScanArgError
	if errors.As(err, &scanErr) || errors.As(err, &scanErrPtr) {
		return err
	}
	// Everything else without a server error code happened on the way to the
	// server (refused, reset, timed out, pool closed): the caller may retry.
	return hookrelay.WrapError(hookrelay.EUNAVAILABLE, "database unavailable", err)
}

// errRefusedText is the client-safe message of a statement PostgreSQL
// refused for a text value it cannot take: invalid UTF-8 or a NUL (SQLSTATE
// 22021), or a character the database's encoding lacks (22P05). Values are
// checked where they enter (hookrelay.CheckText) and answered 400 naming
// the field; this is the defence behind those checks, so that one missed
// is a 400 still, not a 500. The server's own message, which quotes the
// bytes, stays in the wrapped error (logs), out of the answer.
const errRefusedText = "a text value is not valid UTF-8 or contains a NUL character"

// transient reports whether err is a transaction PostgreSQL rolled back
// (deadlock detected, serialization failure): run again, it may succeed.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "40")
}

// InTx runs fn in a transaction, committing when it returns nil; within a
// unit of work (BeginUnit), in the unit's transaction, without a savepoint
// (fn's failure fails the unit).
func (db *DB) inTx(ctx context.Context, fn func(q *dbsqlc.Queries, tx pgx.Tx) error) error {
	if u := db.unitOf(ctx); u != nil {
		return runTx(ctx, u.tx(), fn)
	}
	return runTx(ctx, db.pool, fn)
}

// runTx runs fn in a transaction begun on b (the pool, or one connection),
// committing when it returns nil.
func runTx(ctx context.Context, b interface {
	Begin(context.Context) (pgx.Tx, error)
}, fn func(q *dbsqlc.Queries, tx pgx.Tx) error) error {
	tx, err := b.Begin(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(dbsqlc.New(tx), tx); err != nil {
		return err
	}
	return unavailable(tx.Commit(ctx))
}

// unavailableUnlessNoRows is unavailable for every error but pgx.ErrNoRows,
// which it leaves for notFound.
func unavailableUnlessNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return unavailable(err)
}
