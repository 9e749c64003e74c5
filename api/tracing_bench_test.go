package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/db"
)

// BenchmarkCallbackSpan measures what tracing adds to a callback request
// (Server.callback). The request is refused at once for its Content-Type,
// so the handler's own work is small and needs no database; the request
// carries a traceparent, as a carrier's may.
//
//   - mode=untraced: what every callback does when the process does not
//     trace (the default no-op tracer: tracing.Records is false, so the
//     handler makes no span);
//   - mode=noop-span: the handler starting and ending its span whatever the
//     tracer, with the no-op tracer (the cost that skipping it avoids);
//   - mode=sdk: the span with the SDK's tracer, exporting to nowhere, as
//     HOOKRELAY_TRACING=true makes it (for scale).
func BenchmarkCallbackSpan(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for _, bc := range []struct {
		mode   string
		tracer trace.Tracer
		span   bool // start and end the span whatever the tracer
	}{
		{"untraced", nil, false},
		{"noop-span", nil, true},
		{"sdk", tp.Tracer("bench"), true},
	} {
		b.Run("mode="+bc.mode, func(b *testing.B) {
			s := New(slog.New(slog.DiscardHandler), Config{Tracer: bc.tracer}, nil, nil, nil, nil)
			s.tracing = s.tracing || bc.span
			req := httptest.NewRequest(http.MethodPost, "/v1/callbacks", nil)
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			c := echo.New().NewContext(req, httptest.NewRecorder())
			c.Set(principalKey, principal{kind: kindCarrier, carrier: db.Carrier{ID: 7}})
			b.ReportAllocs()
			for b.Loop() {
				c.SetRequest(req)
				if err := s.callback(c); err == nil {
					b.Fatal("a text/plain callback was taken")
				}
			}
		})
	}
}
