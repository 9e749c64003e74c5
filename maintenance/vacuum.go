package maintenance

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// vacuumLoop checks the hot tables' dead tuples every VacuumInterval and runs
// a plain VACUUM (never FULL) of each table past the policy, and every
// ReindexInterval rebuilds bloated indexes, on a dedicated session (VACUUM
// cannot run inside a transaction, and it may need a longer statement_timeout
// than the pool's).
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
	tick := time.NewTicker(mt.cfg.VacuumInterval)
	defer tick.Stop()
	nextReindex := time.Now().Add(mt.cfg.ReindexInterval)
	last := map[string]*vacuumRecord{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		counts, err := mt.db.TupleCounts(ctx, db.HotTables)
		if err != nil {
			failed("dead tuple check", err)
			continue
		}
		for _, c := range counts {
			r := last[c.Table]
			if r == nil {
				r = &vacuumRecord{}
				last[c.Table] = r
			}
			if !mt.needsVacuum(c, time.Since(r.at), r.took) {
				continue
			}
			s := session()
			if s == nil {
				break
			}
			full := mt.needsFullVacuum(c, time.Since(r.fullAt), r.fullTook)
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
			r.at, r.took = time.Now(), took
			if full {
				r.fullAt, r.fullTook = r.at, took
			}
			mt.m.vacuums.WithLabelValues(c.Table).Inc()
			mt.m.vacuumSeconds.Observe(took.Seconds())
			mt.logger.Debug("maintenance: vacuumed", "table", c.Table, "kind", kind, "dead", c.Dead, "live", c.Live, "took", took)
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

// vacuumRecord is when a table was last vacuumed (any kind, and full) and
// how long that took; zero before its first VACUUM.
type vacuumRecord struct {
	at, fullAt     time.Time
	took, fullTook time.Duration
}

// needsVacuum applies the policy: enough dead tuples in absolute terms once
// took/VacuumBudget has passed since the table's last VACUUM, or relative to
// the live ones once VacuumMinGap (or took/VacuumBudget, when longer) has
// passed. since is the time since the last VACUUM, took how long it ran; the
// first check of a table is never held back. The budget matters in a
// backlog: a VACUUM of a 1,000,000-row queue table takes ~175 ms, and at
// 10,000 deliveries/s the absolute trigger would otherwise fire every second
// (17 % of a core in the drain of the benchmark).
func (mt *Maintainer) needsVacuum(c db.TupleCount, since, took time.Duration) bool {
	if c.Dead < mt.cfg.VacuumMinDead {
		return false
	}
	budgetGap := time.Duration(float64(took) / mt.cfg.VacuumBudget)
	if c.Dead >= mt.cfg.VacuumDeadTuples {
		return since >= budgetGap
	}
	return since >= max(mt.cfg.VacuumMinGap, budgetGap) && float64(c.Dead) > mt.cfg.VacuumDeadRatio*float64(c.Live)
}

// needsFullVacuum says whether a VACUUM that needsVacuum asked for reads the
// indexes too. Most are heap passes (VacuumHeap: pruning only, a few
// milliseconds on the small hot table), which free the dead tuples' space as
// often as the churn asks; a full VACUUM, which also removes their index
// entries and line pointers, runs once VacuumFullGap (or the last full
// VACUUM's duration over VacuumBudget, when longer) has passed since the
// last one, and whenever VacuumDeadTuples dead tuples are waiting. sinceFull
// is the time since the table's last full VACUUM, tookFull how long it ran.
func (mt *Maintainer) needsFullVacuum(c db.TupleCount, sinceFull, tookFull time.Duration) bool {
	if c.Dead >= mt.cfg.VacuumDeadTuples {
		return true
	}
	return sinceFull >= max(mt.cfg.VacuumFullGap, time.Duration(float64(tookFull)/mt.cfg.VacuumBudget))
}
