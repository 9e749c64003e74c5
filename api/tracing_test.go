package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/internal/tracing"
)

// traceSink is a loopback merchant endpoint that records the traceparent
// header of each request ("" when absent); fail answers 500 to the first
// that many requests.
type traceSink struct {
	srv *httptest.Server

	mu   sync.Mutex // guards got and fail
	got  []string
	has  []bool
	fail int
}

func newTraceSink(t *testing.T, fail int) *traceSink {
	s := &traceSink{fail: fail}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		_, has := r.Header["Traceparent"]
		s.got = append(s.got, r.Header.Get("Traceparent"))
		s.has = append(s.has, has)
		if s.fail > 0 {
			s.fail--
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// requests returns the traceparent of each request, and whether it had one.
func (s *traceSink) requests() ([]string, []bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...), append([]bool(nil), s.has...)
}

// inMemoryTracer returns a tracer whose spans go, as they end, to the
// returned exporter.
func inMemoryTracer(t *testing.T) (trace.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer(tracing.Scope), exp
}

func spansNamed(exp *tracetest.InMemoryExporter, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func hasLink(s tracetest.SpanStub, to trace.SpanContext) bool {
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == to.TraceID() && l.SpanContext.SpanID() == to.SpanID() {
			return true
		}
	}
	return false
}

// messageTraceparents returns the traceparent column of every message.
func messageTraceparents(t *testing.T, dbURL string) []*string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT traceparent FROM messages ORDER BY id")
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[*string])
	require.NoError(t, err)
	return out
}

// A callback that continues a carrier's trace, through the real API to two
// real loopback receivers, with the API and the dispatcher tracing into
// exporters of their own and the dispatcher finding the callback by
// polling — as two processes, whose only link is the database: the
// request's span continues the carrier's trace and is stored with the
// message; the group commit links to it and it to the commit; each
// delivery attempt (a failed first one and its retry included) is a child
// of the request's span, linked to the claim that leased it; the receiver
// gets a traceparent naming its attempt's span, in the carrier's trace;
// the endpoint that opted out gets none.
func TestTracingFromIngestToDelivery(t *testing.T) {
	t.Parallel()
	apiTracer, apiSpans := inMemoryTracer(t)
	dispatchTracer, dispatchSpans := inMemoryTracer(t)
	r := startRelayWith(t, relayOpts{apiTracer: apiTracer, dispatchTracer: dispatchTracer})
	traced := newTraceSink(t, 1)
	optedOut := newTraceSink(t, 0)

	c := r.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "sf"})
	m := r.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	mKey := m["api_key"].(string)
	ep := r.mustCreate(t, "/v1/endpoints", mKey, map[string]any{"url": traced.srv.URL + "/hook"})
	require.Equal(t, true, ep["send_traceparent"])
	out := r.mustCreate(t, "/v1/endpoints", mKey, map[string]any{"url": optedOut.srv.URL + "/hook", "send_traceparent": false})
	require.Equal(t, false, out["send_traceparent"])
	// A PATCH without the field leaves it; a string is refused.
	st, patched := r.call(t, http.MethodPatch, "/v1/endpoints/"+out["id"].(string), mKey, map[string]any{"description": "no trace"})
	require.Equal(t, http.StatusOK, st, "%v", patched)
	require.Equal(t, false, patched["send_traceparent"])
	st, bad := r.call(t, http.MethodPatch, "/v1/endpoints/"+out["id"].(string), mKey, map[string]any{"send_traceparent": "no"})
	require.Equal(t, http.StatusBadRequest, st, "%v", bad)
	st, bad = r.call(t, http.MethodPatch, "/v1/endpoints/"+ep["id"].(string), mKey, map[string]any{"headers": map[string]any{"Traceparent": "00-x"}})
	require.Equal(t, http.StatusBadRequest, st, "%v", bad)

	const carrierTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	carrierParent := "00-" + carrierTrace + "-00f067aa0ba902b7-01"
	st, ans := r.call(t, http.MethodPost, "/v1/callbacks", c["api_key"].(string),
		map[string]any{"tracking_no": "T1", "status": "DELIVERED"}, "Traceparent", carrierParent)
	require.Equal(t, http.StatusAccepted, st, "%v", ans)

	testenv.Eventually(t, 30*time.Second, "the retry to the traced endpoint and the delivery to the other", func() bool {
		a, _ := traced.requests()
		b, _ := optedOut.requests()
		return len(a) >= 2 && len(b) >= 1
	})

	// Ingest: the request's span continues the carrier's trace.
	reqs := spansNamed(apiSpans, "POST /v1/callbacks")
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, trace.SpanKindServer, req.SpanKind)
	require.Equal(t, carrierTrace, req.SpanContext.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", req.Parent.SpanID().String())
	require.Contains(t, req.Attributes, attribute.String("hookrelay.message_id", ans["message_id"].(string)))
	// The group commit and the request link to each other.
	commits := spansNamed(apiSpans, "hookrelay.group_commit")
	require.Len(t, commits, 1)
	require.True(t, hasLink(commits[0], req.SpanContext), "commit links to the request")
	require.True(t, hasLink(req, commits[0].SpanContext), "request links to the commit")
	// The message keeps the request's context.
	tps := messageTraceparents(t, r.DBURL)
	require.Len(t, tps, 1)
	require.NotNil(t, tps[0])
	require.Equal(t, tracing.Traceparent(req.SpanContext), *tps[0])

	// Dispatch: three attempts, each a child of the request's span, linked
	// to a claim span of the dispatcher.
	testenv.Eventually(t, 10*time.Second, "the three attempt spans", func() bool {
		return len(spansNamed(dispatchSpans, "hookrelay.deliver")) == 3
	})
	claims := spansNamed(dispatchSpans, "hookrelay.claim")
	require.NotEmpty(t, claims)
	bySpanID := map[string]tracetest.SpanStub{}
	for _, s := range spansNamed(dispatchSpans, "hookrelay.deliver") {
		require.Equal(t, trace.SpanKindClient, s.SpanKind)
		require.True(t, s.Parent.IsRemote())
		require.Equal(t, req.SpanContext.TraceID(), s.SpanContext.TraceID())
		require.Equal(t, req.SpanContext.SpanID(), s.Parent.SpanID())
		linked := false
		for _, c := range claims {
			linked = linked || hasLink(s, c.SpanContext)
		}
		require.True(t, linked, "attempt linked to its claim")
		bySpanID[s.SpanContext.SpanID().String()] = s
	}

	// The traced receiver got, on each attempt, the traceparent of that
	// attempt's span, in the carrier's trace.
	got, _ := traced.requests()
	require.Len(t, got, 2)
	for i, tp := range got {
		sc, ok := tracing.Parse(tp)
		require.True(t, ok, "traceparent %q", tp)
		require.Equal(t, carrierTrace, sc.TraceID().String())
		s, ok := bySpanID[sc.SpanID().String()]
		require.True(t, ok, "the traceparent names an attempt span")
		require.Contains(t, s.Attributes, attribute.Int("hookrelay.attempt", i+1))
	}
	_, has := optedOut.requests()
	require.Equal(t, []bool{false}, has, "the endpoint that opted out gets no traceparent")
}

