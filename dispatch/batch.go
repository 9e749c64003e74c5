package dispatch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// Batched push: an endpoint with a batch setting (db.EndpointBatch) is sent
// its deliveries as JSON arrays, one signed POST per batch.
//
// A batch is gathered in this process from the rows the claims lease for
// the endpoint: the first row starts a batch, which is sent when it holds
// MaxEvents rows or MaxWait after its first row was added, whichever comes
// first (with MaxWait 0, at the end of the claim that started it), its rows
// in delivery id order (the order the callbacks were stored). Rows waiting in a batch are leased, in flight and hold their
// delivery slots like any other; their leases are extended as any delivery
// in flight. The batch takes one of the endpoint's max_in_flight slots and
// one token of its rate limit, as one request.
//
// Order: a key's next row is not claimable before the row before it is
// acknowledged (the claim parks it), so a batch holds at most one row of an
// ordered chain, and a key's events go out batch after batch in order. The
// result of the request applies to every row of the batch: all succeed, or
// all spend the attempt and wait the same delay (one retry delay, drawn for
// the batch), so they become due together and are claimed again together.
// Only the first row of a failed batch counts against the circuit: a batch
// is one failure, as one request.

// batchGroups is the dispatcher's batches being gathered, by endpoint.
type batchGroups struct {
	mu      sync.Mutex
	pending map[int64]*pendingBatch
}

// pendingBatch is the rows gathered for one endpoint's next batch.
type pendingBatch struct {
	ctx  context.Context
	ep   *endpointState
	rows []db.ClaimedDelivery
	// timer sends the batch MaxWait after its first row; nil with MaxWait 0.
	timer *time.Timer
}

// batchRow is a claimed row of a batch endpoint, with its endpoint.
type batchRow struct {
	row db.ClaimedDelivery
	ep  *endpointState
}

// batched reports whether ep sends its deliveries in batches.
func batched(ep *endpointState) bool { return ep != nil && ep.cfg.Batch.MaxEvents > 0 }

// gather adds rows of one claim (each holding a delivery slot and counted
// in d.workers) to their endpoints' batches, sending every batch that
// fills, and those without a MaxWait once the claim's rows are in.
func (d *Dispatcher) gather(ctx context.Context, rows []batchRow) {
	var send []*pendingBatch
	var now []int64
	g := &d.batches
	g.mu.Lock()
	if g.pending == nil {
		g.pending = map[int64]*pendingBatch{}
	}
	for _, br := range rows {
		id := br.row.EndpointID
		p := g.pending[id]
		if p == nil {
			p = &pendingBatch{ctx: ctx, ep: br.ep}
			g.pending[id] = p
			if wait := br.ep.cfg.Batch.MaxWait; wait > 0 {
				p.timer = time.AfterFunc(wait, func() { d.sendPending(id, p) })
			} else {
				now = append(now, id)
			}
		}
		p.ep = br.ep // the newest configuration seen
		p.rows = append(p.rows, br.row)
		if len(p.rows) >= p.ep.cfg.Batch.MaxEvents {
			delete(g.pending, id)
			if p.timer != nil {
				p.timer.Stop()
			}
			send = append(send, p)
		}
	}
	for _, id := range now {
		if p := g.pending[id]; p != nil && p.timer == nil {
			delete(g.pending, id)
			send = append(send, p)
		}
	}
	g.mu.Unlock()
	for _, p := range send {
		go d.sendBatch(p)
	}
}

// sendPending sends p when its MaxWait is over, unless it was sent full.
func (d *Dispatcher) sendPending(id int64, p *pendingBatch) {
	g := &d.batches
	g.mu.Lock()
	mine := g.pending[id] == p
	if mine {
		delete(g.pending, id)
	}
	g.mu.Unlock()
	if mine {
		d.sendBatch(p)
	}
}

// sendGathered sends every batch being gathered at once, without waiting
// for its MaxWait: the claims are over (shutdown).
func (d *Dispatcher) sendGathered() {
	g := &d.batches
	g.mu.Lock()
	ps := make([]*pendingBatch, 0, len(g.pending))
	for id, p := range g.pending {
		if p.timer != nil {
			p.timer.Stop()
		}
		delete(g.pending, id)
		ps = append(ps, p)
	}
	g.mu.Unlock()
	for _, p := range ps {
		go d.sendBatch(p)
	}
}

