package dispatch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
func BenchmarkDispatchLoopback(b *testing.B) {
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
		}
		if _, err := store.MessageInsertMany(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	cfg := testConfig()
	cfg.Queues, cfg.Lease = 32, 30*time.Second
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
