package dispatch

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// ackItem is a result waiting to be acknowledged.
type ackItem struct {
	res db.DeliveryResult
	// circuitNeutral reports whether the result neither counts as a failure
	// nor as a success for the circuit (released, held, payload store down).
	circuitNeutral bool
	gone           bool
	// queue is the row's logical queue, for the wake-up when a retry or a
	// release is due again (acker.onDue).
	queue int
}

// acker batches results into one transaction per ~interval or maxBatch
// results (db.DeliveryAckBatch). A failed batch is retried until it succeeds
// or the acker stops; rows of a batch that is never acknowledged come back
// when their lease runs out (at least once). What it holds unacknowledged —
// in (4 batches), the batch being gathered, a batch waiting for each
// flusher and the one each is writing — bounds, with the delivery slots,
// what a fault can deliver twice (docs/guarantees.md).
type acker struct {
	db           *db.DB
	logger       *slog.Logger
	metrics      *metrics
	dispatcherID int64
	policy       db.HealthPolicy
	interval     time.Duration
	maxBatch     int
	now          func() time.Time
	onReport     func(db.AckReport)
	// onDue, when set, is told after each batch committed which of its
	// rows come back (retries, releases) within a minute, and when.
	onDue func([]dueRow)

	flushers int

	in chan ackItem
	// lastHealth is when an endpoint's health row was last written for a
	// success-only batch (owned by the run goroutine).
	lastHealth map[int64]time.Time
	mu         sync.Mutex // mu guards cleanHealthy and carried
	// cleanHealthy reports whether the endpoint is known closed with no
	// failures.
	cleanHealthy map[int64]bool
	// carried holds endpoint outcomes a batch could not apply (another
	// session held the health row); the next batch folds them in first.
	carried map[int64]db.EndpointOutcome
}

// ackBatch is one transaction's worth of results.
type ackBatch struct {
	results  []db.DeliveryResult
	outcomes []db.EndpointOutcome
	due      []dueRow // for onDue
}

// dueRow is a row given back to its queue that is due again after delay
// from its acknowledgement's commit.
type dueRow struct {
	queue int
	delay time.Duration
}

// maxDueWake is the longest wait of a row given back that onDue hears of:
// past it the claim loops' idle poll is soon enough.
const maxDueWake = time.Minute

func newAcker(store *db.DB, logger *slog.Logger, m *metrics, dispatcherID int64, policy db.HealthPolicy,
	interval time.Duration, maxBatch, flushers int, now func() time.Time, onReport func(db.AckReport)) *acker {
	return &acker{
		db: store, logger: logger, metrics: m, dispatcherID: dispatcherID, policy: policy,
		interval: interval, maxBatch: maxBatch, flushers: max(flushers, 1), now: now, onReport: onReport,
		in: make(chan ackItem, maxBatch*4), lastHealth: map[int64]time.Time{}, cleanHealthy: map[int64]bool{},
		carried: map[int64]db.EndpointOutcome{},
	}
}

// run acknowledges until in is closed, then flushes what is left (each
// batch retried for up to giveUp) and returns. Batches are written by
// several flushers at once.
func (a *acker) run(giveUp time.Duration) {
	batches := make(chan ackBatch, a.flushers)
	var wg sync.WaitGroup
	for range a.flushers {
		wg.Go(func() {
			for b := range batches {
				a.flush(b, giveUp)
			}
		})
	}
	defer wg.Wait()
	defer close(batches)
	var batch []ackItem
	send := func() {
		b := ackBatch{results: make([]db.DeliveryResult, len(batch)), outcomes: a.outcomes(batch)}
		for i, it := range batch {
			b.results[i] = it.res
			if a.onDue != nil && (it.res.Kind == db.AckRetry || it.res.Kind == db.AckRelease) && it.res.Delay <= maxDueWake {
				b.due = append(b.due, dueRow{queue: it.queue, delay: it.res.Delay})
			}
		}
		batches <- b
		batch = batch[:0]
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var item ackItem
		var ok bool
		if len(batch) == 0 {
			item, ok = <-a.in
		} else {
			select {
			case item, ok = <-a.in:
			case <-timer.C:
				send()
				continue
			}
		}
		if !ok {
			if len(batch) > 0 {
				send()
			}
			return
		}
		if len(batch) == 0 {
			timer.Reset(a.interval)
		}
		batch = append(batch, item)
		if len(batch) >= a.maxBatch {
			timer.Stop()
			send()
		}
	}
}

