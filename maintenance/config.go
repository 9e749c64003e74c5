package maintenance

import (
	"cmp"
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// LockKey is the advisory lock key of the maintenance role.
const LockKey int64 = 7368211002

// Defaults of the settings an operator can change; cmd/hookrelay uses them
// for its environment variables.
const (
	DefaultRetention          = 168 * time.Hour
	DefaultRefusalRetention   = 168 * time.Hour
	DefaultPartitionsAhead    = 3
	DefaultRetentionInterval  = time.Hour
	DefaultVacuumInterval     = 50 * time.Millisecond
	DefaultVacuumDeadTuples   = 10_000
	DefaultVacuumDeadRatio    = 0.1
	DefaultVacuumMinDead      = 1_000
	DefaultVacuumMinGap       = 150 * time.Millisecond
	DefaultVacuumChurnWindow  = 2 * time.Second
	DefaultVacuumDeadSpace    = 0.05
	DefaultVacuumMaxGap       = time.Second
	DefaultVacuumMinChurn     = 250
	DefaultVacuumFullGap      = 5 * time.Second
	DefaultVacuumHeapBudget   = 0.5
	DefaultHistoryAnalyzeRows = 100_000
	DefaultReindexInterval    = time.Minute
	DefaultHealthInterval     = 10 * time.Second
	DefaultLongTransaction    = 5 * time.Minute
	DefaultPollLagAlert       = 5 * time.Minute
	DefaultStatInterval       = 10 * time.Second
	DefaultLockRetry          = 5 * time.Second
)

// MinPartitionsAhead is the fewest days of partitions kept ahead of today;
// WithDefaults raises a smaller PartitionsAhead to it.
const MinPartitionsAhead = 2

// Config configures the maintenance role. Zero fields take their defaults
// (WithDefaults); a negative interval switches that loop off.
type Config struct {
	// Retention is how long history (messages, delivery attempts) is kept:
	// a day partition is dropped once its whole day is older. Default
	// DefaultRetention (168h).
	Retention time.Duration
	// RefusalRetention is how long the carriers' refusal log is kept
	// (carrier_refusals, by day partition as the history), at most
	// Retention. Default DefaultRefusalRetention (168h).
	RefusalRetention time.Duration
	// PartitionsAhead is how many days of partitions exist ahead of today.
	// Default DefaultPartitionsAhead (3), at least MinPartitionsAhead.
	PartitionsAhead int
	// IdempotencyDays is how many days of idempotency_keys partitions are
	// kept, today included: the 24 h dedupe window reads today's and
	// yesterday's. Default 2, at least 2.
	IdempotencyDays int
	// RetentionInterval is the time between partition/retention passes. A
	// pass also runs whenever a process becomes the holder, so a missed
	// run (process down for days) catches up at once. Default
	// DefaultRetentionInterval (1h).
	RetentionInterval time.Duration

	// VacuumInterval is how often the hot tables' dead tuples are checked.
	// Default DefaultVacuumInterval (50ms).
	VacuumInterval time.Duration
	// VacuumDeadTuples: a hot table with at least this many dead tuples is
	// vacuumed (as often as VacuumHeapBudget allows), fully when VacuumBudget
	// allows. Default DefaultVacuumDeadTuples (10,000).
	VacuumDeadTuples int64
	// VacuumDeadRatio: a hot table whose dead tuples exceed this fraction of
	// its live ones is vacuumed (if it has at least VacuumMinDead). Default
	// DefaultVacuumDeadRatio (0.1).
	VacuumDeadRatio float64
	// VacuumMinDead is the fewest dead tuples worth a VACUUM. Default
	// DefaultVacuumMinDead (1,000).
	VacuumMinDead int64
	// VacuumMinGap is the shortest time between two VACUUMs of a table that
	// the relative trigger (VacuumDeadRatio) may cause; VacuumDeadTuples
	// dead tuples trigger one at any time. The gap used is the larger of
	// VacuumMinGap and the last heap pass's duration divided by
	// VacuumHeapBudget. It is also the gap between the heap passes of a
	// churning table until its churn rate is known (its first second).
	// Default DefaultVacuumMinGap (150ms).
	VacuumMinGap time.Duration
	// VacuumChurnWindow: a table whose deleted or updated rows counter moved
	// within this window is churning, and gets heap passes at the gap
	// VacuumDeadSpace sets (as its budget allows) whatever its dead-tuple
	// count says. Each backend reports its deletes to the statistics at
	// most once a second, so at full load the count lags the table by up to
	// a second of deletes and the dead-tuple triggers above fire
	// irregularly, letting dead space build up between passes. Default
	// DefaultVacuumChurnWindow (2s).
	VacuumChurnWindow time.Duration
	// VacuumDeadSpace is the share of a churning table's heap that the rows
	// it deletes or updates between two heap passes may take: the gap
	// between them is VacuumDeadSpace × the heap's bytes / (rows churned a
	// second × bytes a row), at least a VacuumInterval and at most
	// VacuumMaxGap, and no shorter than the heap budget allows. The rate is
	// the churn counter's over the last 3 s. A small heap with a fast churn
	// (the queue table of a few hundred live rows at full load) is thus
	// vacuumed every few tens of milliseconds, a large one, or a slow churn
	// (the heartbeat table), seldom; a fixed gap would either let the small
	// hot heap bloat or vacuum every small table as often. Default
	// DefaultVacuumDeadSpace (0.05).
	VacuumDeadSpace float64
	// VacuumMinChurn is the fewest rows a churning table deletes or updates
	// between two of its heap passes: the gap VacuumDeadSpace sets is
	// lengthened to the time the churn takes to reach it. At full load a
	// VacuumInterval's churn of the queue table is about this many rows
	// (2,700 callbacks a second, two rows each, 50 ms), so the passes there
	// keep to every tick; at 500 callbacks a second the small heap's
	// dead-space share asked for one every tick as well, where 250 rows
	// take a quarter of a second. Default DefaultVacuumMinChurn (250).
	VacuumMinChurn int64
	// VacuumMaxGap is the longest gap between the heap passes of a churning
	// table. Default DefaultVacuumMaxGap (1s).
	VacuumMaxGap time.Duration
	// VacuumFullGap is the shortest time between two full VACUUMs of a
	// table (indexes included); the VACUUMs in between are heap passes
	// (INDEX_CLEANUP OFF). VacuumDeadTuples dead tuples ask for a full one
	// at any time. Default DefaultVacuumFullGap (5s).
	VacuumFullGap time.Duration
	// VacuumBudget caps the share of wall-clock time full VACUUMs spend on
	// one table: after one that took d, the next full one waits at least
	// d / VacuumBudget. A bloated table (a long transaction held the horizon
	// back; a backlog of 1,000,000 rows: ~175 ms) is then vacuumed less
	// often instead of back to back. Default 0.05.
	VacuumBudget float64
	// VacuumHeapBudget is the same for heap passes: after one that took d,
	// the next VACUUM of the table waits at least d / VacuumHeapBudget. A
	// heap pass's work is the dead tuples it prunes (an idle pass of the
	// small hot table is well under a millisecond), so running them often
	// costs little more in all than running them seldom, and its wall time
	// on a busy machine is mostly waiting for a CPU: a small budget there
	// turns a slow pass into a long gap without one, during which dead space
	// grows past what VacuumDeadSpace allows. Default DefaultVacuumHeapBudget
	// (0.5).
	VacuumHeapBudget float64

	// HistoryAnalyzeInterval is how often the history's day partitions are
	// checked for an ANALYZE (see needsHistoryAnalyze). Default 10s.
	HistoryAnalyzeInterval time.Duration
	// HistoryAnalyzeRows: a day partition is analyzed as it grows until an
	// ANALYZE has seen this many rows; its statistics then serve the rest
	// of the day. Default DefaultHistoryAnalyzeRows (100,000).
	HistoryAnalyzeRows int64

	// ReindexInterval is how often the hot tables' indexes are checked for
	// bloat (see reindex.go). Default DefaultReindexInterval (1m).
	ReindexInterval time.Duration
	// ReindexMinBytes: smaller indexes are never rebuilt. Default 8 MiB.
	ReindexMinBytes int64
	// ReindexBloatFactor: an index larger than this many times its expected
	// size (live tuples × 64 B) is rebuilt. Default 4.
	ReindexBloatFactor float64

	// HealthInterval is the time between health samples. Default
	// DefaultHealthInterval (10s).
	HealthInterval time.Duration
	// LongTransaction is the age from which a transaction is reported
	// (metric and warning log). Default DefaultLongTransaction (5m).
	LongTransaction time.Duration
	// LongTransactionRewarn is how often a still-open long transaction is
	// logged again. Default 5m.
	LongTransactionRewarn time.Duration
	// PollLagAlert is the age of a poll endpoint's oldest unacknowledged
	// delivery from which the endpoint is reported lagging
	// (endpoint.poll_lagging, once per episode; endpoint.poll_caught_up
	// when it is back under half of it), checked at each health sample.
	// Default DefaultPollLagAlert (5m); negative: off.
	PollLagAlert time.Duration

	// StatInterval is the time between stat samples. Default
	// DefaultStatInterval (10s).
	StatInterval time.Duration
	// StatLag is how far behind now a sample's window ends, so callbacks
	// and attempts stamped before their commit are still counted. Default 5s.
	StatLag time.Duration
	// StatKeep is how long stat samples are kept. Default 2h.
	StatKeep time.Duration
	// Queues is the number of logical queues (HOOKRELAY_QUEUES). Default
	// hookrelay.DefaultQueues.
	Queues int

	// Replay configures the replay runner (ReplayRunner) the holder
	// runs; a negative Replay.Interval switches it off.
	Replay ReplayConfig

	// LockRetry is how often a standby process tries to take the role, and
	// how often the holder checks its connection. Default DefaultLockRetry
	// (5s).
	LockRetry time.Duration
	// Session configures the dedicated connections (leadership + DDL, and
	// VACUUM).
	Session db.SessionConfig

	// Now is the clock. Default time.Now.
	Now func() time.Time
	// OnRetention, when set, is called after each retention pass (tests).
	OnRetention func(RetentionReport)

	// Audit prunes the audit log in each retention pass (*audit.Log): its
	// day partitions older than AuditRetention go, the chain anchored at
	// the last entry they held. Nil: the audit log is not pruned.
	Audit AuditPruner
	// AuditRetention is how long the audit log is kept
	// (HOOKRELAY_AUDIT_RETENTION). Default DefaultAuditRetention (400 days).
	AuditRetention time.Duration
}

// DefaultAuditRetention is how long the audit log is kept by default.
const DefaultAuditRetention = 400 * 24 * time.Hour

// AuditPruner drops the audit log's day partitions past retention
// (*audit.Log).
type AuditPruner interface {
	Prune(ctx context.Context, now time.Time, retention time.Duration) (db.AuditPruned, error)
}

// WithDefaults returns c with every zero field set to its default. New
// applies it.
func (c Config) WithDefaults() Config {
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.AuditRetention = cmp.Or(c.AuditRetention, DefaultAuditRetention)
	c.RefusalRetention = min(cmp.Or(c.RefusalRetention, DefaultRefusalRetention), c.Retention)
	c.PartitionsAhead = max(cmp.Or(c.PartitionsAhead, DefaultPartitionsAhead), MinPartitionsAhead)
	c.IdempotencyDays = max(cmp.Or(c.IdempotencyDays, 2), 2)
	c.RetentionInterval = cmp.Or(c.RetentionInterval, DefaultRetentionInterval)
	c.VacuumInterval = cmp.Or(c.VacuumInterval, DefaultVacuumInterval)
	c.VacuumDeadTuples = cmp.Or(c.VacuumDeadTuples, DefaultVacuumDeadTuples)
	c.VacuumDeadRatio = cmp.Or(c.VacuumDeadRatio, DefaultVacuumDeadRatio)
	c.VacuumMinDead = cmp.Or(c.VacuumMinDead, DefaultVacuumMinDead)
	c.VacuumMinGap = cmp.Or(c.VacuumMinGap, DefaultVacuumMinGap)
	c.VacuumChurnWindow = cmp.Or(c.VacuumChurnWindow, DefaultVacuumChurnWindow)
	c.VacuumDeadSpace = cmp.Or(c.VacuumDeadSpace, DefaultVacuumDeadSpace)
	c.VacuumMaxGap = cmp.Or(c.VacuumMaxGap, DefaultVacuumMaxGap)
	c.VacuumMinChurn = cmp.Or(c.VacuumMinChurn, DefaultVacuumMinChurn)
	c.VacuumFullGap = cmp.Or(c.VacuumFullGap, DefaultVacuumFullGap)
	c.VacuumBudget = cmp.Or(c.VacuumBudget, 0.05)
	c.VacuumHeapBudget = cmp.Or(c.VacuumHeapBudget, DefaultVacuumHeapBudget)
	c.HistoryAnalyzeInterval = cmp.Or(c.HistoryAnalyzeInterval, 10*time.Second)
	c.HistoryAnalyzeRows = cmp.Or(c.HistoryAnalyzeRows, DefaultHistoryAnalyzeRows)
	c.ReindexInterval = cmp.Or(c.ReindexInterval, DefaultReindexInterval)
	c.ReindexMinBytes = cmp.Or(c.ReindexMinBytes, 8<<20)
	c.ReindexBloatFactor = cmp.Or(c.ReindexBloatFactor, 4)
	c.HealthInterval = cmp.Or(c.HealthInterval, DefaultHealthInterval)
	c.LongTransaction = cmp.Or(c.LongTransaction, DefaultLongTransaction)
	c.LongTransactionRewarn = cmp.Or(c.LongTransactionRewarn, 5*time.Minute)
	c.PollLagAlert = cmp.Or(c.PollLagAlert, DefaultPollLagAlert)
	c.StatInterval = cmp.Or(c.StatInterval, DefaultStatInterval)
	c.StatLag = cmp.Or(c.StatLag, 5*time.Second)
	c.StatKeep = cmp.Or(c.StatKeep, 2*time.Hour)
	c.Queues = cmp.Or(c.Queues, hookrelay.DefaultQueues)
	c.LockRetry = cmp.Or(c.LockRetry, DefaultLockRetry)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
