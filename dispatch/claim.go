package dispatch

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// claimLoop claims and starts deliveries of queue q until ctx ends: at once
// again after a full batch, backing off to IdlePoll while the queue is idle.
// Deliveries run under workCtx, which outlives ctx for a graceful drain.
func (d *Dispatcher) claimLoop(ctx, workCtx context.Context, q int) {
	var wait time.Duration
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		n := d.reserve(ctx, d.cfg.BatchSize)
		if n == 0 {
			return
		}
		rows, err := d.claim(ctx, q, n)
		d.unreserve(n - len(rows))
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			d.logger.Warn("claim failed", "queue", q, "error", err)
			wait = time.Second
			continue
		case len(rows) == 0:
			wait = min(max(2*wait, 5*time.Millisecond), d.cfg.IdlePoll)
			continue
		case len(rows) == n:
			wait = 0
		default:
			wait = 5 * time.Millisecond
		}
		d.start(workCtx, rows)
	}
}

// claim runs one claim statement. It is not cancelled half-way by ctx, so
// rows it leased are never lost to a cancelled read (they would come back
// only after the lease).
func (d *Dispatcher) claim(ctx context.Context, q, n int) ([]db.ClaimedDelivery, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	start := time.Now()
	rows, err := d.db.DeliveryClaim(cctx, q, n, d.ID(), newToken(), d.cfg.Lease)
	d.metrics.claimSeconds.Observe(time.Since(start).Seconds())
	if err == nil {
		d.metrics.claimed.Add(float64(len(rows)))
	}
	return rows, err
}

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

// start delivers rows concurrently, each holding one reserved slot.
func (d *Dispatcher) start(workCtx context.Context, rows []db.ClaimedDelivery) {
	now := d.cfg.Now()
	ids := make([]int64, len(rows))
	d.mu.Lock()
	for i, r := range rows {
		ids[i] = r.EndpointID
		d.inflight[r.ID] = inflight{token: r.LeaseToken, claimedAt: now}
	}
	d.mu.Unlock()
	eps, err := d.cache.get(workCtx, ids)
	if err != nil {
		d.logger.Warn("loading endpoints failed; releasing claimed deliveries", "error", err)
	}
	for _, r := range rows {
		d.workers.Add(1)
		d.metrics.inFlight.Inc()
		go func() {
			defer d.workers.Done()
			var item ackItem
			if err != nil {
				item = d.releaseItem(r, d.cfg.StoreRetryDelay)
			} else {
				item = d.deliver(workCtx, r, eps[r.EndpointID])
			}
			d.mu.Lock()
			delete(d.inflight, r.ID)
			d.mu.Unlock()
			d.metrics.inFlight.Dec()
			d.acker.in <- item
			<-d.slots
		}()
	}
}
