package maintenance

import (
	"cmp"
	"context"
	"math"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// vacuumLoop checks the hot tables' dead tuples every VacuumInterval and runs
// a plain VACUUM (never FULL) of each table past the policy, every
// HistoryAnalyzeInterval analyzes a history day partition that needs it (see
// needsHistoryAnalyze), and every ReindexInterval rebuilds bloated indexes,
// on a dedicated session (VACUUM cannot run inside a transaction, and it may
// need a longer statement_timeout than the pool's).
func (mt *Maintainer) vacuumLoop(ctx context.Context) {
	var sess *db.Session
	defer func() {
		if sess != nil {
			sess.Close()
		}
	}()
	// session returns the dedicated session, opening it when needed.
	session := func() *db.Session {
		if sess == nil {
			s, err := mt.db.OpenSession(ctx, mt.cfg.Session)
			if err != nil {
				if ctx.Err() == nil {
					mt.logger.Warn("maintenance: vacuum session", "error", err)
				}
				return nil
			}
			sess = s
		}
		return sess
	}
	// failed counts and logs err and drops the session (it may be broken).
	failed := func(what string, err error) {
		if ctx.Err() != nil {
			return
		}
		mt.m.sampleFailures.WithLabelValues("vacuum").Inc()
		mt.logger.Warn("maintenance: "+what+" failed", "error", err)
		if sess != nil {
			sess.Close()
			sess = nil
		}
	}
	// The checks come every VacuumInterval while a hot table churns; while
	// none does (no traffic) the pause doubles up to VacuumMaxGap, the
	// longest a churning table waits for its heap pass in any case.
	pause := mt.cfg.VacuumInterval
	tick := time.NewTimer(pause)
	defer tick.Stop()
	nextReindex := time.Now().Add(mt.cfg.ReindexInterval)
	var nextHistoryAnalyze time.Time // the first tick checks
	last := map[string]*vacuumRecord{}
	// Bytes a row of each table takes, from its column statistics, read
	// once a minute (they change with ANALYZE only).
	var rowBytes map[string]float64
	var nextRowBytes time.Time
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-tick.C:
		}
		if now.After(nextRowBytes) {
			// A failure keeps the last sizes (or the default) until the next
			// minute's try, rather than a query and a warning every tick.
			nextRowBytes = now.Add(time.Minute)
			if b, err := mt.db.TupleBytes(ctx, db.HotTables); err == nil {
				rowBytes = b
			} else if ctx.Err() == nil {
				mt.logger.Warn("maintenance: row sizes", "error", err)
			}
		}
		counts, err := mt.db.TupleCounts(ctx, db.HotTables)
		// Quiet: no table's churn counter moved within the churn window
		// (backends report their counts about once a second, so a counter
		// that did not move since the last check says nothing). Otherwise
		// the next check comes when the table churning fastest may need
		// its heap pass (its churnGap, from the rate known so far): the
		// heartbeat tables, churning a few rows every few seconds, need
		// one a second at most.
		quiet := err == nil
		gap := mt.cfg.VacuumMaxGap
		for _, c := range counts {
			r := last[c.Table]
			switch {
			case r == nil:
				quiet, gap = false, mt.cfg.VacuumInterval
			case r.churned != c.Churned || !r.churnedAt.IsZero() && now.Sub(r.churnedAt) < mt.cfg.VacuumChurnWindow:
				quiet = false
				gap = min(gap, mt.churnGap(c.HeapBytes, cmp.Or(rowBytes[c.Table], defaultRowBytes), r.churn.rate()))
			}
		}
		pause = idlePause(pause, quiet, mt.cfg.VacuumInterval, mt.cfg.VacuumMaxGap)
		if !quiet {
			pause = max(gap, mt.cfg.VacuumInterval)
		}
		tick.Reset(pause)
		if err != nil {
			failed("dead tuple check", err)
			continue
		}
		for _, c := range counts {
			r := last[c.Table]
			if r == nil {
				// The first check only records the churn counter.
				r = &vacuumRecord{churned: c.Churned}
				last[c.Table] = r
			}
			// Each kind is held to the budget by its own cost: whether to
			// vacuum at all by the last heap pass's, whether that VACUUM is
			// a full one by the last full one's. A full VACUUM of 100 ms
			// must not stop the 5 ms heap passes for 2 s (dead space reached
			// 30-40 % of the heap after every full one when one budget, of
			// whichever VACUUM ran last, covered both).
			// Churn is the counter moving between two checks.
			if c.Churned != r.churned {
				r.churned, r.churnedAt = c.Churned, now
			}
			r.churn.observe(now, c.Churned)
			var churnGap time.Duration // 0: not churning
			if !r.churnedAt.IsZero() && now.Sub(r.churnedAt) < mt.cfg.VacuumChurnWindow {
				churnGap = mt.churnGap(c.HeapBytes, cmp.Or(rowBytes[c.Table], defaultRowBytes), r.churn.rate())
			}
			if !mt.needsVacuum(c, now.Sub(r.at), r.heapTook, churnGap) {
				if mt.needsAnalyze(c, now.Sub(r.analyzedAt), r.analyzeTook) {
					s := session()
					if s == nil {
						break
					}
					start := time.Now()
					if err := s.Analyze(ctx, c.Table); err != nil {
						failed("analyze of "+c.Table, err)
						break
					}
					r.analyzedAt, r.analyzeTook = now, time.Since(start)
					mt.m.analyzes.WithLabelValues(c.Table).Inc()
					mt.logger.Info("maintenance: analyzed a table that outgrew its statistics",
						"table", c.Table, "live", c.Live, "planned", c.Planned, "took", r.analyzeTook)
				}
				continue
			}
			s := session()
			if s == nil {
				break
			}
			full := mt.needsFullVacuum(c, now.Sub(r.fullAt), r.fullTook)
			vacuum, kind := s.VacuumHeap, "heap"
			if full {
				vacuum, kind = s.Vacuum, "full"
			}
			start := time.Now()
			if err := vacuum(ctx, c.Table); err != nil {
				failed("vacuum of "+c.Table, err)
				break
			}
			took := time.Since(start)
			// Gaps are counted between the ticks that started VACUUMs, so
			// that VacuumMinGap = VacuumInterval means every tick.
			r.at = now
			if full {
				r.fullAt, r.fullTook = r.at, took
			} else {
				r.heapTook = took
			}
			mt.m.vacuums.WithLabelValues(c.Table).Inc()
			mt.m.vacuumSeconds.Observe(took.Seconds())
			mt.logger.Debug("maintenance: vacuumed", "table", c.Table, "kind", kind, "dead", c.Dead, "live", c.Live, "took", took)
		}
		if mt.test.vacuumChecked != nil {
			mt.test.vacuumChecked(now)
		}
		if mt.cfg.HistoryAnalyzeInterval > 0 && time.Now().After(nextHistoryAnalyze) {
			// The next check waits the interval, or an ANALYZE's duration
			// over VacuumBudget when longer.
			nextHistoryAnalyze = time.Now().Add(mt.cfg.HistoryAnalyzeInterval)
			if s := session(); s != nil {
				took, err := mt.analyzeHistory(ctx, s)
				if err != nil {
					failed("history analyze", err)
				}
				nextHistoryAnalyze = time.Now().Add(max(mt.cfg.HistoryAnalyzeInterval, time.Duration(float64(took)/mt.cfg.VacuumBudget)))
			}
		}
		if mt.cfg.ReindexInterval > 0 && time.Now().After(nextReindex) {
			nextReindex = time.Now().Add(mt.cfg.ReindexInterval)
			if s := session(); s != nil {
				if err := mt.reindexCheck(ctx, s); err != nil {
					failed("reindex", err)
				}
			}
		}
	}
}

