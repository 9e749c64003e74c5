package maintenance

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// The queue table's fillfactor follows its live rows (migration 00080).
//
// PostgreSQL prunes the dead rows of a page it reads (no VACUUM needed) only
// when the page's free space is below the share fillfactor reserves. A queue
// that keeps up holds a few hundred rows over a mostly empty heap, so at a
// high fillfactor its pages are never that full and the rows acknowledged
// since the last VACUUM stay as dead tuples; at fillfactor 10 every page a
// claim or an acknowledgement reads is pruned. But at 10 a backlog takes
// eight times the heap, so while the live rows are many the table is packed
// (PackedFillfactor), and made sparse again once they are few.
//
// ALTER TABLE ... SET (fillfactor) changes where new rows go, never moves
// old ones; it invalidates the table's cached plans in every session, which
// the hysteresis (PackAbove/SparseBelow, SparseAfter) keeps rare.

// fillfactorState is the queue table's fillfactor as last read or set.
type fillfactorState struct {
	known     bool
	ff        int
	changedAt time.Time
}

// adjustFillfactor packs or unpacks table for its live rows c.Live.
func (mt *Maintainer) adjustFillfactor(ctx context.Context, s *db.Session, st *fillfactorState, c db.TupleCount, now time.Time) error {
	if mt.cfg.SparseFillfactor == mt.cfg.PackedFillfactor {
		return nil
	}
	if !st.known {
		ff, err := s.Fillfactor(ctx, c.Table)
		if err != nil {
			return err
		}
		st.ff, st.known = ff, true
		mt.m.fillfactor.WithLabelValues(c.Table).Set(float64(ff))
	}
	want := st.ff
	switch {
	case c.Live > mt.cfg.PackAbove && st.ff < mt.cfg.PackedFillfactor:
		want = mt.cfg.PackedFillfactor
	case c.Live < mt.cfg.SparseBelow && st.ff > mt.cfg.SparseFillfactor && now.Sub(st.changedAt) >= mt.cfg.SparseAfter:
		want = mt.cfg.SparseFillfactor
	}
	if want == st.ff {
		return nil
	}
	if err := s.SetFillfactor(ctx, c.Table, want, time.Second); err != nil {
		return err
	}
	mt.logger.Info("maintenance: queue table fillfactor set", "table", c.Table, "fillfactor", want, "was", st.ff, "live", c.Live)
	st.ff, st.changedAt = want, now
	mt.m.fillfactor.WithLabelValues(c.Table).Set(float64(want))
	return nil
}
