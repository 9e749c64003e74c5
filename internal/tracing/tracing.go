// Package tracing writes and reads the W3C traceparent that carries a
// span's context through the database, from the request that stored a
// callback to the attempts that deliver it (HOOKRELAY_TRACING; the process
// sets up its tracer provider in cmd/hookrelay).
package tracing

import (
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of hookrelay's spans.
const Scope = "github.com/hookrelay/hookrelay"

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
