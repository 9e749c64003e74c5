package ops

import (
	"context"
	"slices"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/access"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// MaxDeadLetterIDs bounds how many dead letters one action names by id.
const MaxDeadLetterIDs = 10000

// DeadLetters selects dead letters: by IDs when IDs is not nil (an empty
// list selects none), else every one matching Filter (a zero Filter selects
// them all). Either way only those the principal in the context may see
// are selected (scopedDeadLetters): ids outside its scope are not acted on,
// as if they did not exist. Dead letters are the operator's: no merchant
// acts on them.
type DeadLetters struct {
	IDs    []int64
	Filter db.DeadLetterFilter
}

// audited is the selection as applied (scopedDeadLetters) and the count of
// an action on it, as the audit log keeps them: the ids with the scope's
// limit when there is one, or the filter.
func (sel DeadLetters) audited(n int64) map[string]any {
	m := map[string]any{"count": n}
	if sel.IDs == nil {
		m["filter"] = sel.Filter
		return m
	}
	m["ids"] = sel.IDs
	if sel.Filter.MerchantIDs != nil || sel.Filter.CarrierIDs != nil {
		m["filter"] = sel.Filter
	}
	return m
}

// scopedDeadLetters returns f limited to the dead letters the principal in
// ctx may see: an operator scoped to merchants those of the scoped
// merchants' endpoints, one scoped to carriers those of the scoped
// carriers' messages (both when both), a merchant's key its own, a
// carrier's key its own. An unscoped operator, the admin token and a
// context without a principal (the service itself) see every one. A filter
// naming a merchant or carrier outside the scope selects nothing.
func scopedDeadLetters(ctx context.Context, f db.DeadLetterFilter) db.DeadLetterFilter {
	p, ok := access.FromContext(ctx)
	if !ok {
		return f
	}
	merchants, carriers := p.Scope.Merchants, p.Scope.Carriers
	switch p.Kind {
	case access.KindMerchant, access.KindPortal:
		merchants, carriers = []int64{p.MerchantID}, nil
	case access.KindCarrier:
		merchants, carriers = nil, []int64{p.CarrierID}
	}
	f.MerchantIDs = narrowIDs(f.MerchantIDs, merchants)
	f.CarrierIDs = narrowIDs(f.CarrierIDs, carriers)
	return f
}

// narrowIDs returns the ids of set that scope holds: set itself when scope
// is empty (it limits nothing), scope when set is nil (no limit yet), else
// their intersection (not nil, empty when they share none).
func narrowIDs(set, scope []int64) []int64 {
	switch {
	case len(scope) == 0:
		return set
	case set == nil:
		return slices.Clone(scope)
	}
	out := []int64{}
	for _, id := range set {
		if slices.Contains(scope, id) {
			out = append(out, id)
		}
	}
	return out
}

// DeadLetterVisible reports whether the principal in ctx may see dead
// letter d (scopedDeadLetters): the dashboard's page of a delivery that is
// a dead letter answers "not found" otherwise.
func DeadLetterVisible(ctx context.Context, d db.DeadLetter) bool {
	return scopeHolds(scopedDeadLetters(ctx, db.DeadLetterFilter{}), d)
}

// scopeHolds reports whether the scope's limit lim (scopedDeadLetters of a
// zero filter) holds d.
func scopeHolds(lim db.DeadLetterFilter, d db.DeadLetter) bool {
	return (lim.MerchantIDs == nil || slices.Contains(lim.MerchantIDs, d.MerchantID)) &&
		(lim.CarrierIDs == nil || slices.Contains(lim.CarrierIDs, d.CarrierID))
}

func (sel DeadLetters) check() error {
	if len(sel.IDs) > MaxDeadLetterIDs {
		return hookrelay.Errorf(hookrelay.EINVALID, "at most %d ids at once", MaxDeadLetterIDs)
	}
	return nil
}

// RetryDeadLetters puts the selected dead letters back into the queue,
// unordered and due now; those of deleted endpoints stay. It returns how
// many went back.
func (s *Service) RetryDeadLetters(ctx context.Context, sel DeadLetters) (n int64, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "dead_letters.retry", TargetType: targetDeadLetters, After: sel.audited(n)}, err)
	}()
	if err := sel.check(); err != nil {
		return 0, err
	}
	sel.Filter = scopedDeadLetters(ctx, sel.Filter)
	return s.db.DeadLetterRetry(ctx, sel.IDs, sel.Filter)
}

// DiscardDeadLetters deletes the selected dead letters and returns how many.
func (s *Service) DiscardDeadLetters(ctx context.Context, sel DeadLetters) (n int64, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "dead_letters.discard", TargetType: targetDeadLetters, After: sel.audited(n)}, err)
	}()
	if err := sel.check(); err != nil {
		return 0, err
	}
	sel.Filter = scopedDeadLetters(ctx, sel.Filter)
	return s.db.DeadLetterDiscard(ctx, sel.IDs, sel.Filter)
}

// DeadLetterReader reads dead letters (*db.DB, or a replica of it).
type DeadLetterReader interface {
	DeadLetterList(ctx context.Context, f db.DeadLetterFilter, page db.DeadLetterPage, limit int) ([]db.DeadLetter, error)
}

// ListDeadLetters returns up to limit dead letters matching f after page,
// in the page's order, that the principal in ctx may see
// (scopedDeadLetters).
func (s *Service) ListDeadLetters(ctx context.Context, f db.DeadLetterFilter, page db.DeadLetterPage, limit int) ([]db.DeadLetter, error) {
	return ListDeadLettersFrom(ctx, s.db, f, page, limit)
}

// ListDeadLettersFrom is ListDeadLetters on r.
func ListDeadLettersFrom(ctx context.Context, r DeadLetterReader, f db.DeadLetterFilter, page db.DeadLetterPage, limit int) ([]db.DeadLetter, error) {
	return r.DeadLetterList(ctx, scopedDeadLetters(ctx, f), page, limit)
}

// CountDeadLetters counts up to limit the dead letters matching f that the
// principal in ctx may see (scopedDeadLetters), as an action on f would
// select them.
func (s *Service) CountDeadLetters(ctx context.Context, f db.DeadLetterFilter, limit int) (int64, error) {
	return s.db.DeadLetterCount(ctx, scopedDeadLetters(ctx, f), limit)
}