// idlePause returns the pause before the next dead-tuple check: interval
// after a check that saw a table churn within the churn window, else twice
// the last pause, up to most.
func idlePause(last time.Duration, quiet bool, interval, most time.Duration) time.Duration {
	if !quiet {
		return interval
	}
	return max(min(2*last, most), interval)
}

// vacuumRecord is when a table was last vacuumed (any kind, and full) and
// how long its last heap pass and its last full VACUUM took; zero before the
// first of each.
type vacuumRecord struct {
	at, fullAt         time.Time
	heapTook, fullTook time.Duration
	// analyzedAt is when needsAnalyze last had the table analyzed, and
	// analyzeTook how long that took.
	analyzedAt  time.Time
	analyzeTook time.Duration
	// churned is the table's churn counter (db.TupleCount.Churned) as last
	// seen, and churnedAt when it was last seen to move.
	churned   int64
	churnedAt time.Time
	// churn is the counter over the last churnRateWindow, for its rate.
	churn churnRate
}

// churnRateWindow is how far back churnRate reaches. Each backend reports
// its counts to the statistics at most once a second, so the counter moves
// in steps; a few seconds average them out.
const churnRateWindow = 3 * time.Second

// churnRate keeps a table's churn counter at each check of the last
// churnRateWindow (and the newest older one), to tell its rate.
type churnRate struct {
	points []churnPoint
}

