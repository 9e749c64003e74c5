package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkIngestCallbacks measures ingest alone: HTTP on loopback →
// validation, parsing, fan-out to one endpoint → group commit → 202. Every
// acknowledged callback is a committed message and delivery. The figure to
// read is callbacks/s. BENCH_FLUSHERS overrides the concurrent batches,
// BENCH_CLIENTS the concurrent requests (default 128); BENCH_TRACING=1
// traces every callback (spans batched to an exporter that drops them);
// BENCH_ADAPTER=1 gives the carrier an adapter (benchAdapter) and the
// endpoint the canonical format, for the side by side with adapters off.
func BenchmarkIngestCallbacks(b *testing.B) {
	cfg := privateOK()
	if v, err := strconv.Atoi(os.Getenv("BENCH_FLUSHERS")); err == nil {
		cfg.Batcher.Flushers = v
	}
	if os.Getenv("BENCH_TRACING") == "1" {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		cfg.Tracer = tp.Tracer("bench")
	}
	bd := setup(b, cfg)
	w := bd.mustCreate(b, "/v1/carriers", adminToken, map[string]any{"name": "bench"})
	m := bd.mustCreate(b, "/v1/merchants", adminToken, map[string]any{"name": "bench"})
	ep := map[string]any{"url": "http://127.0.0.1:9/hook"}
	if os.Getenv("BENCH_ADAPTER") == "1" {
		bd.mustCreate(b, "/v1/carriers/"+w["id"].(string)+"/adapters", adminToken, map[string]any{"source": benchAdapter})
		st, out := bd.call(b, http.MethodPost, "/v1/carriers/"+w["id"].(string)+"/adapters/1/activate", adminToken, nil)
		if st != http.StatusOK {
			b.Fatalf("activate: %d %v", st, out)
		}
		ep["format"] = "canonical"
	}
	bd.mustCreate(b, "/v1/endpoints", m["api_key"].(string), ep)
	key := w["api_key"].(string)
	clients := 128 // concurrent requests: batches can only be as big as this
	if v, err := strconv.Atoi(os.Getenv("BENCH_CLIENTS")); err == nil && v > 0 {
		clients = v
	}
	var seq atomic.Int64
	rate := postParallel(b, bd.URL+"/v1/callbacks", key, clients, http.StatusAccepted, func() []byte {
		n := seq.Add(1)
		return fmt.Appendf(nil, `{"tracking_no":"SF%08d","status":"in_transit","merchant_id":"%s","events":[{"at":"2026-11-29T10:00:00Z","where":"Shenzhen hub"}],"weight_kg":1.25}`, n%5000, m["id"])
	})
	b.ReportMetric(rate, "callbacks/s")
	mfs, err := bd.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		h := mf.GetMetric()[0].GetHistogram()
		switch mf.GetName() {
		case "hookrelay_ingest_batch_size":
			b.ReportMetric(h.GetSampleSum()/float64(h.GetSampleCount()), "callbacks/batch")
		case "hookrelay_ingest_commit_seconds":
			b.ReportMetric(1000*h.GetSampleSum()/float64(h.GetSampleCount()), "ms/commit")
		}
	}
}

// postParallel posts callbacks with key from clients concurrent clients for
// b.N requests, each body made by body, fails the benchmark on any answer
// other than want, and returns the requests per second.
func postParallel(b *testing.B, url, key string, clients, want int, body func() []byte) float64 {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body()))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	return float64(b.N) / time.Since(start).Seconds()
}

// benchAdapter maps the benchmark's callbacks to tracking.updated events.
const benchAdapter = `const STATUS = {in_transit: "in_transit", delivered: "delivered"};
function transform(cb) {
  const b = cb.body;
  const last = b.events[b.events.length - 1];
  return {
    type: "tracking.updated",
    ordering_key: b.tracking_no,
    merchant: b.merchant_id,
    occurred_at: last.at,
    data: {
      tracking_number: b.tracking_no,
      carrier: cb.carrier,
      status: STATUS[b.status] || "exception",
      occurred_at: last.at,
      location: {city: last.where},
    },
  };
}`
