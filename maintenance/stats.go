package maintenance

import (
	"context"
	"time"
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