type churnPoint struct {
	at time.Time
	n  int64
}

// observe records the counter n at time at.
func (c *churnRate) observe(at time.Time, n int64) {
	if len(c.points) > 0 && n < c.points[len(c.points)-1].n {
		c.points = c.points[:0] // the statistics were reset
	}
	c.points = append(c.points, churnPoint{at, n})
	// Drop the points that another, still at least a window old, replaces.
	drop := 0
	for drop+1 < len(c.points) && at.Sub(c.points[drop+1].at) >= churnRateWindow {
		drop++
	}
	c.points = c.points[drop:]
}

// rate returns the rows churned a second over the recorded span, or 0 while
// that span is under a second (not known yet).
func (c *churnRate) rate() float64 {
	if len(c.points) < 2 {
		return 0
	}
	first, last := c.points[0], c.points[len(c.points)-1]
	span := last.at.Sub(first.at)
	if span < time.Second {
		return 0
	}
	return float64(last.n-first.n) / span.Seconds()
}

// defaultRowBytes is the size taken for a row of a table without column
// statistics (never analyzed): about a queue row's (~130 bytes stored).
const defaultRowBytes = 128

// minHeapBytes is the smallest heap churnGap reckons with: a table of a few
// pages fits in its own page pruning, and VACUUMs of it every tick would be
// all overhead.
const minHeapBytes = 8 * 8192

// churnGap returns the gap between heap passes of a table whose heap has
// heapBytes and which deletes or updates rate rows (of rowBytes each) a
// second: the time its churn takes to fill VacuumDeadSpace of the heap, or
// to churn VacuumMinChurn rows when that takes longer, between a
// VacuumInterval and VacuumMaxGap; VacuumMinGap while the rate is not known.
// At full load a tick's churn is about VacuumMinChurn rows, so the floor
// leaves the passes there at every tick; at a moderate rate the small queue
// table's dead-space share would ask for a pass every tick too, and the
// floor spaces them so that no more dead rows wait for a pass than at full
// load.
func (mt *Maintainer) churnGap(heapBytes int64, rowBytes, rate float64) time.Duration {
	if rate <= 0 {
		return mt.cfg.VacuumMinGap
	}
	rows := max(mt.cfg.VacuumDeadSpace*float64(max(heapBytes, minHeapBytes))/rowBytes, float64(mt.cfg.VacuumMinChurn))
	fill := rows / rate
	// Clamped in seconds: a slow churn's fill time can pass time.Duration's range.
	secs := min(max(fill, mt.cfg.VacuumInterval.Seconds()), mt.cfg.VacuumMaxGap.Seconds())
	return time.Duration(secs * float64(time.Second))
}

// outgrown: a hot table is analyzed when it holds more than this many times
// the rows its statistics say, and at least analyzeMinLive: below that a
// claim reading the whole table costs milliseconds, and at full load the
// queue table's few thousand live rows, counted by VACUUMs that run every
// quarter second, passed four times the last count every 2 s (15 ANALYZEs
// in a 30 s max-rate phase with a minimum of 1,000; each one has every
// session plan its statements again).
const (
	outgrown       = 4
	analyzeMinLive = 10_000
)

