package dispatch

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/internal/tracing"
)

// releaseItem gives a row back without an attempt, visible again after delay.
func (d *Dispatcher) releaseItem(r db.ClaimedDelivery, delay time.Duration) ackItem {
	res := db.ResultFor(r)
	res.Kind, res.Delay = db.AckRelease, delay
	return ackItem{res: res, circuitNeutral: true}
}

// deliver makes one attempt of r to ep (nil: the endpoint is gone) and
// returns the result to acknowledge. The claim only leases rows of enabled
// endpoints and ep reflects the configuration version the claim saw, so the
// cached status is consulted only when a newer version was announced since.
func (d *Dispatcher) deliver(ctx context.Context, r db.ClaimedDelivery, ep *endpointState, claim trace.SpanContext) ackItem {
	if ep == nil {
		d.metrics.deliveries.WithLabelValues("held").Inc()
		return d.releaseItem(r, d.cfg.HoldDelay)
	}
	ok, wait, err := ep.acquire(ctx, d.cfg.EndpointWait, d.cfg.SaturatedDelay)
	if err != nil {
		return d.releaseItem(r, 0)
	}
	if !ok {
		// The endpoint is at its max_in_flight or rate limit: step aside
		// (no attempt spent) rather than hold a delivery slot other
		// endpoints need.
		d.metrics.deliveries.WithLabelValues("deferred").Inc()
		return d.releaseItem(r, wait)
	}
	defer ep.release()
	cfg := ep.cfg
	if !d.cache.current(ep) {
		// A change was announced since the claim (or while the slot was
		// awaited): the attempt that starts now must reflect it.
		eps, err := d.cache.get(ctx, []int64{r.EndpointID}, 0)
		if err != nil {
			return d.releaseItem(r, d.cfg.StoreRetryDelay)
		}
		cur := eps[r.EndpointID]
		if cur == nil || cur.cfg.Status != "enabled" {
			d.metrics.deliveries.WithLabelValues("held").Inc()
			return d.releaseItem(r, d.cfg.HoldDelay)
		}
		cfg = cur.cfg
	}
	return d.attempt(ctx, r, cfg, claim)
}

// attempt sends r to the endpoint cfg once and returns the result to
// acknowledge. With a tracer that records (tracing.Records), the attempt is
// a client span (startAttemptSpan) — a child of the span of the request
// that stored the callback, linked to claim, the span of the claim that
// leased the row — and its request carries the span as its traceparent
// header unless the endpoint opts out. Without one it makes no span and
// sends no traceparent.
func (d *Dispatcher) attempt(ctx context.Context, r db.ClaimedDelivery, cfg db.EndpointConfig, claim trace.SpanContext) (item ackItem) {
	var traceparent string
	if d.tracing {
		var span trace.Span
		ctx, span = d.startAttemptSpan(ctx, r, claim)
		defer func() { endAttemptSpan(span, item.res) }()
		if !cfg.OmitTraceparent {
			traceparent = tracing.Traceparent(span.SpanContext())
		}
	}
	attemptedAt := d.cfg.Now()
	res := db.ResultFor(r)
	res.AttemptedAt = attemptedAt
	if !r.MessageFound {
		// The message is gone (its partition was dropped): nothing can ever
		// be sent, so the delivery becomes a dead letter at once rather than
		// coming back after every lease.
		res.Kind, res.Outcome, res.Error = db.AckDead, OutcomeFailed, "message not found"
		d.metrics.deliveries.WithLabelValues("dead").Inc()
		return ackItem{res: res, circuitNeutral: true}
	}
	if why := unsendable(r); why != "" {
		// The delivery's own values cannot be sent (stored before ingest
		// refused them): no attempt can ever succeed, and the endpoint is
		// not at fault, so the delivery becomes a dead letter at once —
		// releasing its chain — without counting against the endpoint's
		// circuit.
		res.Kind, res.Outcome, res.Error = db.AckDead, OutcomeFailed, why
		d.metrics.deliveries.WithLabelValues("dead").Inc()
		return ackItem{res: res, circuitNeutral: true}
	}
	body, err := d.payload(ctx, r, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return d.releaseItem(r, 0)
		}
		// The payload store is down: a failed attempt that neither spends
		// an attempt nor counts against the endpoint's circuit.
		d.metrics.deliveries.WithLabelValues(OutcomeFailed).Inc()
		res.Kind, res.Delay, res.Outcome = db.AckRetry, d.cfg.StoreRetryDelay, OutcomeFailed
		res.Error = "payload store: " + err.Error()
		return ackItem{res: res, circuitNeutral: true}
	}

	msgID := webhookID(r.MessageID)
	h := d.headers(msgID, attemptedAt, body, cfg)
	h.Set("X-Hookrelay-Carrier", r.CarrierName)
	h.Set("X-Hookrelay-Event-Type", eventTypeFor(r, cfg))
	h.Set("X-Hookrelay-Ordering-Key", r.OrderingKey)
	h.Set("X-Hookrelay-Attempt", strconv.Itoa(r.Attempt+1))
	if traceparent != "" {
		h.Set("Traceparent", traceparent)
	}
	resp := d.sender.Send(ctx, request{URL: cfg.URL, Body: body, Header: h, Timeout: timeoutOf(cfg)})
	if resp.Outcome != OutcomeSuccess && ctx.Err() != nil {
		// Cut off by a forced shutdown: not the endpoint's fault.
		return d.releaseItem(r, 0)
	}
	d.metrics.deliveries.WithLabelValues(resp.Outcome).Inc()
	d.metrics.deliveryLatency.Observe(resp.Latency.Seconds())
	res.Outcome, res.Status, res.Latency, res.Error, res.Excerpt = resp.Outcome, resp.Status, resp.Latency, resp.Err, resp.Excerpt
	item = ackItem{res: res}
	switch resp.Outcome {
	case OutcomeSuccess:
		item.res.Kind = db.AckSuccess
		d.metrics.e2eLatency.Observe(d.cfg.Now().Sub(r.MessageReceivedAt).Seconds())
	case OutcomeGone:
		// The endpoint is disabled by the ack; the delivery is held
		// without spending an attempt.
		item.res.Kind, item.res.Delay, item.gone = db.AckRetry, d.cfg.HoldDelay, true
		d.cache.forget(r.EndpointID)
	default:
		delay, more := retryDelay(cfg.RetrySchedule, d.cfg.QuickRetries, r.Attempt+1, d.cfg.RetryJitter, d.cfg.Rand)
		if resp.hasRetryAfter {
			delay = max(delay, resp.RetryAfter)
		}
		if more {
			item.res.Kind, item.res.Spend, item.res.Delay = db.AckRetry, true, delay
		} else {
			item.res.Kind = db.AckDead
			d.metrics.deliveries.WithLabelValues("dead").Inc()
		}
	}
	return item
}

