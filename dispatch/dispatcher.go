package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/internal/tracing"
)

// PayloadStore is the part of storage.Store the dispatcher uses.
type PayloadStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Presign(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// Dispatcher is one dispatcher process's delivery engine. Create it with
// New, run it with Run; Ping works without Run.
type Dispatcher struct {
	cfg     Config
	db      *db.DB
	store   PayloadStore
	logger  *slog.Logger
	metrics *metrics
	sender  *httpSender
	// opsEventSender sends operational webhooks, apart from merchant deliveries.
	opsEventSender *httpSender
	cache          *endpointCache
	// tracing is whether cfg.Tracer records spans (tracing.Records): claims
	// and attempts make no span without it.
	tracing bool

	id atomic.Int64 // set by Run once registered

	// slots bounds deliveries in flight (cfg.Concurrency).
	slots chan struct{}
	// pace caps the rows claimed per second (cfg.MaxRate); nil without one.
	pace *pacer
	// workers counts deliveries handed to the delivery workers and not
	// finished yet.
	workers sync.WaitGroup
	// jobs feeds the delivery workers (Run starts Concurrency of them).
	jobs  chan deliveryJob
	acker *acker
	// batches gathers the rows of batch endpoints (batch.go).
	batches batchGroups

	mu       sync.Mutex // mu guards inflight and held
	inflight map[int64]inflight
	held     []int // logical queues held, sorted
	// due has one channel per claim loop: the signal that new rows may be
	// due (Wake, or queues gained), taken by a loop that is idle or paced.
	due []chan struct{}
	// listening reports whether the LISTEN session for other processes'
	// announcements is open (listen).
	listening atomic.Bool
	// pending counts, per claim loop, the rows announced since its last
	// claim (Stored; a hint without a count counts one): what claimPace
	// weighs against half a batch.
	pending []atomic.Int64

	// test lets this package's tests see inside the loops.
	test testSignals
}

// testSignals are points in the dispatcher's loops that a test of this
// package observes. A test sets them before Run; nil does nothing, and the
// product never sets them.
type testSignals struct {
	// claimed runs after each claim of loop part over queues that did not
	// fail, with the number of rows it leased.
	claimed func(part int, queues []int, rows int)
}

// inflight is a leased row being delivered.
type inflight struct {
	token     int64
	claimedAt time.Time
}

// New returns a Dispatcher. reg may be nil (no metrics registered).
func New(logger *slog.Logger, cfg Config, store *db.DB, payloads PayloadStore, reg prometheus.Registerer) *Dispatcher {
	cfg = cfg.WithDefaults()
	var pace *pacer
	if cfg.MaxRate > 0 {
		pace = newPacer(cfg.MaxRate, cfg.BatchSize, cfg.Now)
	}
	m := newMetrics(reg)
	// An endpoint whose parked deliveries (back every HoldDelay) were not
	// seen for three rounds is no longer counted as unreadable.
	cache := newEndpointCache(store, cfg.EndpointCacheTTL, cfg.Now, cfg.Concurrency/4, logger, max(3*cfg.HoldDelay, time.Minute))
	m.newUnreadableGauge(reg, cache.unreadableCount)
	return &Dispatcher{
		pace:           pace,
		cfg:            cfg,
		db:             store,
		store:          payloads,
		logger:         logger,
		metrics:        m,
		sender:         newHTTPSender(cfg.AllowPrivateTargets, cfg.EgressProxy, cfg.RootCAs, cfg.Resolve, cfg.Concurrency, cfg.Now),
		opsEventSender: newHTTPSender(cfg.AllowPrivateTargets, cfg.EgressProxy, cfg.RootCAs, cfg.Resolve, opsEventBatch, cfg.Now),
		cache:          cache,
		slots:          make(chan struct{}, cfg.Concurrency),
		inflight:       map[int64]inflight{},
		due:            dueChannels(cfg.ClaimLoops),
		pending:        make([]atomic.Int64, cfg.ClaimLoops),
		tracing:        tracing.Records(cfg.Tracer),
	}
}

func dueChannels(n int) []chan struct{} {
	due := make([]chan struct{}, n)
	for i := range due {
		due[i] = make(chan struct{}, 1)
	}
	return due
}

// Wake tells the claim loops that new rows may be due: a loop that is idle
// (its last claim found nothing, or it had no queues) claims at once instead
// of at the end of its pause (up to IdlePoll). A loop that is busy is not
// hurried; it takes the signal the next time it goes idle. It never blocks.
// The API calls it when it runs in the same process, the listener (Listen)
// when an API in another process announces stored callbacks, and the
// dispatcher when it gains queues.
func (d *Dispatcher) Wake() {
	for part := range d.due {
		d.pending[part].Add(1)
		d.signal(part)
	}
}

// signal tells claim loop part that rows may be due, without blocking.
func (d *Dispatcher) signal(part int) {
	select {
	case d.due[part] <- struct{}{}:
	default:
	}
}

// WakeQueues is Wake for the claim loops holding any of queues (ascending,
// as in db.Announcement), the only ones that can find their rows; every
// loop when queues is empty (any queue may have rows). A queue this
// dispatcher does not hold wakes nothing: another dispatcher claims it.
func (d *Dispatcher) WakeQueues(queues []int) { d.Stored(1, queues) }

// Stored is WakeQueues for n rows stored into queues (ascending): the API
// of this process calls it after each group commit. Under a latency budget
// a claim loop that is waiting claims at once once half a batch of rows was
// announced to it (claimPace).
func (d *Dispatcher) Stored(n int, queues []int) {
	if len(queues) == 0 {
		d.Wake()
		return
	}
	wake := make([]bool, len(d.due))
	d.mu.Lock()
	for i, q := range d.held {
		if _, found := slices.BinarySearch(queues, q); found {
			wake[i%len(d.due)] = true
		}
	}
	d.mu.Unlock()
	for part, w := range wake {
		if w {
			d.pending[part].Add(int64(n))
			d.signal(part)
		}
	}
}

// Close releases the delivery client's idle connections (Run does it when
// it returns; a Dispatcher used only for Ping needs it).
func (d *Dispatcher) Close() {
	d.sender.closeIdle()
	d.opsEventSender.closeIdle()
}

// ID returns the dispatcher's id in the dispatchers table (0 before Run has
// registered it).
func (d *Dispatcher) ID() int64 { return d.id.Load() }

// Run registers the dispatcher, holds its share of the logical queues and
// delivers until ctx ends; then it stops claiming, lets deliveries in flight
// finish (up to DrainTimeout, then releases them), flushes acknowledgements,
// releases its queue leases and marks itself stopped.
func (d *Dispatcher) Run(ctx context.Context) error {
	id, err := d.db.DispatcherRegister(ctx, d.cfg.Hostname, d.cfg.PID)
	if err != nil {
		return err
	}
	d.id.Store(id)
	if err := d.db.QueueLeasesEnsure(ctx, d.cfg.Queues); err != nil {
		return err
	}
	d.logger.Info("dispatcher started", "dispatcher_id", id, "queues", d.cfg.Queues, "lease", d.cfg.Lease)
	policy := db.HealthPolicy{
		Threshold: d.cfg.CircuitThreshold, BaseBackoff: d.cfg.CircuitBase,
		MaxBackoff: d.cfg.CircuitMax, DisableAfter: d.cfg.DisableAfter,
	}
	d.acker = newAcker(d.db, d.logger, d.metrics, id, policy, max(d.cfg.AckInterval, d.ackShare()), d.cfg.AckBatch, d.cfg.AckFlushers, d.cfg.Now, d.onAckReport)
	if d.claimShare() > 0 {
		d.acker.onDue = d.wakeWhenDue
	}
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		d.acker.run(d.cfg.Lease)
	}()

	workCtx, workCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer workCancel()
	d.jobs = make(chan deliveryJob, d.cfg.Concurrency)
	var pool sync.WaitGroup
	for range d.cfg.Concurrency {
		pool.Go(func() { d.deliveryWorker(d.jobs) })
	}
	var loops sync.WaitGroup
	for i := range d.cfg.ClaimLoops {
		loops.Go(func() { d.claimLoop(ctx, workCtx, i, d.cfg.ClaimLoops) })
	}
	if d.cfg.Listen {
		loops.Go(func() { d.listen(ctx) })
	}
	loops.Go(func() { d.opsEventLoop(ctx) })
	d.manageLeases(ctx)

	// Shutdown: no more claims, then drain or release work in flight.
	loops.Wait()
	// Batches waiting for more rows go now (batch.go).
	d.sendGathered()
	close(d.jobs) // the workers finish what is queued, then return
	drained := make(chan struct{})
	go func() {
		d.workers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(d.cfg.DrainTimeout):
		d.logger.Warn("releasing deliveries still in flight", "count", d.inFlightCount())
		workCancel()
		<-drained
	}
	pool.Wait()
	close(d.acker.in)
	<-ackDone
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var errs []error
	if _, err := d.db.QueueLeasesRelease(bg, id, -1); err != nil {
		errs = append(errs, err)
	}
	if err := d.db.DispatcherStop(bg, id); err != nil {
		errs = append(errs, err)
	}
	d.metrics.queuesHeld.Set(0)
	d.sender.closeIdle()
	d.opsEventSender.closeIdle()
	d.logger.Info("dispatcher stopped", "dispatcher_id", id)
	if len(errs) > 0 {
		return fmt.Errorf("dispatcher shutdown: %v", errs)
	}
	return nil
}

