package dispatch

import (
	"time"
)

// claimPace decides when a claim loop claims next under a latency budget
// (Config.LatencyBudget): claims follow the rows that become due rather
// than each announcement. After a claim that filled its batch the loop
// claims again at once (a backlog, or full load: no added wait). After one
// that did not, it waits until enough rows were announced to fill half a
// batch, or until the first row announced since has waited the claim's
// share of the budget, or — the claim having found rows, so more may come
// due unannounced (retries, released rows, promoted successors) — until
// the share has passed since the claim; after an empty claim, it backs off
// towards IdlePoll as without a budget. A partial claim while one of the
// dispatcher's endpoints has every slot taken is not paced (claimLoop):
// that endpoint's backlog waits for its slots, not for rows. So at a low
// rate each claim takes
// the rows of one share, and at a high rate the loop claims as soon as half
// a batch is waiting, as often as without a budget.
//
// A claimPace belongs to one claim loop; its methods take the time so
// tests drive it with a clock of their own.
type claimPace struct {
	// share is the claim's share of the budget; 0 turns pacing off.
	share time.Duration
	// enough is the number of rows announced that wakes the loop at once.
	enough int

	// deadline is when the loop claims next if nothing wakes it sooner.
	deadline time.Time
	// announced is when the first row announced since the last claim was,
	// zero if none was.
	announced time.Time
}

// newClaimPace returns the pacing of a loop whose claims take batch rows
// under share (0: no pacing; the loop then does as Config.BusyPoll says).
func newClaimPace(share time.Duration, batch int) *claimPace {
	return &claimPace{share: share, enough: max(batch/2, 1)}
}

// on reports whether pacing is on (a nil pace is off).
func (p *claimPace) on() bool { return p != nil && p.share > 0 }

// claimed records a claim made at now that took rows of the n it could,
// the pause the loop would take without pacing (idle backoff) being
// fallback, and returns the wait before the next claim unless woken.
func (p *claimPace) claimed(now time.Time, rows, n int, fallback time.Duration) time.Duration {
	p.announced = time.Time{}
	switch {
	case rows >= n:
		p.deadline = now
	case rows > 0:
		p.deadline = now.Add(p.share)
	default:
		p.deadline = now.Add(fallback)
	}
	return p.deadline.Sub(now)
}

// woken records rows announced at now (pending: the rows announced since
// the last claim, all told) and returns the wait before the next claim:
// 0 to claim now.
func (p *claimPace) woken(now time.Time, pending int) time.Duration {
	if pending >= p.enough {
		return 0
	}
	if p.announced.IsZero() {
		p.announced = now
	}
	if d := p.announced.Add(p.share); d.Before(p.deadline) {
		p.deadline = d
	}
	return max(p.deadline.Sub(now), 0)
}
