// Package tracing writes and reads the W3C traceparent that carries a
// span's context through the database, from the request that stored a
// callback to the attempts that deliver it (HOOKRELAY_TRACING; the process
// sets up its tracer provider in cmd/hookrelay).
package tracing

import (
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of hookrelay's spans.
const Scope = "github.com/hookrelay/hookrelay"

// OrNoop returns t, or the no-op tracer (go.opentelemetry.io/otel/trace/noop)
// when t is nil: the tracer of a process that does not trace.
func OrNoop(t trace.Tracer) trace.Tracer {
	if t == nil {
		return noop.Tracer{}
	}
	return t
}

// Records reports whether t may record spans: false for nil and for the
// no-op tracer. The hot paths (a callback, a delivery attempt) ask it once,
// when they are built, and skip everything about spans without it: the
// no-op tracer's Start still costs the options' and the context's
// allocations, and it would pass a carrier's traceparent on (it returns
// the remote span it is given), which hookrelay does only when it traces.
func Records(t trace.Tracer) bool {
	if t == nil {
		return false
	}
	_, isNoop := t.(noop.Tracer)
	return !isNoop
}

// traceparentLen is the length of a version-00 traceparent:
// 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>.
const traceparentLen = 55

// Traceparent returns sc as a W3C traceparent value (version 00), "" when
// sc is not valid.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [traceparentLen]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// Parse returns the remote span context a version-00 traceparent names; ok
// is false for anything else (an empty value included).
func Parse(tp string) (sc trace.SpanContext, ok bool) {
	if len(tp) != traceparentLen || tp[0:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(tp[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(tp[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags [1]byte
	if _, err := hex.Decode(flags[:], []byte(tp[53:55])); err != nil {
		return trace.SpanContext{}, false
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true})
	return sc, sc.IsValid()
}
