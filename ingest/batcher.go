package ingest

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/internal/tracing"
)

// Defaults of the group-commit settings an operator can change;
// cmd/hookrelay uses them for its environment variables.
const (
	DefaultBatchMaxWait  = 2 * time.Millisecond
	DefaultBatchMaxRows  = 500
	DefaultBatchFlushers = 4
	// DefaultBatchSaturation is the number of callbacks waiting for the
	// group commit at which each carrier is held to its share (about 0.2 s
	// of commits at full rate on the test machine).
	DefaultBatchSaturation = 1000
	// batchFillRows is the rows (messages and deliveries) at which a batch
	// kept open by the latency budget closes before its share has passed:
	// about what a group commit carries at full load, where waiting for
	// more only adds latency.
	batchFillRows = 32
)

// BatcherConfig configures the group-commit batcher. Zero fields get the
// defaults named (WithDefaults).
type BatcherConfig struct {
	// MaxWait is how long a batch stays open after its first message.
	// Default DefaultBatchMaxWait (2ms).
	MaxWait time.Duration
	// LatencyBudget (HOOKRELAY_LATENCY_BUDGET) is the delay a callback may
	// gain so that statements carry more rows at a moderate rate; the group
	// commit takes a quarter of it (commitShare): a batch stays open up to
	// that after its first message, or until it holds batchFillRows rows,
	// instead of MaxWait. At full load batches fill before the share has
	// passed. 0, the default, keeps MaxWait.
	LatencyBudget time.Duration
	// MaxRows closes a batch once its messages plus deliveries reach it.
	// Default DefaultBatchMaxRows (500).
	MaxRows int
	// Flushers is how many batches may be committing at once. Default
	// DefaultBatchFlushers (4).
	Flushers int
	// Queue is how many submitted messages may wait for a batch. Default 8192.
	Queue int
	// Saturation is the number of callbacks waiting for a batch or being
	// committed at which the group commit counts as saturated: from there
	// on each carrier may have only its share of them waiting (Saturation
	// divided among the carriers with callbacks waiting), and a callback
	// beyond it gets 429 with Retry-After (carrierQuota). Default
	// DefaultBatchSaturation (1000).
	Saturation int
	// CommitTimeout bounds a group commit, from its first statement to
	// the answer: past it the batch's callbacks are answered 503 (the
	// client retries them with their idempotency keys). It is what bounds a
	// commit waiting for a synchronous standby that does not answer, which
	// PostgreSQL's statement_timeout does not. Default 30s
	// (db.DefaultStatementTimeout); cmd/hookrelay sets the statement
	// timeout.
	CommitTimeout time.Duration
	// OnStored, when set, is called after a batch committed deliveries, with
	// their number and their logical queues (ascending, no repeats): the
	// process's dispatcher, to claim them at once rather than after its idle
	// pause, and the announcer. It must not block or keep queues.
	OnStored func(deliveries int, queues []int)
	// Tracer makes a span per group commit linked to the spans of the
	// requests it commits (startCommitSpan); package api sets it from its
	// own Config.Tracer. Default the no-op tracer (tracing.OrNoop): no span,
	// no cost.
	Tracer trace.Tracer
}

// WithDefaults returns c with every zero field set to its default.
func (c BatcherConfig) WithDefaults() BatcherConfig {
	c.MaxWait = cmp.Or(c.MaxWait, DefaultBatchMaxWait)
	c.MaxRows = cmp.Or(c.MaxRows, DefaultBatchMaxRows)
	c.Flushers = cmp.Or(c.Flushers, DefaultBatchFlushers)
	c.Queue = cmp.Or(c.Queue, 8192)
	c.Saturation = cmp.Or(c.Saturation, DefaultBatchSaturation)
	c.CommitTimeout = cmp.Or(c.CommitTimeout, db.DefaultStatementTimeout)
	c.Tracer = tracing.OrNoop(c.Tracer)
	return c
}

// batcherTestSignals are points in Run that a test of this package
// drives or observes; nil does nothing, and the product never sets them.
type batcherTestSignals struct {
	// after replaces the timer that closes a batch: it is called with the
	// batch's wait and returns the channel that ends it.
	after func(d time.Duration) <-chan time.Time
	// closed runs when a batch is closed, with its messages and rows.
	closed func(msgs, rows int)
}

// InsertFunc stores one batch in one transaction (db.DB.MessageInsertMany);
// hookrelay.EINVALID says it refused a value of one of the messages.
type InsertFunc func(ctx context.Context, msgs []db.NewMessage) ([]db.StoredMessage, error)

type batchResult struct {
	stored db.StoredMessage
	err    error
	// commit is the span of the group commit that answered; nil unless
	// tracing (a pointer: with tracing off a result stays as small as it was).
	commit *trace.SpanContext
}

type pendingMsg struct {
	msg  db.NewMessage
	done chan batchResult // buffered 1; receives exactly one result
}