// flush writes one batch, retrying with back-off for up to giveUp.
func (a *acker) flush(b ackBatch, giveUp time.Duration) {
	deadline := time.Now().Add(giveUp)
	wait := 50 * time.Millisecond
	b.outcomes = a.takeCarried(b.outcomes)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rep, err := a.db.DeliveryAckBatch(ctx, a.dispatcherID, b.results, b.outcomes, a.policy)
		cancel()
		if err == nil {
			a.metrics.ackBatchSize.Observe(float64(len(b.results)))
			a.mu.Lock()
			for _, id := range rep.Opened {
				a.cleanHealthy[id] = false
			}
			for _, id := range rep.Closed {
				a.cleanHealthy[id] = true
			}
			for _, o := range rep.HealthSkipped {
				a.carried[o.EndpointID] = mergeOutcomes(a.carried[o.EndpointID], o)
			}
			a.mu.Unlock()
			if a.onReport != nil {
				a.onReport(rep)
			}
			if a.onDue != nil && len(b.due) > 0 {
				a.onDue(b.due)
			}
			if rep.Stale > 0 {
				a.logger.Warn("stale delivery results ignored (leases had run out)", "count", rep.Stale)
			}
			return
		}
		if time.Now().After(deadline) {
			a.logger.Error("ack batch dropped; its rows will be redelivered after their lease",
				"results", len(b.results), "error", err)
			return
		}
		a.logger.Warn("ack batch failed; retrying", "results", len(b.results), "error", err)
		time.Sleep(wait)
		wait = min(wait*2, 2*time.Second)
	}
}

// outcomes folds a batch per endpoint in result order. Endpoints with only
// successes whose circuit is known closed are written at most once a second.
func (a *acker) outcomes(batch []ackItem) []db.EndpointOutcome {
	idx := map[int64]int{}
	var out []db.EndpointOutcome
	for _, it := range batch {
		if it.circuitNeutral && !it.gone {
			continue
		}
		id := it.res.EndpointID
		i, ok := idx[id]
		if !ok {
			i = len(out)
			idx[id] = i
			out = append(out, db.EndpointOutcome{EndpointID: id})
		}
		o := &out[i]
		switch {
		case it.gone:
			o.Gone = true
		case it.res.Kind == db.AckSuccess:
			o.Successes++
			o.Trailing = 0
		default:
			o.Failures++
			o.Trailing++
			o.LastError = it.res.Error
		}
	}
	now := a.now()
	kept := out[:0]
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range out {
		if o.Failures == 0 && !o.Gone && a.cleanHealthy[o.EndpointID] && now.Sub(a.lastHealth[o.EndpointID]) < time.Second {
			continue
		}
		if o.Failures == 0 && !o.Gone {
			a.lastHealth[o.EndpointID] = now
		}
		kept = append(kept, o)
	}
	// A fixed order keeps concurrent flushers from deadlocking on health rows.
	slices.SortFunc(kept, func(x, y db.EndpointOutcome) int { return cmp.Compare(x.EndpointID, y.EndpointID) })
	return kept
}

// takeCarried returns outcomes with the carried-over ones folded in before
// them, and forgets the carried ones (a failed apply carries them again).
func (a *acker) takeCarried(outcomes []db.EndpointOutcome) []db.EndpointOutcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.carried) == 0 {
		return outcomes
	}
	merged := make([]db.EndpointOutcome, 0, len(outcomes)+len(a.carried))
	for _, o := range outcomes {
		if prev, ok := a.carried[o.EndpointID]; ok {
			o = mergeOutcomes(prev, o)
			delete(a.carried, o.EndpointID)
		}
		merged = append(merged, o)
	}
	for id, prev := range a.carried {
		merged = append(merged, prev)
		delete(a.carried, id)
	}
	return merged
}

// mergeOutcomes folds next into prev, prev having happened first (a zero
// prev is nothing).
func mergeOutcomes(prev, next db.EndpointOutcome) db.EndpointOutcome {
	if prev.EndpointID == 0 {
		return next
	}
	m := db.EndpointOutcome{
		EndpointID: next.EndpointID,
		Successes:  prev.Successes + next.Successes,
		Failures:   prev.Failures + next.Failures,
		Gone:       prev.Gone || next.Gone,
		LastError:  cmp.Or(next.LastError, prev.LastError),
	}
	if next.Successes > 0 {
		m.Trailing = next.Trailing
	} else {
		m.Trailing = prev.Trailing + next.Failures
	}
	return m
}
