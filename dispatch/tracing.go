package dispatch

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/internal/tracing"
)

// Span names of dispatch (docs/operations/monitoring.md, "Tracing").
const (
	spanClaim   = "hookrelay.claim"
	spanDeliver = "hookrelay.deliver"
)

// tracedClaim is claimRows recorded as a span, which it returns. A claim
// that leased nothing and failed not makes no span: an idle dispatcher
// claims several times a second, and those spans would say nothing. So the
// span is made once the claim is over, with the times it began and ended.
func (d *Dispatcher) tracedClaim(ctx context.Context, queues []int, after []int64, n int) ([]db.ClaimedDelivery, trace.SpanContext, error) {
	start := time.Now()
	rows, err := d.claimRows(ctx, queues, after, n)
	if len(rows) == 0 && err == nil {
		return rows, trace.SpanContext{}, nil
	}
	_, span := d.cfg.Tracer.Start(ctx, spanClaim, trace.WithTimestamp(start),
		trace.WithAttributes(attribute.Int("hookrelay.claim.queues", len(queues)),
			attribute.Int("hookrelay.claim.limit", n), attribute.Int("hookrelay.claim.rows", len(rows))))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return rows, span.SpanContext(), err
}

// tracedAttempt is attempt within a client span: a child of the span of the
// request that stored the callback (its traceparent, kept with the message)
// — so every attempt of a delivery, from whichever dispatcher and however
// much later, is in the callback's trace — and linked to the span of the
// claim that leased the row. The request carries the attempt's span as its
// traceparent unless the endpoint opts out.
func (d *Dispatcher) tracedAttempt(ctx context.Context, r db.ClaimedDelivery, cfg db.EndpointConfig, claim trace.SpanContext) ackItem {
	if parent, ok := tracing.Parse(r.Traceparent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int64("hookrelay.delivery_id", r.ID),
			attribute.String("hookrelay.message_id", strconv.FormatInt(r.MessageID, 10)),
			attribute.Int64("hookrelay.endpoint_id", r.EndpointID), attribute.Int("hookrelay.attempt", r.Attempt+1),
			attribute.String("http.request.method", "POST"))}
	if claim.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: claim}))
	}
	ctx, span := d.cfg.Tracer.Start(ctx, spanDeliver, opts...)
	defer span.End()
	var tp string
	if !cfg.OmitTraceparent {
		tp = tracing.Traceparent(span.SpanContext())
	}
	item := d.attempt(ctx, r, cfg, tp)
	res := item.res
	if res.Outcome != "" {
		span.SetAttributes(attribute.String("hookrelay.outcome", res.Outcome))
	}
	if res.Status > 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", res.Status))
	}
	if res.Outcome != "" && res.Outcome != OutcomeSuccess {
		span.SetStatus(codes.Error, res.Outcome+": "+res.Error)
	}
	return item
}
