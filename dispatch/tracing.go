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

// claimSpan records a claim over queues for up to limit rows that began at
// start, leased rows and ended now (with err), as a span, and returns the
// span's context. The span is made once the claim is over: a claim that
// leased nothing and did not fail makes none (claim), since an idle
// dispatcher claims several times a second and those spans would say
// nothing.
func (d *Dispatcher) claimSpan(ctx context.Context, start time.Time, queues, limit, rows int, err error) trace.SpanContext {
	_, span := d.cfg.Tracer.Start(ctx, spanClaim, trace.WithTimestamp(start),
		trace.WithAttributes(attribute.Int("hookrelay.claim.queues", queues),
			attribute.Int("hookrelay.claim.limit", limit), attribute.Int("hookrelay.claim.rows", rows)))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return span.SpanContext()
}

// startAttemptSpan starts the client span of an attempt of r: a child of
// the span of the request that stored the callback (its traceparent, kept
// with the message) — so every attempt of a delivery, from whichever
// dispatcher and however much later, is in the callback's trace — and
// linked to the span of the claim that leased the row. The caller ends it
// (endAttemptSpan).
func (d *Dispatcher) startAttemptSpan(ctx context.Context, r db.ClaimedDelivery, claim trace.SpanContext) (context.Context, trace.Span) {
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
	return d.cfg.Tracer.Start(ctx, spanDeliver, opts...)
}

// endAttemptSpan records the attempt's result on its span and ends it.
func endAttemptSpan(span trace.Span, res db.DeliveryResult) {
	if res.Outcome != "" {
		span.SetAttributes(attribute.String("hookrelay.outcome", res.Outcome))
	}
	if res.Status > 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", res.Status))
	}
	if res.Outcome != "" && res.Outcome != OutcomeSuccess {
		span.SetStatus(codes.Error, res.Outcome+": "+res.Error)
	}
	span.End()
}