// Batcher groups concurrently submitted messages into transactions: the
// group commit.
type Batcher struct {
	cfg     BatcherConfig
	insert  InsertFunc
	in      chan *pendingMsg
	metrics *batcherMetrics
	quota   *carrierQuota
	// tracing is whether cfg.Tracer records spans (tracing.Records): a
	// commit makes no span without it.
	tracing bool

	// test lets this package's tests see inside Run.
	test batcherTestSignals

	mu      sync.RWMutex // guards closed; Submit holds it for reading while sending
	closed  bool
	stopped chan struct{} // closed when run has answered everything
}

// NewBatcher returns a batcher that stores its batches with insert; reg
// receives its metrics (may be nil). Run runs it.
func NewBatcher(cfg BatcherConfig, insert InsertFunc, reg prometheus.Registerer) *Batcher {
	cfg = cfg.WithDefaults()
	b := &Batcher{cfg: cfg, insert: insert, in: make(chan *pendingMsg, cfg.Queue),
		quota: newCarrierQuota(cfg.Saturation), tracing: tracing.Records(cfg.Tracer), stopped: make(chan struct{})}
	b.metrics = newBatcherMetrics(reg, b.quota)
	return b
}

var errShuttingDown = hookrelay.Errorf(hookrelay.EUNAVAILABLE, "shutting down")

// Submit hands msg to the next batch and waits until that batch committed
// (or failed). It never returns success for a message that is not stored.
// Once msg is answered the batcher no longer reads it: the caller may reuse
// msg.Payload's buffer at once (the callback handler returns it to a pool).
// When the group commit is saturated and msg's carrier has its share of the
// callbacks waiting, msg is refused at once (ERATELIMIT, Retry-After).
func (b *Batcher) Submit(ctx context.Context, msg db.NewMessage) (db.StoredMessage, error) {
	if err := b.quota.take(msg.CarrierID); err != nil {
		b.metrics.quotaRefusals.Inc()
		return db.StoredMessage{}, err
	}
	defer b.quota.done(msg.CarrierID)
	p := &pendingMsg{msg: msg, done: make(chan batchResult, 1)}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return db.StoredMessage{}, errShuttingDown
	}
	select {
	case b.in <- p:
	case <-ctx.Done():
		b.mu.RUnlock()
		return db.StoredMessage{}, hookrelay.WrapError(hookrelay.EUNAVAILABLE, "request cancelled", ctx.Err())
	}
	b.mu.RUnlock()
	// Once queued the message will be committed or failed; wait for which,
	// so a client that is still there learns the truth.
	r := <-p.done
	if r.commit != nil {
		// The request's span names the commit that stored it (the commit
		// was started with a link to the request's).
		trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: *r.commit})
	}
	return r.stored, r.err
}

// Run collects batches until ctx ends, then stops taking messages, commits
// what was submitted and returns: every message submitted has been
// answered.
func (b *Batcher) Run(ctx context.Context) {
	batches := make(chan []*pendingMsg)
	var wg sync.WaitGroup
	for range b.cfg.Flushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range batches {
				b.flush(batch)
			}
		}()
	}
	defer func() {
		close(batches)
		wg.Wait()
		close(b.stopped)
	}()

	// closing is closed once no Submit can send any more.
	closing := make(chan struct{})
	go func() {
		<-ctx.Done()
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		close(closing)
	}()

	for {
		var first *pendingMsg
		select {
		case first = <-b.in:
		case <-closing:
			// No sender is left: drain what is queued, then stop.
			for {
				batch := b.drain(nil)
				if len(batch) == 0 {
					return
				}
				batches <- batch
			}
		}
		batch := []*pendingMsg{first}
		rows := 1 + len(first.msg.EndpointIDs)
		wait, fill := b.window()
		expired, stop := b.after(wait)
	collect:
		for rows < fill {
			select {
			case p := <-b.in:
				batch = append(batch, p)
				rows += 1 + len(p.msg.EndpointIDs)
			case <-expired:
				break collect
			case <-closing:
				break collect
			}
		}
		stop()
		if b.test.closed != nil {
			b.test.closed(len(batch), rows)
		}
		if b.commitShare() == 0 {
			batches <- batch
			continue
		}
		// Under a budget the batch keeps taking messages while every
		// flusher is busy (full load), up to MaxRows.
	hand:
		for rows < b.cfg.MaxRows {
			select {
			case batches <- batch:
				batch = nil
				break hand
			case p := <-b.in:
				batch = append(batch, p)
				rows += 1 + len(p.msg.EndpointIDs)
			}
		}
		if batch != nil {
			batches <- batch
		}
	}
}

// commitShare is the group commit's share of the latency budget: a
// quarter (the claim loops take half, so a callback's wait for its commit
// and its claim stays within the budget).
func (b *Batcher) commitShare() time.Duration { return b.cfg.LatencyBudget / 4 }

