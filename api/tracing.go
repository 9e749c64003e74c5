package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// spanCallback is the span name of a callback request (docs/operations.md,
// "Tracing"; the group commit's is package ingest's).
const spanCallback = "POST /v1/callbacks"

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