// With tracing off, nothing is traced and nothing is stored: a carrier's
// traceparent is not passed on, no message has a traceparent and no
// delivery carries one.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	r := startRelayWith(t, relayOpts{wake: true})
	sink := newTraceSink(t, 0)
	c := r.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "sf"})
	m := r.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	r.mustCreate(t, "/v1/endpoints", m["api_key"].(string), map[string]any{"url": sink.srv.URL + "/hook"})
	for i := range 3 {
		st, ans := r.call(t, http.MethodPost, "/v1/callbacks", c["api_key"].(string),
			map[string]any{"tracking_no": "T" + strconv.Itoa(i)}, "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		require.Equal(t, http.StatusAccepted, st, "%v", ans)
	}
	testenv.Eventually(t, 30*time.Second, "three deliveries", func() bool {
		got, _ := sink.requests()
		return len(got) == 3
	})
	_, has := sink.requests()
	require.Equal(t, []bool{false, false, false}, has)
	tps := messageTraceparents(t, r.DBURL)
	require.Len(t, tps, 3)
	for _, tp := range tps {
		require.Nil(t, tp)
	}
}

// A callback stored by an API that does not trace, delivered by a
// dispatcher that does: each attempt starts a trace of its own, and the
// receiver gets its traceparent.
func TestTracingDispatchOnly(t *testing.T) {
	t.Parallel()
	dispatchTracer, dispatchSpans := inMemoryTracer(t)
	r := startRelayWith(t, relayOpts{wake: true, dispatchTracer: dispatchTracer})
	sink := newTraceSink(t, 0)
	c := r.mustCreate(t, "/v1/carriers", adminToken, map[string]any{"name": "sf"})
	m := r.mustCreate(t, "/v1/merchants", adminToken, map[string]any{"name": "shop"})
	r.mustCreate(t, "/v1/endpoints", m["api_key"].(string), map[string]any{"url": sink.srv.URL + "/hook"})
	st, ans := r.call(t, http.MethodPost, "/v1/callbacks", c["api_key"].(string), map[string]any{"tracking_no": "T1"})
	require.Equal(t, http.StatusAccepted, st, "%v", ans)
	testenv.Eventually(t, 30*time.Second, "the delivery and its span", func() bool {
		got, _ := sink.requests()
		return len(got) == 1 && len(spansNamed(dispatchSpans, "hookrelay.deliver")) == 1
	})
	require.Equal(t, []*string{nil}, messageTraceparents(t, r.DBURL))
	s := spansNamed(dispatchSpans, "hookrelay.deliver")[0]
	require.False(t, s.Parent.IsValid(), "a root span")
	got, _ := sink.requests()
	require.Equal(t, tracing.Traceparent(s.SpanContext), got[0])
}
