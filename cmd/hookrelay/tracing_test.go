package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/internal/tracing"
)

// collector is a loopback OTLP/HTTP trace receiver: it decodes each export
// and keeps the spans' names by trace id (hex).
type collector struct {
	srv *httptest.Server

	mu    sync.Mutex // guards names
	names map[string][]string
}

func newCollector(t *testing.T) *collector {
	c := &collector{names: map[string][]string{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(raw, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					tid := hex.EncodeToString(s.TraceId)
					c.names[tid] = append(c.names[tid], s.Name)
				}
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		raw, _ = proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(raw)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) spans(traceID string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.names[traceID]...)
}

// TestServeExportsTraces runs `hookrelay serve` with HOOKRELAY_TRACING=true
// and the standard OTEL_ variables pointing at a loopback collector: a
// callback reaches the receiver with a traceparent, and the collector gets,
// in that trace, the request's span and the attempt's. Not parallel: the
// OpenTelemetry SDK reads its variables from the process environment.
func TestServeExportsTraces(t *testing.T) {
	col := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	got := make(chan string, 1)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Traceparent"):
		default:
		}
	}))
	t.Cleanup(sink.Close)

	s := startServe(t, map[string]string{"HOOKRELAY_TRACING": "true"})
	carrierKey, _, _ := routeToSink(t, s, sink.URL+"/hook")
	require.Equal(t, http.StatusAccepted, apiCall(t, "POST", s.URL+"/v1/callbacks", carrierKey,
		map[string]any{"tracking_no": "TRACE1", "status": "moving"}, nil))
	var tp string
	select {
	case tp = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("not delivered")
	}
	sc, ok := tracing.Parse(tp)
	require.True(t, ok, "traceparent %q", tp)
	tid := sc.TraceID().String()
	testenv.EventuallyErr(t, 30*time.Second, func() error {
		if names := col.spans(tid); len(names) < 2 {
			return fmt.Errorf("spans of trace %s: %v", tid, names)
		}
		return nil
	})
	require.ElementsMatch(t, []string{"POST /v1/callbacks", "hookrelay.deliver"}, col.spans(tid))
	require.NoError(t, s.Stop(t))
}
