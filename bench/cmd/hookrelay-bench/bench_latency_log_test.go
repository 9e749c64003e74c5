package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// TestLatencyLogKeepsEachStartWithItsLatency writes the latency log the way
// a phase's result does — percentiles first, then the log — and checks that
// every line still pairs a callback's request start with its own latency.
// The percentiles once sorted the latencies in place, and the log then gave
// the largest latencies to the last keys of the ledger, whatever their
// callbacks' real latencies were.
func TestLatencyLogKeepsEachStartWithItsLatency(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMicro(1_800_000_000_000_000)
	a := load.Accounting{
		Latencies: []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
		SentAt:    []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)},
	}
	var r load.Result
	r.SetLatencies(a.Latencies)
	require.Equal(t, 20.0, *r.E2EP50ms)
	require.Equal(t, 30.0, *r.E2EMaxms)

	path := filepath.Join(t.TempDir(), "latency.log")
	require.NoError(t, appendLatencyLog(path, "rate-2000", a))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "rate-2000 1800000000000000 30000\n"+
		"rate-2000 1800000001000000 10000\n"+
		"rate-2000 1800000002000000 20000\n", string(raw))
}
