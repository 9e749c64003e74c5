package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Defaults of the maintenance session's settings an operator can change;
// cmd/hookrelay uses them for its environment variables.
const (
	DefaultSessionStatementTimeout = 10 * time.Minute
	DefaultSessionLockTimeout      = 5 * time.Second
)

// SessionConfig configures a dedicated maintenance session: one connection of
// its own, outside the pool, never left inside a transaction. Zero fields get
// the defaults named (WithDefaults).
type SessionConfig struct {
	// AppName is the session's application_name. Default "hookrelay-maintenance".
	AppName string
	// StatementTimeout bounds one statement; VACUUM of a large table and a
	// DETACH waiting for old snapshots need longer than API queries.
	// Default DefaultSessionStatementTimeout (10m).
	StatementTimeout time.Duration
	// LockTimeout bounds waiting for a lock, so DDL never queues in front of
	// the application's statements for long. Default
	// DefaultSessionLockTimeout (5s).
	LockTimeout time.Duration
	// IdleInTransactionTimeout ends the session if it is ever left idle in a
	// transaction. Default DefaultIdleInTransactionTimeout (60s).
	IdleInTransactionTimeout time.Duration
}

// WithDefaults returns c with every zero field set to its default.
func (c SessionConfig) WithDefaults() SessionConfig {
	c.AppName = cmp.Or(c.AppName, "hookrelay-maintenance")
	c.StatementTimeout = cmp.Or(c.StatementTimeout, DefaultSessionStatementTimeout)
	c.LockTimeout = cmp.Or(c.LockTimeout, DefaultSessionLockTimeout)
	c.IdleInTransactionTimeout = cmp.Or(c.IdleInTransactionTimeout, DefaultIdleInTransactionTimeout)
	return c
}

// Session is a dedicated connection for maintenance work: the session-level
// leadership lock, partition DDL and VACUUM (which cannot run in a
// transaction). Every statement runs in autocommit, so the session is never
// idle in a transaction; when the connection is lost, the server releases its
// lock. A Session is not safe for concurrent use.
type Session struct {
	conn *pgx.Conn
	q    *dbsqlc.Queries
	// vacuums are the VACUUM statements built for this session, by table
	// and kind: the maintenance role vacuums the same few hot tables many
	// times a second, and building the statement (quoting the name on the
	// server) was a round trip before each.
	vacuums map[vacuumKind]string
}

// vacuumKind names a built VACUUM statement: its table and whether it is a
// heap pass.
type vacuumKind struct {
	table    string
	heapOnly bool
}

// OpenSession opens a dedicated session on the store's database, through
// Config.DirectURL when set: its lock, its settings and its LISTEN stay on
// one server session, which a pooler in transaction mode would not keep.
func (db *DB) OpenSession(ctx context.Context, cfg SessionConfig) (*Session, error) {
	return db.openSession(ctx, cfg, nil)
}

// openSession opens a session whose notices go to onNotice (nil: dropped).
func (db *DB) openSession(ctx context.Context, cfg SessionConfig, onNotice pgconn.NoticeHandler) (*Session, error) {
	cfg = cfg.WithDefaults()
	cc, err := pgx.ParseConfig(db.cfg.SessionURL())
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	cc.OnNotice = onNotice
	rp := cc.RuntimeParams
	rp["application_name"] = cfg.AppName
	rp["statement_timeout"] = ms(cfg.StatementTimeout)
	rp["lock_timeout"] = ms(cfg.LockTimeout)
	rp["idle_in_transaction_session_timeout"] = ms(cfg.IdleInTransactionTimeout)
	rp["timezone"] = "UTC"
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("open session: %w", unavailable(err))
	}
	return &Session{conn: conn, q: dbsqlc.New(conn)}, nil
}

// Close closes the connection, releasing any lock it holds.
func (s *Session) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.conn.Close(ctx)
}

// Ping reports whether the session's connection still answers.
func (s *Session) Ping(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("session ping: %w", unavailable(err))
	}
	return nil
}

// runBuilt runs stmt, a utility statement built by one of the *Statement
// queries (buildErr is that query's error); what names the work in the
// error returned.
func (s *Session) runBuilt(ctx context.Context, stmt string, buildErr error, what string) error {
	err := buildErr
	if err == nil {
		_, err = s.conn.Exec(ctx, stmt)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, unavailable(err))
	}
	return nil
}

// PID returns the server process id of the session.
func (s *Session) PID() uint32 { return s.conn.PgConn().PID() }

