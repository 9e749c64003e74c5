package dispatch

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/db"
)

// claimLoop claims and starts deliveries of the queues this dispatcher
// holds (its share: index % loops == part) until ctx ends, one statement
// across all of them: at once again after a full batch, after BusyPoll after
// a partial one, backing off to IdlePoll while there is nothing due — or
// until Wake says new rows may be. Under a latency budget the pause after a
// claim that was not full is claimPace's instead.
// Deliveries run under workCtx, which outlives ctx for a graceful drain.
func (d *Dispatcher) claimLoop(ctx, workCtx context.Context, part, loops int) {
	var wait time.Duration
	idle := false // the last claim found nothing, or there was nothing to claim from
	rotate := 0
	cursors := newClaimCursors()
	pace := newClaimPace(d.claimShare(), d.cfg.BatchSize)
	paced := pace // nil while a pause is not paced
	filled := d.cache.full.filled.Load()
	for {
		if wait > 0 && !d.pause(ctx, part, wait, idle, paced) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		queues := d.heldQueues(part, loops)
		if len(queues) == 0 {
			wait, idle = d.cfg.IdlePoll, true // woken when queues are gained
			continue
		}
		n := d.reserve(ctx, d.cfg.BatchSize)
		if n == 0 {
			return
		}
		if d.pace != nil && !d.pace.take(ctx, n) {
			d.unreserve(n)
			return
		}
		rotate++
		k := rotate % len(queues)
		queues = slices.Concat(queues[k:], queues[:k])
		// Rows announced from here on are for the next claim (this one
		// may or may not see them).
		d.pending[part].Store(0)
		rows, claimSpan, err := d.claim(ctx, queues, cursors.of(queues), n)
		// Did an endpoint reach its max_in_flight since the last claim?
		saturated := d.cache.full.filled.Load() != filled
		filled = d.cache.full.filled.Load()
		if d.test.claimed != nil && err == nil {
			d.test.claimed(part, queues, len(rows))
		}
		d.unreserve(n - len(rows))
		if d.pace != nil {
			d.pace.giveBack(n - len(rows))
		}
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			d.logger.Warn("claim failed", "queues", len(queues), "error", err)
			wait, idle = time.Second, false
			continue
		case len(rows) == 0:
			cursors.advance(queues, nil, false)
			wait = min(max(2*wait, d.cfg.BusyPoll), d.idlePoll())
			paced = nil
			if pace.on() {
				wait, paced = pace.claimed(d.cfg.Now(), 0, n, wait), pace
			}
			idle = true
			continue
		case len(rows) == n:
			wait = 0
		default:
			wait = d.cfg.BusyPoll
		}
		// With an endpoint that reached its max_in_flight since the last
		// claim, the claim was partial for want of its slots, not of due
		// rows: its backlog waits for them, as without a budget, not for
		// the budget.
		paced = nil
		if pace.on() && !saturated {
			wait, paced = pace.claimed(d.cfg.Now(), len(rows), n, wait), pace
		}
		cursors.advance(queues, rows, len(rows) == n)
		idle = false
		d.start(workCtx, rows, claimSpan)
	}
}

// pause waits wait before claim loop part's next claim, or less: unpaced
// (pace nil or off) a loop that is idle claims as soon as it is told rows
// may be due; paced, a loop hears of announced rows and claims when pace
// says. It reports false when ctx ended.
func (d *Dispatcher) pause(ctx context.Context, part int, wait time.Duration, idle bool, pace *claimPace) bool {
	var due chan struct{} // nil (never ready) unless listened to
	if idle || pace.on() {
		due = d.due[part]
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-due:
			d.metrics.wakeups.Inc()
			if !pace.on() {
				return true
			}
			w := pace.woken(d.cfg.Now(), int(d.pending[part].Load()))
			if w <= 0 {
				return true
			}
			t.Reset(w)
		case <-t.C:
			return true
		}
	}
}

// quietPolls is how many IdlePolls a paced claim loop that hears of stored
// rows (its dispatcher's LISTEN session is open) backs off to while nothing
// is due: each claim of nothing
// costs PostgreSQL a statement and a commit, and what becomes due without an
// announcement wakes the loops itself (wakeWhenDue, onAckReport). Held rows,
// open circuits and the leases of a dispatcher that died are found within
// it.
const quietPolls = 5

// idlePoll is the longest pause of a claim loop that found nothing.
func (d *Dispatcher) idlePoll() time.Duration {
	if d.claimShare() > 0 && d.listening.Load() {
		return quietPolls * d.cfg.IdlePoll
	}
	return d.cfg.IdlePoll
}

// wakeWhenDue wakes, under a latency budget (acker.onDue), the claim
// loops of the rows an acknowledgement gave back once each is due again: a
// loop that found nothing would otherwise find them only at its next idle
// poll. The acknowledgement has committed: a row is due delay from now at
// the latest.
func (d *Dispatcher) wakeWhenDue(rows []dueRow) {
	for _, r := range rows {
		q := []int{r.queue}
		time.AfterFunc(r.delay, func() { d.WakeQueues(q) })
	}
}

// claimShare is the claim loops' share of the latency budget: half of it
// (the group commit has a quarter, the acknowledgements half; a callback
// waits for the commit and a claim, the successor of an ordered key for its
// predecessor's acknowledgement and a claim).
func (d *Dispatcher) claimShare() time.Duration { return d.cfg.LatencyBudget / 2 }