// ackShare is the acknowledgements' share of the latency budget: half of
// it (see claimShare). A result waits for its batch up to it (or
// AckInterval, when longer).
func (d *Dispatcher) ackShare() time.Duration { return d.cfg.LatencyBudget / 2 }

func (d *Dispatcher) onAckReport(rep db.AckReport) {
	if rep.Promoted > 0 && d.claimShare() > 0 {
		// Successors made visible are announced to no one: under a budget
		// a loop that found nothing may be in its longer idle pause.
		d.Wake()
	}
	for _, id := range rep.Disabled {
		d.cache.forget(id)
		d.logger.Warn("endpoint disabled", "endpoint_id", id)
	}
}

// manageLeases heartbeats, rebalances queue leases, publishes the queues
// held to the claim loops and extends the leases of long deliveries, until
// ctx ends.
func (d *Dispatcher) manageLeases(ctx context.Context) {
	tick := time.NewTicker(d.cfg.Lease / 4)
	defer tick.Stop()
	for {
		held, err := d.rebalance(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.logger.Warn("queue lease rebalance failed", "error", err)
		} else {
			d.setHeld(held)
		}
		d.extendInFlight(ctx)
		if n, err := d.db.EndpointHealthOpenCount(ctx); err == nil {
			d.metrics.circuitOpen.Set(float64(n))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// liveWithin is how recent a heartbeat must be for a dispatcher to count as
// live (heartbeats come every Lease/4).
func (d *Dispatcher) liveWithin() time.Duration { return d.cfg.Lease / 2 }

// rebalance heartbeats and adjusts this dispatcher's queue leases to its fair
// share, ceil(queues / live dispatchers), returning the queues held.
func (d *Dispatcher) rebalance(ctx context.Context) (map[int]bool, error) {
	id := d.ID()
	live, _, err := d.db.DispatcherHeartbeat(ctx, id, d.liveWithin())
	if err != nil {
		return nil, err
	}
	held, err := d.db.QueueLeasesRenew(ctx, id, d.cfg.Queues, d.cfg.Lease)
	if err != nil {
		return nil, err
	}
	target := (d.cfg.Queues + live - 1) / max(live, 1)
	switch {
	case len(held) > target:
		if _, err := d.db.QueueLeasesRelease(ctx, id, len(held)-target); err != nil {
			return nil, err
		}
		if held, err = d.db.QueueLeasesRenew(ctx, id, d.cfg.Queues, d.cfg.Lease); err != nil {
			return nil, err
		}
	case len(held) < target:
		got, err := d.db.QueueLeasesAcquire(ctx, db.QueueLeaseParams{Owner: id, Queues: d.cfg.Queues, N: target - len(held),
			Lease: d.cfg.Lease, LiveWithin: d.liveWithin()})
		if err != nil {
			return nil, err
		}
		held = append(held, got...)
	}
	out := make(map[int]bool, len(held))
	for _, l := range held {
		out[l.Queue] = true
	}
	return out, nil
}

// setHeld publishes the queues held to the claim loops.
func (d *Dispatcher) setHeld(held map[int]bool) {
	qs := make([]int, 0, len(held))
	for q := range held {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	d.mu.Lock()
	gained := len(qs) > len(d.held)
	d.held = qs
	d.mu.Unlock()
	d.metrics.queuesHeld.Set(float64(len(qs)))
	if gained {
		d.Wake()
	}
}

// heldQueues returns the held queues of claim loop part of loops.
func (d *Dispatcher) heldQueues(part, loops int) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int
	for i, q := range d.held {
		if i%loops == part {
			out = append(out, q)
		}
	}
	return out
}

// extendInFlight pushes out the lease of deliveries in flight for longer
// than a quarter of the lease.
func (d *Dispatcher) extendInFlight(ctx context.Context) {
	cutoff := d.cfg.Now().Add(-d.cfg.Lease / 4)
	var ids, tokens []int64
	d.mu.Lock()
	for id, f := range d.inflight {
		if f.claimedAt.Before(cutoff) {
			ids, tokens = append(ids, id), append(tokens, f.token)
		}
	}
	d.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if _, err := d.db.DeliveryExtend(ctx, ids, tokens, d.cfg.Lease); err != nil && ctx.Err() == nil {
		d.logger.Warn("extending delivery leases failed", "error", err)
	}
}

func (d *Dispatcher) inFlightCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.inflight)
}

// newToken returns a random lease token.
func newToken() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}
