package dispatch

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// Operational webhooks: every dispatcher runs an ops event loop that turns
// the outbox (ops_events, written in the transactions of the state changes)
// into signed messages and sends them to the operator's ops endpoints. It has its
// own goroutine and its own HTTP client, so a hanging ops receiver holds up
// neither the claim loops nor the connections of merchant deliveries.

const (
	// opsEventBatch is how many ops messages one round claims and sends at
	// once.
	opsEventBatch = 16
	// opsEventFanoutRows bounds the outbox rows one fan-out takes.
	opsEventFanoutRows = 1000
)

// opsEventLoop runs a round of operational webhooks every OpsPoll until ctx
// ends.
func (d *Dispatcher) opsEventLoop(ctx context.Context) {
	tick := time.NewTicker(d.cfg.OpsPoll)
	defer tick.Stop()
	for {
		d.opsEventRound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// opsEventRound queues the outbox's events ready to go and sends the messages
// due, a batch at a time, until none is left. A round with nothing to do
// (most of them) is one read: the fan-out's transaction and the claim run
// only when it finds work, or cannot tell.
func (d *Dispatcher) opsEventRound(ctx context.Context) {
	if due, err := d.db.OpsDue(ctx, d.cfg.OpsCoalesce); err == nil && !due {
		return
	}
	if _, err := d.db.OpsFanout(ctx, d.cfg.OpsCoalesce, opsEventFanoutRows, opsEventMessages); err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("operational webhooks: fan-out failed", "error", err)
		}
	}
	// A claimed message stays invisible past its attempt's timeout, so a
	// round still sending is never raced by another process.
	lease := 2*d.cfg.OpsTimeout + 5*time.Second
	for ctx.Err() == nil {
		batch, err := d.db.OpsDeliveryClaim(ctx, opsEventBatch, lease)
		if err != nil {
			if ctx.Err() == nil {
				d.logger.Warn("operational webhooks: claim failed", "error", err)
			}
			return
		}
		var wg sync.WaitGroup
		for _, od := range batch {
			wg.Go(func() { d.sendOpsEvent(ctx, od) })
		}
		wg.Wait()
		if len(batch) < opsEventBatch {
			return
		}
	}
}

// sendOpsEvent makes one attempt of an ops message: delivered or out of attempts,
// it is deleted; otherwise it is due again after the back-off.
func (d *Dispatcher) sendOpsEvent(ctx context.Context, od db.OpsDelivery) {
	h := d.headers(od.MsgID, d.cfg.Now(), od.Payload, db.EndpointConfig{Secrets: []string{od.Secret}})
	resp := d.opsEventSender.Send(ctx, request{URL: od.URL, Body: od.Payload, Header: h, Timeout: d.cfg.OpsTimeout})
	if ctx.Err() != nil {
		return // the lease runs out and another round tries again
	}
	// The outcome is counted once it is recorded, so a reader of the metric
	// never sees a message counted as done that is still in the table.
	var err error
	var outcome string
	switch {
	case resp.Outcome == OutcomeSuccess:
		outcome = "delivered"
		err = d.db.OpsDeliveryDone(ctx, od.ID)
	case od.Attempts >= d.cfg.OpsAttempts:
		outcome = "dropped"
		d.logger.Warn("operational webhooks: giving up on a message", "msg_id", od.MsgID, "url", od.URL,
			"attempts", od.Attempts, "error", resp.Err)
		err = d.db.OpsDeliveryDone(ctx, od.ID)
	default:
		outcome = "retried"
		err = d.db.OpsDeliveryRetry(ctx, od.ID, d.opsEventBackoff(od.Attempts), resp.Err)
	}
	d.metrics.opsEventAttempts.WithLabelValues(outcome).Inc()
	if err != nil && ctx.Err() == nil {
		d.logger.Warn("operational webhooks: recording an attempt failed", "msg_id", od.MsgID, "error", err)
	}
}

// opsEventBackoff is the wait after failed attempt n (1-based): OpsRetryBase
// doubling up to OpsRetryMax.
func (d *Dispatcher) opsEventBackoff(n int) time.Duration {
	wait := d.cfg.OpsRetryBase
	for i := 1; i < n && wait < d.cfg.OpsRetryMax; i++ {
		wait *= 2
	}
	return min(wait, d.cfg.OpsRetryMax)
}

// opsEventPayload is the body of an operational webhook.
type opsEventPayload struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// opsEventMessages turns outbox rows into messages: one per row, except that the
// delivery.dead_lettered rows of one endpoint become one message with their
// total count and the window they fell in. A message's id is its first
// row's, so a receiver can drop duplicates.
func opsEventMessages(evs []db.OpsOutboxEvent) []db.OpsMessage {
	type window struct {
		first, last db.OpsOutboxEvent
		count       int
	}
	dead := map[int64]*window{}
	var order []int // indexes into evs of the messages, in outbox order
	for i, ev := range evs {
		if ev.Type != hookrelay.OpsEventDeliveryDeadLettered {
			order = append(order, i)
			continue
		}
		if w := dead[ev.EndpointID]; w != nil {
			w.last, w.count = ev, w.count+ev.Count
			continue
		}
		dead[ev.EndpointID] = &window{first: ev, last: ev, count: ev.Count}
		order = append(order, i)
	}
	out := make([]db.OpsMessage, 0, len(order))
	for _, i := range order {
		ev := evs[i]
		data := ev.Data
		if ev.Type == hookrelay.OpsEventDeliveryDeadLettered {
			w := dead[ev.EndpointID]
			m := map[string]any{}
			_ = json.Unmarshal(w.last.Data, &m)
			m["count"] = w.count
			m["window_start"] = w.first.CreatedAt.UTC()
			m["window_end"] = w.last.CreatedAt.UTC()
			data, _ = json.Marshal(m)
		}
		body, err := json.Marshal(opsEventPayload{Type: ev.Type, Timestamp: ev.CreatedAt.UTC(), Data: data})
		if err != nil {
			continue // data came from a jsonb column: it is valid JSON
		}
		out = append(out, db.OpsMessage{Type: ev.Type, MsgID: "ops_" + strconv.FormatInt(ev.ID, 10), Payload: body})
	}
	return out
}
