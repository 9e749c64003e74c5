package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestBenchSmoke runs a tiny benchmark end to end (`hookrelay serve` child
// processes of the binary TestMain built, loopback sink) and checks the shape
// of every phase line and that nothing was lost, duplicated or reordered. No
// throughput is asserted.
//
// The one-process variant (--dispatchers 0) runs every role in the service
// process and restarts it without dispatch to fill the backlog.
func TestBenchSmoke(t *testing.T) {
	t.Run("dispatch-process", func(t *testing.T) { benchSmoke(t) })
	t.Run("one-process", func(t *testing.T) { benchSmoke(t, "--dispatchers", "0") })
}

func benchSmoke(t *testing.T, extra ...string) {
	env := map[string]string{"DATABASE_URL": dbtest.ServerURL()}
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	latencyLog := filepath.Join(t.TempDir(), "latency.log")
	args := append([]string{"hookrelay-bench", "-hookrelay", hookrelayBin, "--latency-log", latencyLog,
		"--duration", "1500ms", "--rates", "40", "--warmup", "0",
		"--keys", "12", "--concurrency", "4", "--merchants", "2", "--endpoints-per-merchant", "2",
		"--large-fraction", "0.2", "--large-bytes", "9000", "--backlog", "60",
		"--drain-timeout", "20s",
	}, extra...)
	err := run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())

	_, pressureErr := load.CPUPressure() // the kernel reports CPU pressure here
	var phases []string
	delivered := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "one JSON object per line: %s", sc.Text())
		for _, f := range []string{"phase", "offered_per_sec", "ingest_per_sec", "delivered_per_sec",
			"e2e_p50_ms", "e2e_p90_ms", "e2e_p99_ms", "e2e_max_ms", "sent", "acknowledged", "delivered",
			"lost", "duplicates", "order_violations", "service_cpu_ms_per_callback",
			"postgres_cpu_ms_per_callback", "claim_p50_ms", "claim_p99_ms"} {
			require.Contains(t, line, f, "phase line %s", sc.Text())
		}
		phases = append(phases, line["phase"].(string))
		delivered[line["phase"].(string)] = int(line["delivered"].(float64))
		ack := line["acknowledged"].(float64)
		require.Positive(t, ack, sc.Text())
		require.Equal(t, ack*2, line["delivered"], "fan-out 2, all delivered: %s", sc.Text())
		require.Zero(t, line["lost"], sc.Text())
		require.Zero(t, line["duplicates"], sc.Text())
		require.Zero(t, line["order_violations"], sc.Text())
		require.Zero(t, line["sink_bad_signatures"], sc.Text())
		require.NotNil(t, line["e2e_p99_ms"], sc.Text())
		require.NotNil(t, line["claim_p99_ms"], "claims observed on /metrics: %s", sc.Text())
		require.NotNil(t, line["claim_server_p99_ms"], "claims' server time observed on /metrics: %s", sc.Text())
		require.NotNil(t, line["sched_latency_p99_ms"], "the scheduler's latency on /metrics: %s", sc.Text())
		require.GreaterOrEqual(t, line["bench_cpu_ms_per_callback"], 0.0, "the load generator's and sink's CPU per callback: %s", sc.Text())
		if pressureErr == nil {
			require.GreaterOrEqual(t, line["cpu_pressure_pct"], 0.0, "the machine's CPU pressure over the phase: %s", sc.Text())
			require.LessOrEqual(t, line["cpu_pressure_pct"], 100.0, sc.Text())
		} else {
			require.NotContains(t, line, "cpu_pressure_pct", sc.Text())
		}
		if line["phase"] == "backlog-drain" {
			// From starting dispatch to the first delivery: positive, and
			// short on an idle machine (the claim loops start at once).
			require.Greater(t, line["first_delivery_s"], 0.0, sc.Text())
			require.Less(t, line["first_delivery_s"], 30.0, sc.Text())
		} else {
			require.NotContains(t, line, "first_delivery_s", sc.Text())
		}
	}
	require.Equal(t, []string{"max-rate", "rate-40", "backlog-drain"}, phases, "stderr:\n%s", stderr.String())

	// --latency-log: one line per delivery of each phase, with a
	// request start inside the run and a positive latency.
	raw, err := os.ReadFile(latencyLog)
	require.NoError(t, err)
	logged := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 3, "phase, start, latency: %q", l)
		start, err := strconv.ParseInt(f[1], 10, 64)
		require.NoError(t, err, l)
		require.WithinDuration(t, time.Now(), time.UnixMicro(start), 3*time.Minute, l)
		lat, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err, l)
		require.Positive(t, lat, l)
		logged[f[0]]++
	}
	require.Equal(t, delivered, logged, "latency log lines per phase against the phases' delivered counts")
}
