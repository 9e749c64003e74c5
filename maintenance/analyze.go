package maintenance

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// historyAnalyzeMinRows: a day partition with fewer rows is not analyzed
// (the planner's defaults serve a table of a few hundred rows as well).
const historyAnalyzeMinRows = 1_000

// needsHistoryAnalyze says whether the maintenance role analyzes a history
// day partition. Autovacuum does not (migration 00090): each of its ANALYZEs
// holds a snapshot, and so every VACUUM in the cluster back, for as long as
// it samples, and it analyzes a day at every tenth of growth, the late ones
// on a table far larger than memory. Here a partition is analyzed once it
// has historyAnalyzeMinRows rows and no statistics, and again each time it
// has grown outgrown-fold since, until an ANALYZE has seen
// HistoryAnalyzeRows rows: a day's columns are distributed alike all day,
// and the planner scales a partition's row count by its current size, so
// those statistics serve the rest of the day. The rows the last ANALYZE saw
// are Live - Modified (the history only inserts). A statistics reset (a
// crash) restarts both counters from 0; a partition the planner already
// counts at outgrown × HistoryAnalyzeRows rows or more is then left alone
// rather than analyzed again at its full size.
func (mt *Maintainer) needsHistoryAnalyze(p db.PartitionRows) bool {
	if p.Live < historyAnalyzeMinRows {
		return false
	}
	if !p.HasStats {
		return true
	}
	limit := mt.cfg.HistoryAnalyzeRows
	seen := max(p.Live-p.Modified, 0)
	return seen < limit && p.Planned < outgrown*float64(limit) && p.Live > outgrown*seen
}

// analyzeHistory runs ANALYZE of the first history day partition that
// needsHistoryAnalyze picks, if any, on the vacuum loop's session (so it
// never overlaps a VACUUM of the hot tables), and returns how long it took
// (0: none was due).
func (mt *Maintainer) analyzeHistory(ctx context.Context, s *db.Session) (time.Duration, error) {
	parts, err := mt.db.HistoryPartitionRows(ctx)
	if err != nil {
		return 0, err
	}
	for _, p := range parts {
		if !mt.needsHistoryAnalyze(p) {
			continue
		}
		start := time.Now()
		if err := s.Analyze(ctx, p.Table); err != nil {
			return 0, err
		}
		took := time.Since(start)
		mt.m.analyzes.WithLabelValues(p.Parent).Inc()
		mt.logger.Info("maintenance: analyzed a history partition",
			"table", p.Table, "live", p.Live, "last_analyzed", p.Live-p.Modified, "took", took)
		return took, nil
	}
	return 0, nil
}