// TryLock takes the session-level advisory lock key without waiting and
// reports whether this session now holds it.
func (s *Session) TryLock(ctx context.Context, key int64) (bool, error) {
	ok, err := s.q.MaintenanceTryLock(ctx, key)
	if err != nil {
		return false, fmt.Errorf("try lock %d: %w", key, unavailable(err))
	}
	return ok, nil
}

// Unlock releases the advisory lock key held by this session.
func (s *Session) Unlock(ctx context.Context, key int64) error {
	if _, err := s.q.MaintenanceUnlock(ctx, key); err != nil {
		return fmt.Errorf("unlock %d: %w", key, unavailable(err))
	}
	return nil
}

// Vacuum runs a plain VACUUM (never FULL) of table, with no parallel
// workers: a hot table's indexes are a few megabytes, and starting workers
// for them, on a server the dispatch keeps busy, made the VACUUM longer, not
// shorter. No heap pass (VacuumHeap) can run while it does, so its duration
// is how long the churn's dead tuples wait for their space to be freed.
func (s *Session) Vacuum(ctx context.Context, table string) error {
	return s.vacuum(ctx, table, false)
}

// VacuumHeap runs VACUUM (INDEX_CLEANUP OFF) of table: the heap pass alone.
// It prunes every page (dead tuples' space becomes free at once; their line
// pointers stay, marked dead, as do their index entries) and skips reading
// the indexes, which is most of a small hot table's VACUUM. A plain Vacuum
// later removes the index entries and the line pointers.
func (s *Session) VacuumHeap(ctx context.Context, table string) error {
	return s.vacuum(ctx, table, true)
}

func (s *Session) vacuum(ctx context.Context, table string, heapOnly bool) error {
	k := vacuumKind{table, heapOnly}
	stmt, ok := s.vacuums[k]
	if !ok {
		var err error
		stmt, err = s.q.VacuumStatement(ctx, dbsqlc.VacuumStatementParams{TableName: table, HeapOnly: heapOnly})
		if err != nil {
			return s.runBuilt(ctx, stmt, err, "vacuum "+table)
		}
		if s.vacuums == nil {
			s.vacuums = map[vacuumKind]string{}
		}
		s.vacuums[k] = stmt
	}
	return s.runBuilt(ctx, stmt, nil, "vacuum "+table)
}

// VacuumFreeze runs VACUUM (FREEZE) of table, a closed day of the history:
// one pass that sets its visibility map and freezes its rows, so no later
// VACUUM needs to read it again. It runs under the server's autovacuum cost
// settings (autovacuum_vacuum_cost_delay and _limit: a day of tens of
// gigabytes must not take the server's I/O from the open day, and the
// operator tunes one pair of settings for both) and without a statement
// timeout (it may take longer than any); the settings are restored after it.
// A closed day of 2 million callbacks (2.6 GB) takes about two minutes
// under the defaults (2 ms, 200) and writes about its size in WAL (a
// full-page image of each page, as any first VACUUM of it after a
// checkpoint would).
func (s *Session) VacuumFreeze(ctx context.Context, table string) error {
	stmt, err := s.q.VacuumFreezeStatement(ctx, table)
	if err != nil {
		return fmt.Errorf("vacuum freeze %s: %w", table, unavailable(err))
	}
	// The VACUUM is a statement of its own: in a multi-statement string it
	// would run inside the string's implicit transaction block, which it
	// refuses.
	err = s.q.VacuumFreezeSettings(ctx)
	if err == nil {
		_, err = s.conn.Exec(ctx, stmt)
	}
	// The settings are restored even when the VACUUM failed or was
	// cancelled: the session goes on with the role's other work.
	resetCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, rerr := s.conn.PgConn().Exec(resetCtx, "RESET vacuum_cost_delay; RESET vacuum_cost_limit; RESET statement_timeout").ReadAll()
	if err = errors.Join(err, rerr); err != nil {
		return fmt.Errorf("vacuum freeze %s: %w", table, unavailable(err))
	}
	return nil
}

// DetachPartition detaches child from parent CONCURRENTLY (the parent stays
// writable). An interrupted detach leaves the child "detach pending"; call
// FinalizeDetach then.
func (s *Session) DetachPartition(ctx context.Context, parent, child string) error {
	stmt, err := s.q.PartitionDetachStatement(ctx, dbsqlc.PartitionDetachStatementParams{Parent: parent, Child: child})
	return s.runBuilt(ctx, stmt, err, fmt.Sprintf("detach %s from %s", child, parent))
}

// FinalizeDetach completes an interrupted concurrent detach of child.
func (s *Session) FinalizeDetach(ctx context.Context, parent, child string) error {
	stmt, err := s.q.PartitionFinalizeStatement(ctx, dbsqlc.PartitionFinalizeStatementParams{Parent: parent, Child: child})
	return s.runBuilt(ctx, stmt, err, "finalize detach of "+child)
}

