package ops

import (
	"context"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// MaxDeadLetterIDs bounds how many dead letters one action names by id.
const MaxDeadLetterIDs = 10000

// DeadLetters selects dead letters: by IDs when IDs is not nil (an empty
// list selects none), else every one matching Filter (a zero Filter selects
// them all). Dead letters are the operator's: no merchant acts on them.
type DeadLetters struct {
	IDs    []int64
	Filter db.DeadLetterFilter
}

// audited is the selection and the count of an action on it, as the audit
// log keeps them.
func (sel DeadLetters) audited(n int64) map[string]any {
	m := map[string]any{"count": n}
	if sel.IDs != nil {
		m["ids"] = sel.IDs
	} else {
		m["filter"] = sel.Filter
	}
	return m
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
	return s.db.DeadLetterDiscard(ctx, sel.IDs, sel.Filter)
}

// ListDeadLetters returns up to limit dead letters matching f after page,
// newest first.
func (s *Service) ListDeadLetters(ctx context.Context, f db.DeadLetterFilter, page db.DeadLetterPage, limit int) ([]db.DeadLetter, error) {
	return s.db.DeadLetterList(ctx, f, page, limit)
}
