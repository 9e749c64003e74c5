package adapter_test

import (
	"context"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/adapter"
)

// benchInput is the 1.2 KB callback of testdata/bench.
func benchInput(tb testing.TB) adapter.Input {
	tb.Helper()
	body, err := os.ReadFile("testdata/bench/callback.json")
	if err != nil {
		tb.Fatal(err)
	}
	return adapter.Input{
		Body:       body,
		Headers:    http.Header{"Content-Type": {"application/json"}, "X-Sign": {"3d5f0c7a"}},
		Carrier:    "sfx",
		ReceivedAt: time.Date(2026, 12, 4, 0, 15, 2, 0, time.UTC),
	}
}

func benchProgram(tb testing.TB) *adapter.Program {
	tb.Helper()
	src, err := os.ReadFile("testdata/bench/adapter.js")
	if err != nil {
		tb.Fatal(err)
	}
	p, err := adapter.Compile(string(src), adapter.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkRun: the ~30-line adapter of testdata/bench on its 1.2 KB
// callback, JSON parse and event conversion included, one goroutine.
func BenchmarkRun(b *testing.B) {
	p := benchProgram(b)
	in := benchInput(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(in.Body)))
	cpu0 := processCPU(b)
	for b.Loop() {
		if _, drop, err := p.Run(ctx, in); err != nil || drop {
			b.Fatal(drop, err)
		}
	}
	reportCPU(b, cpu0)
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per op since cpu0 ("cpu-ns/op",
// garbage collection included): on a shared machine ns/op is wall time
// and counts the time other processes ran.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