// DropTable drops a detached day table.
func (s *Session) DropTable(ctx context.Context, name string) error {
	stmt, err := s.q.PartitionDropStatement(ctx, name)
	return s.runBuilt(ctx, stmt, err, "drop "+name)
}

// Partition is one day table of a partitioned history table.
type Partition struct {
	Name   string    `json:"name"`   // e.g. messages_p20261129
	Parent string    `json:"parent"` // messages, delivery_attempts or idempotency_keys
	Day    time.Time `json:"day"`    // the UTC day it holds
	// Attached is false for a table an interrupted run detached but did
	// not drop yet.
	Attached bool `json:"attached"`
	// DetachPending reports an interrupted DETACH ... CONCURRENTLY.
	DetachPending bool  `json:"detach_pending"`
	Bytes         int64 `json:"bytes"` // table, indexes and TOAST
	// HeapPages is the size of its heap in pages, AllVisiblePages how many
	// pages its last VACUUM (or ANALYZE) counted all-visible
	// (pg_class.relallvisible): a day vacuumed since its last insert has
	// as many as it has pages.
	HeapPages       int64 `json:"heap_pages"`
	AllVisiblePages int64 `json:"all_visible_pages"`
}

// Partitions lists the day tables of messages, delivery_attempts and
// idempotency_keys, oldest day first.
func (db *DB) Partitions(ctx context.Context) ([]Partition, error) {
	rows, err := db.q.PartitionList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", unavailable(err))
	}
	out := make([]Partition, len(rows))
	for i, r := range rows {
		out[i] = Partition{Name: r.Name, Parent: r.Parent, Day: r.Day.UTC(), Attached: r.Attached,
			DetachPending: r.DetachPending, Bytes: r.Bytes, HeapPages: r.HeapPages, AllVisiblePages: r.AllVisiblePages}
	}
	return out, nil
}

// DeadLettersDiscardBefore deletes the dead letters whose message was received
// before t and returns how many it deleted.
func (db *DB) DeadLettersDiscardBefore(ctx context.Context, t time.Time) (int64, error) {
	n, err := db.q.DeadLetterDeleteExpired(ctx, t)
	if err != nil {
		return 0, fmt.Errorf("discard dead letters before %s: %w", t.Format(time.RFC3339), unavailable(err))
	}
	return n, nil
}

// PendingDeliveriesBetween counts pending deliveries whose message was
// received in [from, to).
func (db *DB) PendingDeliveriesBetween(ctx context.Context, from, to time.Time) (int64, error) {
	n, err := db.q.DeliveryCountReceivedBetween(ctx, dbsqlc.DeliveryCountReceivedBetweenParams{FromTime: from, ToTime: to})
	if err != nil {
		return 0, fmt.Errorf("count pending deliveries: %w", unavailable(err))
	}
	return n, nil
}

// MaintenanceRun records when a maintenance job last ran.
type MaintenanceRun struct {
	Job       string    `json:"job"`
	LastRunAt time.Time `json:"last_run_at"`
	Detail    string    `json:"detail"`
}

// MaintenanceRuns lists the recorded jobs whose name starts with prefix.
func (db *DB) MaintenanceRuns(ctx context.Context, prefix string) ([]MaintenanceRun, error) {
	rows, err := db.q.MaintenanceRunList(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list maintenance runs: %w", unavailable(err))
	}
	out := make([]MaintenanceRun, len(rows))
	for i, r := range rows {
		out[i] = MaintenanceRun{Job: r.Job, LastRunAt: r.LastRunAt, Detail: r.Detail}
	}
	return out, nil
}

// MaintenanceRunSet records a run of job.
func (db *DB) MaintenanceRunSet(ctx context.Context, r MaintenanceRun) error {
	err := db.q.MaintenanceRunSet(ctx, dbsqlc.MaintenanceRunSetParams{Job: r.Job, LastRunAt: r.LastRunAt, Detail: r.Detail})
	if err != nil {
		return fmt.Errorf("record maintenance run %s: %w", r.Job, unavailable(err))
	}
	return nil
}

// MaintenanceRunDelete forgets job.
func (db *DB) MaintenanceRunDelete(ctx context.Context, job string) error {
	if err := db.q.MaintenanceRunDelete(ctx, job); err != nil {
		return fmt.Errorf("delete maintenance run %s: %w", job, unavailable(err))
	}
	return nil
}

