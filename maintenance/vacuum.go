package maintenance

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// vacuumLoop checks the hot tables' dead tuples every VacuumInterval and runs
// a plain VACUUM (never FULL) of each table past the policy, on a dedicated
// session (VACUUM cannot run inside a transaction, and it may need a longer
// statement_timeout than the pool's).
func (mt *Maintainer) vacuumLoop(ctx context.Context) {
	var sess *db.Session
	defer func() {
		if sess != nil {
			sess.Close()
		}
	}()
	tick := time.NewTicker(mt.cfg.VacuumInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		counts, err := mt.db.TupleCounts(ctx, db.HotTables)
		if err != nil {
			if ctx.Err() == nil {
				mt.m.sampleFailures.WithLabelValues("vacuum").Inc()
				mt.logger.Warn("maintenance: dead tuple check failed", "error", err)
			}
			continue
		}
		for _, c := range counts {
			if !mt.needsVacuum(c) {
				continue
			}
			if sess == nil {
				if sess, err = mt.db.OpenSession(ctx, mt.cfg.Session); err != nil {
					sess = nil
					if ctx.Err() == nil {
						mt.logger.Warn("maintenance: vacuum session", "error", err)
					}
					break
				}
			}
			start := time.Now()
			err := sess.Vacuum(ctx, c.Table)
			took := time.Since(start)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				mt.m.sampleFailures.WithLabelValues("vacuum").Inc()
				mt.logger.Warn("maintenance: vacuum failed", "table", c.Table, "error", err)
				sess.Close()
				sess = nil
				break
			}
			mt.m.vacuums.WithLabelValues(c.Table).Inc()
			mt.m.vacuumSeconds.Observe(took.Seconds())
			mt.logger.Debug("maintenance: vacuumed", "table", c.Table, "dead", c.Dead, "live", c.Live, "took", took)
		}
	}
}

// needsVacuum applies the policy: enough dead tuples in absolute terms, or
// relative to the live ones.
func (mt *Maintainer) needsVacuum(c db.TupleCount) bool {
	if c.Dead < mt.cfg.VacuumMinDead {
		return false
	}
	return c.Dead >= mt.cfg.VacuumDeadTuples || float64(c.Dead) > mt.cfg.VacuumDeadRatio*float64(c.Live)
}
