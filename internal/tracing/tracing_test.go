package tracing

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

func TestTraceparentRoundTrip(t *testing.T) {
	t.Parallel()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	tp := Traceparent(sc)
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tp)
	got, ok := Parse(tp)
	require.True(t, ok)
	require.True(t, got.IsRemote())
	require.Equal(t, tid, got.TraceID())
	require.Equal(t, sid, got.SpanID())
	require.True(t, got.IsSampled())

	require.Empty(t, Traceparent(trace.SpanContext{}))
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, tp := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",     // short
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",    // flags
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // separator
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xx", // long
	} {
		_, ok := Parse(tp)
		require.False(t, ok, tp)
	}
}