// sendBatch makes one attempt of the batch p and hands every row's result
// to the acker, giving back the rows' delivery slots.
func (d *Dispatcher) sendBatch(p *pendingBatch) {
	// In the order the callbacks were stored, whichever claim leased them.
	slices.SortFunc(p.rows, func(a, b db.ClaimedDelivery) int { return cmp.Compare(a.ID, b.ID) })
	items := d.deliverBatch(p.ctx, p.rows, p.ep)
	for i, r := range p.rows {
		d.mu.Lock()
		delete(d.inflight, r.ID)
		d.mu.Unlock()
		d.metrics.inFlight.Dec()
		d.acker.in <- items[i]
		<-d.slots
		d.workers.Done()
	}
}

// releaseAll gives every row back without an attempt, visible after delay.
func (d *Dispatcher) releaseAll(rows []db.ClaimedDelivery, delay time.Duration) []ackItem {
	items := make([]ackItem, len(rows))
	for i, r := range rows {
		items[i] = d.releaseItem(r, delay)
	}
	return items
}

// deliverBatch is deliver for a batch: the endpoint's slot and rate limit
// (one request), a reload of a configuration changed since the claim, then
// the attempt.
func (d *Dispatcher) deliverBatch(ctx context.Context, rows []db.ClaimedDelivery, ep *endpointState) []ackItem {
	ok, wait, err := ep.acquire(ctx, d.cfg.EndpointWait, d.cfg.SaturatedDelay)
	if err != nil {
		return d.releaseAll(rows, 0)
	}
	if !ok {
		d.metrics.deliveries.WithLabelValues("deferred").Add(float64(len(rows)))
		return d.releaseAll(rows, wait)
	}
	defer ep.release()
	cfg := ep.cfg
	if !d.cache.current(ep) {
		eps, err := d.cache.get(ctx, []int64{ep.cfg.ID}, 0)
		if err != nil {
			return d.releaseAll(rows, d.cfg.StoreRetryDelay)
		}
		cur := eps[ep.cfg.ID]
		if cur == nil || cur.cfg.Status != "enabled" {
			d.metrics.deliveries.WithLabelValues("held").Add(float64(len(rows)))
			return d.releaseAll(rows, d.cfg.HoldDelay)
		}
		cfg = cur.cfg
	}
	return d.attemptBatch(ctx, rows, cfg)
}

// batchEvent is one event of a batch body, before its body: the id, type,
// time, key and attempt a single push carries in its headers.
type batchEvent struct {
	ID          string    `json:"id"`
	DeliveryID  string    `json:"delivery_id"`
	EventType   string    `json:"event_type"`
	Carrier     string    `json:"carrier"`
	OrderingKey string    `json:"ordering_key"`
	Timestamp   time.Time `json:"timestamp"`
	Attempt     int       `json:"attempt"`
}

// batchID is the webhook-id of a batch: its first delivery and its size,
// the same when the same rows are sent again.
func batchID(first int64, n int) string {
	return "batch_" + strconv.FormatInt(first, 10) + "_" + strconv.Itoa(n)
}