// window returns how long a batch stays open after its first message and
// the rows that close it sooner.
func (b *Batcher) window() (time.Duration, int) {
	if share := b.commitShare(); share > 0 {
		return max(share, b.cfg.MaxWait), min(batchFillRows, b.cfg.MaxRows)
	}
	return b.cfg.MaxWait, b.cfg.MaxRows
}

// after returns a channel that receives once d has passed, and a function
// that releases it; tests replace it (batcherTestSignals.after).
func (b *Batcher) after(d time.Duration) (<-chan time.Time, func()) {
	if b.test.after != nil {
		return b.test.after(d), func() {}
	}
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// drain takes what is queued without waiting, up to MaxRows.
func (b *Batcher) drain(batch []*pendingMsg) []*pendingMsg {
	rows := 0
	for rows < b.cfg.MaxRows {
		select {
		case p := <-b.in:
			batch = append(batch, p)
			rows += 1 + len(p.msg.EndpointIDs)
		default:
			return batch
		}
	}
	return batch
}

// flush stores one batch (one statement: atomic) and answers each of its
// messages.
func (b *Batcher) flush(batch []*pendingMsg) {
	// The batch belongs to no single request: its requests wait for it even
	// when one of them goes away, and shutdown lets it finish.
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.CommitTimeout)
	defer cancel()
	b.commit(ctx, batch)
}

// commit stores batch in one statement and answers its messages. A
// statement refused for a value of one of its rows (EINVALID) stores
// nothing; the batch is then split in halves, committed one after the other
// (so an idempotency key's first message still comes first), down to the
// message at fault, which alone gets the error: a batch never fails for a
// reason that belongs to one request. Only a refused statement costs more.
func (b *Batcher) commit(ctx context.Context, batch []*pendingMsg) {
	var span trace.Span       // nil unless tracing
	var sc *trace.SpanContext // span's, for the answers
	if b.tracing {
		ctx, span = b.startCommitSpan(ctx, batch)
		defer span.End()
		sc = spanContext(span)
	}
	msgs := make([]db.NewMessage, len(batch))
	for i, p := range batch {
		msgs[i] = p.msg
	}
	start := time.Now()
	stored, err := b.insert(ctx, msgs)
	b.metrics.batchSize.Observe(float64(len(batch)))
	b.metrics.commitSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		if hookrelay.CodeOf(err) == hookrelay.EINVALID {
			if len(batch) > 1 {
				half := len(batch) / 2
				b.commit(ctx, batch[:half])
				b.commit(ctx, batch[half:])
				return
			}
			if span != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			batch[0].done <- batchResult{err: err, commit: sc}
			return
		}
		if hookrelay.CodeOf(err) != hookrelay.EUNAVAILABLE {
			err = hookrelay.WrapError(hookrelay.EUNAVAILABLE, "could not store the callback; retry", err)
		}
		if span != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		for _, p := range batch {
			p.done <- batchResult{err: err, commit: sc}
		}
		return
	}
	if b.cfg.OnStored != nil {
		if n, queues := storedDeliveries(batch, stored); n > 0 {
			b.cfg.OnStored(n, queues) // before the answers: a caller that got one may count on it
		}
	}
	for i, p := range batch {
		if err := stored[i].Err; err != nil {
			p.done <- batchResult{err: err, commit: sc}
			continue
		}
		p.done <- batchResult{stored: stored[i], commit: sc}
	}
}

// storedDeliveries returns how many deliveries a batch committed and their
// logical queues, ascending.
func storedDeliveries(batch []*pendingMsg, stored []db.StoredMessage) (int, []int) {
	n := 0
	var queues []int
	for i, m := range stored {
		if m.Err == nil && !m.Duplicate && m.Deliveries > 0 {
			n += m.Deliveries
			queues = append(queues, batch[i].msg.Queue)
		}
	}
	slices.Sort(queues)
	return n, slices.Compact(queues)
}

// batcherMetrics are the group commit's Prometheus collectors.
type batcherMetrics struct {
	batchSize     prometheus.Histogram
	commitSeconds prometheus.Histogram
	quotaRefusals prometheus.Counter
}

func newBatcherMetrics(reg prometheus.Registerer, quota *carrierQuota) *batcherMetrics {
	m := &batcherMetrics{
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hookrelay_ingest_batch_size", Help: "Callbacks per group-commit transaction.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500},
		}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hookrelay_ingest_commit_seconds", Help: "Duration of a group-commit transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		quotaRefusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookrelay_ingest_carrier_share_refusals_total",
			Help: "Callbacks refused (429) because the group commit was saturated and their carrier had its share waiting (HOOKRELAY_INGEST_SATURATION).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.batchSize, m.commitSeconds, m.quotaRefusals, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hookrelay_ingest_callbacks_waiting",
			Help: "Callbacks waiting for the group commit or being committed (saturated from HOOKRELAY_INGEST_SATURATION).",
		}, func() float64 { return float64(quota.waiting()) }))
	}
	return m
}