// needsAnalyze says whether a hot table has outgrown the row count the
// planner works from (c.Planned, pg_class.reltuples). A VACUUM of the empty
// queue table records 0 rows over its pages, and the planner then takes the
// table for empty however large it grows, until the next VACUUM or ANALYZE:
// the claim's generic plan, made for an empty table, led its nested loops
// with a whole-table index scan and each claim ran for 20 s on a backlog of
// 1,000,000, the dead tuples that would have brought a VACUUM never came
// (nothing was delivered), and the dispatchers stood still until
// autovacuum's ANALYZE a minute later. The live count (n_live_tup) follows
// the inserts within a second. since is the time since the last ANALYZE
// this policy ran, took how long it ran; VacuumBudget holds it back like a
// full VACUUM.
func (mt *Maintainer) needsAnalyze(c db.TupleCount, since, took time.Duration) bool {
	if c.Live < analyzeMinLive || float64(c.Live) <= outgrown*max(c.Planned, 0) {
		return false
	}
	return mt.withSlack(since) >= time.Duration(float64(took)/mt.cfg.VacuumBudget)
}

// needsVacuum applies the policy: enough dead tuples in absolute terms once
// took/VacuumHeapBudget has passed since the table's last VACUUM, or relative
// to the live ones once VacuumMinGap (or took/VacuumHeapBudget, when longer)
// has passed, or, while the table is churning (VacuumChurnWindow), once
// churnGap (see churnGap; 0: not churning), or that budget when longer, has
// passed whatever the dead-tuple count. since is the time since the last
// VACUUM of any kind, took how long the last heap pass ran (a full VACUUM is
// held to its own budget by needsFullVacuum); the first check of a table is
// never held back.
func (mt *Maintainer) needsVacuum(c db.TupleCount, since, took, churnGap time.Duration) bool {
	since = mt.withSlack(since)
	budgetGap := time.Duration(float64(took) / mt.cfg.VacuumHeapBudget)
	if churnGap > 0 && since >= max(churnGap, budgetGap) {
		return true
	}
	if c.Dead < mt.cfg.VacuumMinDead {
		return false
	}
	if c.Dead >= mt.cfg.VacuumDeadTuples {
		return since >= budgetGap
	}
	return since >= max(mt.cfg.VacuumMinGap, budgetGap) && float64(c.Dead) > mt.cfg.VacuumDeadRatio*float64(c.Live)
}

// withSlack returns since plus the slack of a tick: a VACUUM may start half
// a VacuumInterval before its gap has passed (saturating: the first check of
// a table sees the largest duration). The policy is applied at ticks, and
// the time a tick reports jitters by a few milliseconds under load: without
// slack a gap equal to VacuumInterval was "not yet passed" at about every
// other tick (in a 48-minute soak two thirds of the gaps between heap passes
// were 0.5 s where 0.25 s was asked). With half an interval, a gap counts as
// passed at the tick nearest to it.
func (mt *Maintainer) withSlack(since time.Duration) time.Duration {
	slack := mt.cfg.VacuumInterval / 2
	if since > math.MaxInt64-slack {
		return math.MaxInt64
	}
	return since + slack
}

// needsFullVacuum says whether a VACUUM that needsVacuum asked for reads the
// indexes too. Most are heap passes (VacuumHeap: pruning only, a few
// milliseconds on the small hot table), which free the dead tuples' space as
// often as the churn asks; a full VACUUM, which also removes their index
// entries and line pointers, runs once VacuumFullGap (or the last full
// VACUUM's duration over VacuumBudget, when longer) has passed since the
// last one, and whenever VacuumDeadTuples dead tuples are waiting and the
// budget allows (a heap pass runs instead until it does). sinceFull is the
// time since the table's last full VACUUM, tookFull how long it ran.
func (mt *Maintainer) needsFullVacuum(c db.TupleCount, sinceFull, tookFull time.Duration) bool {
	sinceFull = mt.withSlack(sinceFull)
	budgetGap := time.Duration(float64(tookFull) / mt.cfg.VacuumBudget)
	if c.Dead >= mt.cfg.VacuumDeadTuples {
		return sinceFull >= budgetGap
	}
	return sinceFull >= max(mt.cfg.VacuumFullGap, budgetGap)
}
