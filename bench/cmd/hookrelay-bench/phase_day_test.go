package main

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
)

// The busy window holds the share of the day's callbacks asked for: with a
// valley at 1/8 of the peak, 60 % of them take 15.8 % of the day.
func TestDayWindow(t *testing.T) {
	t.Parallel()
	o := dayOptions{peak: 800, length: 100 * time.Second, peakShare: 0.6}
	start, length := o.window()
	require.InDelta(t, 15.79, length.Seconds(), 0.01)
	require.Equal(t, o.length, 2*start+length, "centred")
	inPeak := o.peak * length.Seconds()
	all := inPeak + o.peak/valleyRatio*(o.length-length).Seconds()
	require.InDelta(t, 0.6, inPeak/all, 1e-6)
}

// TestDayAndIdlePhasesSmoke runs the day phase in small and the idle phase
// and checks their lines: everything delivered once, in order, both parts
// of the day measured; the idle phase's CPU. No figure is asserted.
func TestDayAndIdlePhasesSmoke(t *testing.T) {
	env := map[string]string{"DATABASE_URL": dbtest.ServerURL()}
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"hookrelay-bench", "-hookrelay", hookrelayBin, "--phases", "day,idle",
		"--day-length", "4s", "--day-peak", "80", "--idle", "1s", "--warmup", "0",
		"--keys", "12", "--concurrency", "4", "--merchants", "2", "--large-fraction", "0",
		"--drain-timeout", "20s"}
	err := run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())

	var phases []string
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		phases = append(phases, line["phase"].(string))
		switch line["phase"] {
		case "day":
			ack := line["acknowledged"].(float64)
			require.Positive(t, ack, sc.Text())
			require.Equal(t, ack, line["delivered"], "all delivered: %s", sc.Text())
			require.Zero(t, line["lost"], sc.Text())
			require.Zero(t, line["duplicates"], sc.Text())
			require.Zero(t, line["order_violations"], sc.Text())
			for _, f := range []string{"valley_e2e_p50_ms", "valley_e2e_p99_ms", "peak_e2e_p50_ms", "peak_e2e_p99_ms",
				"total_cpu_s_per_million", "commits_per_callback"} {
				require.NotNil(t, line[f], "%s: %s", f, sc.Text())
			}
		case "idle":
			require.GreaterOrEqual(t, line["pct_of_one_core"], 0.0, sc.Text())
			require.Positive(t, line["duration_s"], sc.Text())
		}
	}
	require.Equal(t, []string{"day", "idle"}, phases, "stderr:\n%s", stderr.String())
}
