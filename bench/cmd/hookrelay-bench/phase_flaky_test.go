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

// TestFlakyPhaseSmoke runs the flaky phase in small (a third of first
// attempts failed) and checks its two lines: everything delivered once, in
// order with "key"; the endpoints switched to "none" for the second line.
// No latency is asserted.
func TestFlakyPhaseSmoke(t *testing.T) {
	env := map[string]string{"DATABASE_URL": dbtest.ServerURL()}
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"hookrelay-bench", "-hookrelay", hookrelayBin, "--phases", "flaky",
		"--duration", "1500ms", "--warmup", "0", "--flaky-keys", "6", "--flaky-rate", "30",
		"--flaky-failure", "0.3", "--concurrency", "4", "--merchants", "2", "--large-fraction", "0",
		"--drain-timeout", "20s"}
	err := run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())

	var orderings []string
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		require.Equal(t, "flaky-"+line["ordering"].(string), line["phase"], sc.Text())
		orderings = append(orderings, line["ordering"].(string))
		ack := line["acknowledged"].(float64)
		require.Positive(t, ack, sc.Text())
		require.Equal(t, ack, line["delivered"], "all delivered: %s", sc.Text())
		require.Zero(t, line["lost"], sc.Text())
		require.Zero(t, line["duplicates"], sc.Text())
		require.Equal(t, 0.3, line["first_attempt_failure_rate"], sc.Text())
		require.Positive(t, line["delivered_during_load_per_sec"], sc.Text())
		require.NotNil(t, line["e2e_p99_ms"], sc.Text())
		if line["ordering"] == "key" {
			require.Zero(t, line["order_violations"], sc.Text())
		}
	}
	require.Equal(t, []string{"key", "none"}, orderings, "stderr:\n%s", stderr.String())
}
