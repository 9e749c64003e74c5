package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/internal/tracing"
)

// Span names of ingest (docs/operations/monitoring.md, "Tracing").
const (
	spanCallback    = "POST /v1/callbacks"
	spanGroupCommit = "hookrelay.group_commit"
)

// tracedCallback is callback within a span of its own: a server span that
// continues the carrier's trace when its request has a traceparent. The
// message stores the span's context (acceptCallback), the group commit
// links to it and it to the commit (batcher.Submit).
func (s *Server) tracedCallback(c echo.Context) error {
	req := c.Request()
	ctx := propagation.TraceContext{}.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
	ctx, span := s.cfg.Tracer.Start(ctx, spanCallback, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodPost), attribute.String("http.route", "/v1/callbacks"),
			attribute.Int64("hookrelay.carrier_id", principalOf(c).carrier.ID)))
	defer span.End()
	c.SetRequest(req.WithContext(ctx))
	resp, code, err := s.answerCallback(c)
	span.SetAttributes(attribute.Int("http.response.status_code", code))
	if resp.MessageID != "" {
		span.SetAttributes(attribute.String("hookrelay.message_id", resp.MessageID),
			attribute.Int("hookrelay.deliveries", resp.Deliveries), attribute.Bool("hookrelay.duplicate", resp.Duplicate))
	}
	if code >= 500 && err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// startCommitSpan starts the span of a group commit, linked to the spans of
// the requests whose callbacks it stores (up to the SDK's link limit,
// OTEL_SPAN_LINK_COUNT_LIMIT, 128 by default).
func (b *batcher) startCommitSpan(ctx context.Context, batch []*pendingMsg) (context.Context, trace.Span) {
	links := make([]trace.Link, 0, len(batch))
	for _, p := range batch {
		if sc, ok := tracing.Parse(p.msg.Traceparent); ok {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	return b.tracer.Start(ctx, spanGroupCommit, trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("hookrelay.batch.callbacks", len(batch))))
}

// spanContext returns span's context; nil for a nil span.
func spanContext(span trace.Span) *trace.SpanContext {
	if span == nil {
		return nil
	}
	sc := span.SpanContext()
	return &sc
}
