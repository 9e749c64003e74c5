package dispatch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// BenchmarkDispatchLoopback drains a backlog of 1.2 KB deliveries (2,000
// keys, 32 queues) to a loopback sink through one dispatcher and reports
// deliveries/s and the dispatcher process's CPU per delivery (the sink runs
// in the same process and is included; PostgreSQL is not).
//
// Run: go test ./dispatch -run '^$' -bench DispatchLoopback -benchtime 20000x
// (BENCH_TRACING=1: every message stored with a traceparent, and every claim
// and attempt traced, spans batched to an exporter that drops them).
func BenchmarkDispatchLoopback(b *testing.B) {
	traced := os.Getenv("BENCH_TRACING") == "1"
	store := dbtest.New(b)
	ctx := context.Background()
	var got atomic.Int64
	sink := newHTTPTestServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	ep, _ := dbtest.Endpoint(b, store, &dbtest.EndpointOpts{URL: sink.URL, MaxInFlight: 1000})
	carrier, _ := dbtest.Carrier(b, store, nil)
	body := make([]byte, 1200)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	sum := sha256.Sum256(body)
	n := b.N
	for start := 0; start < n; start += 500 {
		var batch []db.NewMessage
		for i := start; i < min(n, start+500); i++ {
			key := fmt.Sprintf("bench-%d", i%2000)
			batch = append(batch, db.NewMessage{
				CarrierID: carrier.ID, EventType: "moving", OrderingKey: key, Queue: hookrelay.QueueFor(key, 32),
				Payload: body, PayloadSize: len(body), PayloadSHA256: sum[:], EndpointIDs: []int64{ep.ID},
			})
			if traced {
				batch[len(batch)-1].Traceparent = fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", i+1)
			}
		}
		if _, err := store.MessageInsertMany(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	cfg := testConfig()
	cfg.Queues, cfg.Lease = 32, 30*time.Second
	if traced {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		cfg.Tracer = tp.Tracer("bench")
	}
	b.ResetTimer()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	d := New(testLogger(b), cfg, store, nil, nil)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	for got.Load() < int64(n) {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cancel()
	<-done
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/delivery")
}