// attemptBatch sends rows to the endpoint cfg as one request and returns
// each row's result. Rows that can never be sent (message gone, values that
// cannot be sent) become dead letters at once, as single deliveries do,
// and rows whose payload cannot be read wait for the store; the others go
// in one JSON array, in order.
func (d *Dispatcher) attemptBatch(ctx context.Context, rows []db.ClaimedDelivery, cfg db.EndpointConfig) []ackItem {
	attemptedAt := d.cfg.Now()
	items := make([]ackItem, len(rows))
	sent := make([]int, 0, len(rows))
	var body bytes.Buffer
	body.WriteByte('[')
	for i, r := range rows {
		res := db.ResultFor(r)
		res.AttemptedAt = attemptedAt
		why := ""
		if !r.MessageFound {
			why = "message not found"
		} else {
			why = unsendable(r)
		}
		if why != "" {
			res.Kind, res.Outcome, res.Error = db.AckDead, OutcomeFailed, why
			d.metrics.deliveries.WithLabelValues("dead").Inc()
			items[i] = ackItem{res: res, circuitNeutral: true}
			continue
		}
		payload, err := d.payload(ctx, r, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return d.releaseAll(rows, 0)
			}
			d.metrics.deliveries.WithLabelValues(OutcomeFailed).Inc()
			res.Kind, res.Delay, res.Outcome = db.AckRetry, d.cfg.StoreRetryDelay, OutcomeFailed
			res.Error = "payload store: " + err.Error()
			items[i] = ackItem{res: res, circuitNeutral: true}
			continue
		}
		meta, err := json.Marshal(batchEvent{ID: webhookID(r.MessageID), DeliveryID: strconv.FormatInt(r.ID, 10),
			EventType: eventTypeFor(r, cfg), Carrier: r.CarrierName, OrderingKey: r.OrderingKey,
			Timestamp: r.MessageReceivedAt.UTC(), Attempt: r.Attempt + 1})
		if err != nil {
			res.Kind, res.Outcome, res.Error = db.AckDead, OutcomeFailed, "request cannot be built: "+err.Error()
			items[i] = ackItem{res: res, circuitNeutral: true}
			continue
		}
		if len(sent) > 0 {
			body.WriteByte(',')
		}
		// The payload is the callback's JSON (ingest takes nothing else
		// without an adapter), or the canonical event, written byte for
		// byte. A body that is not JSON (taken for a carrier's adapter, and
		// stored for canonical endpoints, sent raw to an endpoint that was
		// canonical when it was stored) goes as a JSON string.
		if r.CanonicalEvent != nil && !canonical(r, cfg) && !json.Valid(payload) {
			payload, _ = json.Marshal(string(payload))
		}
		body.Write(meta[:len(meta)-1])
		body.WriteString(`,"body":`)
		body.Write(payload)
		body.WriteByte('}')
		items[i] = ackItem{res: res}
		sent = append(sent, i)
	}
	body.WriteByte(']')
	if len(sent) == 0 {
		return items
	}

	first := rows[sent[0]]
	id := batchID(first.ID, len(sent))
	h := d.headers(id, attemptedAt, body.Bytes(), cfg)
	h.Set("X-Hookrelay-Batch-Size", strconv.Itoa(len(sent)))
	resp := d.sender.Send(ctx, request{URL: cfg.URL, Body: body.Bytes(), Header: h, Timeout: timeoutOf(cfg)})
	if resp.Outcome != OutcomeSuccess && ctx.Err() != nil {
		return d.releaseAll(rows, 0)
	}
	d.metrics.deliveries.WithLabelValues(resp.Outcome).Add(float64(len(sent)))
	d.metrics.deliveryLatency.Observe(resp.Latency.Seconds())

	// One delay for the batch, from its furthest row's attempt, so that
	// its rows come back together.
	var delay time.Duration
	if resp.Outcome != OutcomeSuccess && resp.Outcome != OutcomeGone {
		most := 0
		for _, i := range sent {
			most = max(most, rows[i].Attempt+1)
		}
		delay, _ = retryDelay(cfg.RetrySchedule, d.cfg.QuickRetries, most, d.cfg.RetryJitter, d.cfg.Rand)
		if resp.hasRetryAfter {
			delay = max(delay, resp.RetryAfter)
		}
	}
	now := d.cfg.Now()
	for n, i := range sent {
		it := &items[i]
		r := rows[i]
		it.res.Outcome, it.res.Status, it.res.Latency, it.res.Error, it.res.Excerpt = resp.Outcome, resp.Status, resp.Latency, resp.Err, resp.Excerpt
		switch resp.Outcome {
		case OutcomeSuccess:
			it.res.Kind = db.AckSuccess
			d.metrics.e2eLatency.Observe(now.Sub(r.MessageReceivedAt).Seconds())
		case OutcomeGone:
			it.res.Kind, it.res.Delay, it.gone = db.AckRetry, d.cfg.HoldDelay, true
		default:
			// A failed request is one failure for the circuit.
			it.circuitNeutral = n > 0
			if _, more := retryDelay(cfg.RetrySchedule, d.cfg.QuickRetries, r.Attempt+1, 0, nil); more {
				it.res.Kind, it.res.Spend, it.res.Delay = db.AckRetry, true, delay
			} else {
				it.res.Kind = db.AckDead
				d.metrics.deliveries.WithLabelValues("dead").Inc()
			}
		}
	}
	if resp.Outcome == OutcomeGone {
		d.cache.forget(cfg.ID)
	}
	return items
}
