package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// spanCallback is the span name of a callback request (docs/operations/monitoring.md,
// "Tracing"; the group commit's is package ingest's).
const spanCallback = "POST /v1/callbacks"

// startCallbackSpan starts the server span of the callback request of c,
// continuing the carrier's trace when the request has a traceparent, and
// puts it in the request's context. The caller ends it (endCallbackSpan,
// then End).
func (s *Server) startCallbackSpan(c echo.Context) trace.Span {
	req := c.Request()
	ctx := propagation.TraceContext{}.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
	ctx, span := s.cfg.Tracer.Start(ctx, spanCallback, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodPost), attribute.String("http.route", "/v1/callbacks"),
			attribute.Int64("hookrelay.carrier_id", principalOf(c).carrier.ID)))
	c.SetRequest(req.WithContext(ctx))
	return span
}

// endCallbackSpan records the answer to the callback on its span: the
// status code, the message it stored, and the error of a failure that was
// the server's (5xx).
func endCallbackSpan(span trace.Span, resp CallbackResponse, code int, err error) {
	span.SetAttributes(attribute.Int("http.response.status_code", code))
	if resp.MessageID != "" {
		span.SetAttributes(attribute.String("hookrelay.message_id", resp.MessageID),
			attribute.Int("hookrelay.deliveries", resp.Deliveries), attribute.Bool("hookrelay.duplicate", resp.Duplicate))
	}
	if code >= 500 && err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
}
