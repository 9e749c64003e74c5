package maintenance

import (
	"context"
	"strings"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// indexEntryBytes is a generous size of one entry of a hot-table index
// (key, tuple pointer, line pointer, page fill); an index much larger than
// live tuples × this is bloated.
const indexEntryBytes = 64

// reindexCheck rebuilds the hot tables' bloated indexes. VACUUM frees index
// entries but not index pages that stay partly used: with non-HOT updates
// (parking, promoting, retries move visible_at) and deletes spread over the
// key space, indexes of a small table slowly grow to many times their useful
// size. REINDEX
// CONCURRENTLY rebuilds one without blocking writers. Leftovers of an
// interrupted rebuild (invalid *_ccnew / *_ccold indexes) are dropped first.
func (mt *Maintainer) reindexCheck(ctx context.Context, sess *db.Session) error {
	idx, err := mt.db.HotIndexSizes(ctx, db.HotTables)
	if err != nil {
		return err
	}
	for _, ix := range idx {
		if !ix.Valid && (strings.Contains(ix.Name, "_ccnew") || strings.Contains(ix.Name, "_ccold")) {
			if err := sess.DropIndex(ctx, ix.Name); err != nil {
				return err
			}
			mt.logger.Info("maintenance: dropped leftover of an interrupted reindex", "index", ix.Name)
			continue
		}
		limit := max(mt.cfg.ReindexMinBytes, int64(mt.cfg.ReindexBloatFactor*float64(max(ix.Live, 1)*indexEntryBytes)))
		if !ix.Valid || ix.Bytes <= limit {
			continue
		}
		start := time.Now()
		if err := sess.Reindex(ctx, ix.Name); err != nil {
			return err
		}
		mt.m.reindexes.WithLabelValues(ix.Name).Inc()
		mt.logger.Info("maintenance: rebuilt bloated index", "index", ix.Name, "bytes", ix.Bytes,
			"live_tuples", ix.Live, "took", time.Since(start))
	}
	return nil
}