// claim runs one claim statement over queues, each queue's endpoints served
// from the one after its cursor in after. It is not cancelled half-way
// by ctx, so rows it leased are never lost to a cancelled read (they would
// come back only after the lease). With a tracer that records
// (tracing.Records), a claim that leased rows or failed is recorded as a
// span once it is over (claimSpan), whose context it returns; zero
// otherwise.
func (d *Dispatcher) claim(ctx context.Context, queues []int, after []int64, n int) ([]db.ClaimedDelivery, trace.SpanContext, error) {
	if ctx.Err() != nil {
		return nil, trace.SpanContext{}, ctx.Err()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	start := time.Now()
	rows, err := d.claimRows(cctx, queues, after, n)
	if !d.tracing || len(rows) == 0 && err == nil {
		return rows, trace.SpanContext{}, err
	}
	return rows, d.claimSpan(cctx, start, len(queues), n, len(rows), err), err
}

// claimRows runs the claim statement and records its metrics.
func (d *Dispatcher) claimRows(cctx context.Context, queues []int, after []int64, n int) ([]db.ClaimedDelivery, error) {
	// Each queue may give several rows, but at least four queues share a
	// batch so one busy queue cannot starve the others (the order rotates).
	perQueue := max(1, min(n, (4*n+len(queues)-1)/len(queues), (n+3)/4))
	if len(queues) < 4 {
		perQueue = n
	}
	rows, timing, err := d.db.DeliveryClaim(cctx, db.ClaimParams{Queues: queues, After: after, Skip: d.cache.full.list(maxSkipped),
		PerQueue: perQueue, Batch: n, Owner: d.ID(), Token: newToken(), Lease: d.cfg.Lease})
	d.metrics.claimWaitSeconds.Observe(timing.Wait.Seconds())
	if timing.Exec > 0 {
		d.metrics.claimSeconds.Observe(timing.Exec.Seconds())
	}
	if timing.Server > 0 {
		d.metrics.claimServer.Observe(timing.Server.Seconds())
	}
	if err == nil {
		d.metrics.claimed.Add(float64(len(rows)))
	}
	return rows, err
}

// maxSkipped bounds the endpoints at their max_in_flight a claim is asked to
// pass over (a parameter of the statement; the rest step aside as before).
const maxSkipped = 1000

// reserve takes between 1 and n delivery slots, waiting for the first; it
// returns 0 when ctx ends first.
func (d *Dispatcher) reserve(ctx context.Context, n int) int {
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	got := 1
	for got < n {
		select {
		case d.slots <- struct{}{}:
			got++
		default:
			return got
		}
	}
	return got
}

func (d *Dispatcher) unreserve(n int) {
	for range n {
		<-d.slots
	}
}

// start hands rows to the delivery workers, each holding one reserved slot.
func (d *Dispatcher) start(workCtx context.Context, rows []db.ClaimedDelivery, claimSpan trace.SpanContext) {
	now := d.cfg.Now()
	ids := make([]int64, len(rows))
	d.mu.Lock()
	for i, r := range rows {
		ids[i] = r.EndpointID
		d.inflight[r.ID] = inflight{token: r.LeaseToken, claimedAt: now}
	}
	d.mu.Unlock()
	// Every row of a claim carries the version its statement saw.
	eps, err := d.cache.get(workCtx, ids, rows[0].ConfigVersion)
	if err != nil {
		d.logger.Warn("loading endpoints failed; releasing claimed deliveries", "error", err)
	}
	var batch []batchRow // rows of batch endpoints (batch.go)
	for _, r := range rows {
		d.workers.Add(1)
		d.metrics.inFlight.Inc()
		ep := eps[r.EndpointID]
		if err == nil && batched(ep) {
			batch = append(batch, batchRow{row: r, ep: ep})
			continue
		}
		// Never blocks for long: the channel holds Concurrency jobs and
		// every job holds one of Concurrency slots.
		d.jobs <- deliveryJob{ctx: workCtx, row: r, ep: ep, err: err, claim: claimSpan,
			park: err == nil && ep == nil && d.cache.parked(r.EndpointID)}
	}
	if len(batch) > 0 {
		d.gather(workCtx, batch)
	}
}

// deliveryJob is one leased row for a delivery worker.
type deliveryJob struct {
	ctx context.Context
	row db.ClaimedDelivery
	ep  *endpointState
	// err is set when the endpoint could not be loaded: the row is released.
	err error
	// park is set when the endpoint's secrets cannot be opened: the row is
	// released for HoldDelay without an attempt.
	park bool
	// claim is the span of the claim that leased the row (tracing on).
	claim trace.SpanContext
}

// deliveryWorker delivers jobs until jobs is closed. The workers live as
// long as Run: a goroutine per delivery grew its stack on every HTTP send
// (runtime.copystack was 8 % of the dispatch process at 5,500 deliveries/s).
func (d *Dispatcher) deliveryWorker(jobs <-chan deliveryJob) {
	for j := range jobs {
		var item ackItem
		switch {
		case j.err != nil:
			item = d.releaseItem(j.row, d.cfg.StoreRetryDelay)
		case j.park:
			d.metrics.deliveries.WithLabelValues("unreadable").Inc()
			item = d.releaseItem(j.row, d.cfg.HoldDelay)
		default:
			item = d.deliver(j.ctx, j.row, j.ep, j.claim)
		}
		d.mu.Lock()
		delete(d.inflight, j.row.ID)
		d.mu.Unlock()
		d.metrics.inFlight.Dec()
		item.queue = j.row.Queue
		d.acker.in <- item
		<-d.slots
		d.workers.Done()
	}
}