// TupleCount is a table's live and dead tuples as the statistics collector
// last saw them.
type TupleCount struct {
	Table string
	Live  int64
	Dead  int64
	// Planned is the row count the planner works from (pg_class.reltuples,
	// set by the last VACUUM or ANALYZE; -1 if neither has run).
	Planned float64
	// Churned counts the rows deleted or updated since the statistics were
	// reset: it moves whenever the table makes dead tuples.
	Churned int64
	// HeapBytes is the size of the table's heap (main fork).
	HeapBytes int64
}

// TupleCounts returns the tuple counts of the named tables.
func (db *DB) TupleCounts(ctx context.Context, tables []string) ([]TupleCount, error) {
	rows, err := db.q.HotTableStats(ctx, tables)
	if err != nil {
		return nil, fmt.Errorf("tuple counts: %w", unavailable(err))
	}
	out := make([]TupleCount, len(rows))
	for i, r := range rows {
		out[i] = TupleCount{Table: r.Name, Live: r.Live, Dead: r.Dead, Planned: r.Planned, Churned: r.Churned, HeapBytes: r.HeapBytes}
	}
	return out, nil
}

// TupleBytes returns the average stored size of a row (tuple header and line
// pointer included) of each named table that has column statistics, from
// those statistics.
func (db *DB) TupleBytes(ctx context.Context, tables []string) (map[string]float64, error) {
	rows, err := db.q.HotTupleBytes(ctx, tables)
	if err != nil {
		return nil, fmt.Errorf("tuple bytes: %w", unavailable(err))
	}
	out := make(map[string]float64, len(rows))
	for _, r := range rows {
		out[r.Name] = r.TupleBytes
	}
	return out, nil
}

// PartitionRows is a history day partition's row counts, as its ANALYZE
// policy sees them.
type PartitionRows struct {
	Table  string
	Parent string // messages, delivery_attempts or idempotency_keys
	Live   int64
	// Modified counts the rows inserted, updated or deleted since the last
	// ANALYZE (n_mod_since_analyze): the history only inserts, so
	// Live - Modified is about the rows that ANALYZE saw.
	Modified int64
	// Planned is the row count the planner works from (pg_class.reltuples,
	// set by the last VACUUM or ANALYZE; -1 if neither has run).
	Planned float64
	// HasStats reports whether the partition has column statistics.
	HasStats bool
}

// HistoryPartitionRows returns the row counts of the attached day
// partitions of messages, delivery_attempts and idempotency_keys.
func (db *DB) HistoryPartitionRows(ctx context.Context) ([]PartitionRows, error) {
	rows, err := db.q.PartitionStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("history partition rows: %w", unavailable(err))
	}
	out := make([]PartitionRows, len(rows))
	for i, r := range rows {
		out[i] = PartitionRows{Table: r.Name, Parent: r.Parent, Live: r.Live, Modified: r.Modified, Planned: r.Planned, HasStats: r.HasStats}
	}
	return out, nil
}

// Analyze runs ANALYZE of table: its row count and column statistics.
func (s *Session) Analyze(ctx context.Context, table string) error {
	stmt, err := s.q.AnalyzeStatement(ctx, table)
	return s.runBuilt(ctx, stmt, err, "analyze "+table)
}

// Reindex rebuilds index with REINDEX INDEX CONCURRENTLY: writers are not
// blocked; the old index is dropped when the new one is valid.
func (s *Session) Reindex(ctx context.Context, index string) error {
	stmt, err := s.q.ReindexStatement(ctx, index)
	return s.runBuilt(ctx, stmt, err, "reindex "+index)
}

// DropIndex drops index concurrently (leftovers of an interrupted reindex).
func (s *Session) DropIndex(ctx context.Context, index string) error {
	stmt, err := s.q.DropIndexStatement(ctx, index)
	return s.runBuilt(ctx, stmt, err, "drop index "+index)
}

// IndexSize is one index of a hot table.
type IndexSize struct {
	Name  string
	Table string
	Bytes int64
	// Live is the table's live tuples (statistics collector).
	Live int64
	// Valid is false for an index being built or left behind by an
	// interrupted REINDEX CONCURRENTLY.
	Valid bool
}

// HotIndexSizes returns the indexes of the named tables.
func (db *DB) HotIndexSizes(ctx context.Context, tables []string) ([]IndexSize, error) {
	rows, err := db.q.HotIndexes(ctx, tables)
	if err != nil {
		return nil, fmt.Errorf("index sizes: %w", unavailable(err))
	}
	out := make([]IndexSize, len(rows))
	for i, r := range rows {
		out[i] = IndexSize{Name: r.Name, Table: r.TableName, Bytes: r.Bytes, Live: r.Live, Valid: r.Valid}
	}
	return out, nil
}