// unsendable returns why the request of r cannot be built ("" when it
// can): the values of the delivery itself that go into its headers must be
// valid header values (hookrelay.CheckHeaderValue, Go's HTTP client's rule),
// or the client refuses the request on every attempt. Ingest and carrier
// creation refuse such values; rows stored before they did can hold them.
// The endpoint's own (custom headers, credentials, URL) are not judged
// here: they are the endpoint's configuration, refused when set, and a
// request they break is the endpoint's failure.
func unsendable(r db.ClaimedDelivery) string {
	for _, h := range [...]struct{ name, value string }{
		{"X-Hookrelay-Carrier", r.CarrierName},
		{"X-Hookrelay-Event-Type", r.EventType},
		{"X-Hookrelay-Ordering-Key", r.OrderingKey},
	} {
		if err := hookrelay.CheckHeaderValue(h.name, h.value); err != nil {
			return "request cannot be built: " + hookrelay.ErrorMessage(err)
		}
	}
	return ""
}

// headers returns the endpoint's custom headers and credentials, the
// Standard Webhooks headers and the fixed ones. The API refuses custom
// headers that hookrelay sets, so none is overwritten here.
func (d *Dispatcher) headers(msgID string, at time.Time, body []byte, ep db.EndpointConfig) http.Header {
	ts := at.Unix()
	secrets := ep.Secrets
	h := make(http.Header, 12+len(ep.Headers))
	for name, v := range ep.Headers {
		h.Set(name, v)
	}
	if a := ep.Auth; a != nil {
		switch a.Type {
		case "basic":
			h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(a.Username+":"+a.Password)))
		case "bearer":
			h.Set("Authorization", "Bearer "+a.Token)
		}
	}
	h.Set("Webhook-Id", msgID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(ts, 10))
	if len(secrets) > 0 {
		h.Set("Webhook-Signature", Sign(secrets, msgID, ts, body))
	}
	h.Set("Idempotency-Key", msgID)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", d.cfg.UserAgent)
	return h
}

// webhookID is the wire id of a message.
func webhookID(messageID int64) string { return "msg_" + strconv.FormatInt(messageID, 10) }

func timeoutOf(ep db.EndpointConfig) time.Duration {
	if ep.Timeout <= 0 {
		return 15 * time.Second
	}
	return ep.Timeout
}

// referenceBody is what a reference-mode endpoint receives for an offloaded
// payload.
type referenceBody struct {
	Type   string `json:"type"`
	URL    string `json:"url"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// canonical reports whether r goes to ep as its canonical event: ep takes
// canonical events and the message has one. A delivery without one (stored
// while the endpoint was raw) goes as the carrier's body.
func canonical(r db.ClaimedDelivery, ep db.EndpointConfig) bool {
	return ep.Format == db.FormatCanonical && r.CanonicalEvent != nil
}

// eventTypeFor is the event type a delivery of r to ep names: the canonical
// event's when it goes as that, else the callback's.
func eventTypeFor(r db.ClaimedDelivery, ep db.EndpointConfig) string {
	if canonical(r, ep) {
		return r.CanonicalType
	}
	return r.EventType
}

// payload returns the body to send: the canonical event (canonical
// endpoints), or the stored bytes, the offloaded object (inline mode) or the
// presigned-URL envelope (reference mode).
func (d *Dispatcher) payload(ctx context.Context, r db.ClaimedDelivery, ep db.EndpointConfig) ([]byte, error) {
	if canonical(r, ep) {
		return r.CanonicalEvent, nil
	}
	mode := ep.PayloadMode
	if r.PayloadKey == "" {
		return r.Payload, nil
	}
	if mode == "reference" {
		u, err := d.store.Presign(ctx, r.PayloadKey, d.cfg.PresignTTL)
		if err != nil {
			return nil, err
		}
		return json.Marshal(referenceBody{Type: "payload.reference", URL: u, Size: r.PayloadSize, SHA256: hex.EncodeToString(r.PayloadSHA256)})
	}
	return d.store.Get(ctx, r.PayloadKey)
}
