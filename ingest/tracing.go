package ingest

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/internal/tracing"
)

// spanGroupCommit is the span name of a group commit (docs/operations/monitoring.md,
// "Tracing").
const spanGroupCommit = "hookrelay.group_commit"

// startCommitSpan starts the span of a group commit, linked to the spans of
// the requests whose callbacks it stores (up to the SDK's link limit,
// OTEL_SPAN_LINK_COUNT_LIMIT, 128 by default).
func (b *Batcher) startCommitSpan(ctx context.Context, batch []*pendingMsg) (context.Context, trace.Span) {
	links := make([]trace.Link, 0, len(batch))
	for _, p := range batch {
		if sc, ok := tracing.Parse(p.msg.Traceparent); ok {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	return b.cfg.Tracer.Start(ctx, spanGroupCommit, trace.WithLinks(links...),
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
