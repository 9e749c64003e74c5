package maintenance

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// statLoop writes a stat sample every StatInterval over the window since the
// previous one (ending StatLag ago) and trims samples older than StatKeep.
func (mt *Maintainer) statLoop(ctx context.Context) {
	var from time.Time
	if last, err := mt.db.StatSampleLatest(ctx); err == nil {
		from = last.WindowEnd // continue where the previous holder stopped
	}
	tick := time.NewTicker(mt.cfg.StatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := mt.cfg.Now()
		to := now.Add(-mt.cfg.StatLag)
		// After a long gap, a sample covers one interval, not the whole gap.
		if from.IsZero() || to.Sub(from) > 3*mt.cfg.StatInterval || !to.After(from) {
			from = to.Add(-mt.cfg.StatInterval)
		}
		mt.summarizeHistory(ctx, from, to)
		s, err := mt.db.StatSampleTake(ctx, from, to, now, mt.cfg.Queues)
		if err == nil {
			err = mt.db.StatSampleInsert(ctx, s)
		}
		if err == nil {
			_, err = mt.db.StatSamplesTrim(ctx, now.Add(-mt.cfg.StatKeep))
		}
		if err != nil {
			if ctx.Err() == nil {
				mt.m.sampleFailures.WithLabelValues("stats").Inc()
				mt.logger.Warn("maintenance: stat sample failed", "error", err)
			}
			continue
		}
		mt.m.sampleSeconds.WithLabelValues("stats").Set(s.QueryMs / 1000)
		from = to
	}
}

// summarizeLockTimeout is how long summarizeHistory waits for a history
// partition that a VACUUM or ANALYZE holds; well under deadlock_timeout (1 s
// by default), after which waiting would get an autovacuum cancelled.
const summarizeLockTimeout = 100 * time.Millisecond

// summarizeHistory brings the BRIN indexes of the window's history partitions
// up to date before a sample reads them (see db.HistoryIndexesSummarize). A
// failure only makes that sample read more; the next call catches up.
func (mt *Maintainer) summarizeHistory(ctx context.Context, from, to time.Time) {
	n, err := mt.db.HistoryIndexesSummarize(ctx, from, to, summarizeLockTimeout)
	switch {
	case err == nil:
		mt.m.brinRanges.Add(float64(n))
	case db.IsLockTimeout(err):
		mt.logger.Debug("maintenance: history partition busy; its BRIN summary waits for the next sample", "error", err)
	case ctx.Err() == nil:
		mt.m.sampleFailures.WithLabelValues("summarize").Inc()
		mt.logger.Warn("maintenance: summarizing the history indexes failed", "error", err)
	}
}
