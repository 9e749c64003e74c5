package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/internal/tracing"
)

// newTracerProvider returns a tracer provider that exports spans in batches
// over OTLP/HTTP (protobuf), and its shutdown, which flushes what is left.
// The standard variables configure it (the SDK reads them): the exporter's
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT and the like, the
// sampler's OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default: every
// trace, or as its parent decided), the batch's OTEL_BSP_*, the limits'
// OTEL_SPAN_LINK_COUNT_LIMIT and the resource's OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES (service.name defaults to hookrelay). Nothing is
// sent until a span ends; a collector that is down costs dropped spans
// (the SDK logs them), never a request.
func newTracerProvider(ctx context.Context, logger *slog.Logger) (*sdktrace.TracerProvider, func(), error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Later sources win: the environment's service name over ours.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "hookrelay"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithHost(), resource.WithProcessPID())
	if err != nil {
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("could not flush the last spans", "error", err)
		}
	}
	return tp, shutdown, nil
}

// tracer returns the process's tracer: the no-op one when tracing is off
// (tp nil), whose spans the roles do not even start.
func tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return tracing.OrNoop(nil)
	}
	return tp.Tracer(tracing.Scope, trace.WithInstrumentationVersion(version))
}
