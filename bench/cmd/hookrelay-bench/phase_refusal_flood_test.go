package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
)

func TestRefusalFloodFlags(t *testing.T) {
	t.Parallel()
	o, err := parseBenchFlags([]string{"--phases", "refusal-flood", "--flood-kind", "signature", "--flood-conns", "8"}, io.Discard)
	require.NoError(t, err)
	require.True(t, o.runs("refusal-flood"))
	require.Equal(t, "signature", o.flood.kind)
	require.Equal(t, 8, o.flood.conns)
	require.Equal(t, 1000.0, o.flood.rate, "default")
	require.Equal(t, 4, o.flood.carriers, "default")
	require.True(t, o.flood.alone, "default")
	for _, args := range [][]string{
		{"--flood-kind", "xml"},
		{"--flood-conns", "0"},
		{"--flood-carriers", "0"},
		{"--flood-valid-rate", "0"},
		{"--flood-rate", "-1"},
	} {
		_, err := parseBenchFlags(args, io.Discard)
		require.ErrorIs(t, err, errUsage, "%v", args)
	}
}

func TestFloodBody(t *testing.T) {
	t.Parallel()
	var v map[string]any
	require.Error(t, json.Unmarshal(floodBody("json", 1200), &v), "malformed")
	require.Len(t, floodBody("json", 1200), 1200)
	require.NoError(t, json.Unmarshal(floodBody("signature", 1200), &v), "well-formed: the signature is what is wrong")
	require.True(t, bytes.HasPrefix(floodBody("json", 10), []byte(`{"tracking_no"`)), "smaller than its fields: the fields")
}

// TestRefusalFloodSmoke runs the refusal-flood phase in small, for each kind
// of flood, and checks its two lines: every valid callback delivered once and
// in order in both; the flood refused (400 or 401), counted by the service,
// and the refusal log within its caps; then the flood alone, with its CPU
// per refusal. No latency is asserted.
func TestRefusalFloodSmoke(t *testing.T) {
	for _, kind := range []string{"json", "signature"} {
		t.Run(kind, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": dbtest.ServerURL()}
			var stdout, stderr syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			args := []string{"hookrelay-bench", "-hookrelay", hookrelayBin, "--phases", "refusal-flood",
				"--duration", "1500ms", "--warmup", "0", "--keys", "20", "--concurrency", "8", "--merchants", "2",
				"--large-fraction", "0", "--flood-valid-rate", "40", "--flood-carriers", "3", "--flood-conns", "4",
				"--flood-kind", kind, "--drain-timeout", "20s", "--dispatchers", "0"}
			if kind == "signature" {
				args = append(args, "--flood-rate", "200") // paced
			}
			err := run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr)
			require.NoError(t, err, "stderr:\n%s", stderr.String())

			want := map[string]int{"json": 400, "signature": 401}[kind]
			var phases []string
			sc := bufio.NewScanner(strings.NewReader(stdout.String()))
			for sc.Scan() {
				var line map[string]any
				require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
				phases = append(phases, line["phase"].(string))
				if line["phase"] == "refusal-flood-alone" {
					require.Zero(t, line["acknowledged"], sc.Text())
					require.Zero(t, line["valid_carriers"], sc.Text())
					require.Positive(t, line["flood_refused"], sc.Text())
					require.Equal(t, line["flood_sent"], line["flood_refused"], sc.Text())
					require.Equal(t, line["flood_refused"], line["service_counted_refusals"], sc.Text())
					require.Positive(t, line["service_cpu_ms_per_refusal"], sc.Text())
					require.GreaterOrEqual(t, line["postgres_cpu_ms_per_refusal"], 0.0, sc.Text())
					continue
				}
				ack := line["acknowledged"].(float64)
				require.Positive(t, ack, sc.Text())
				require.Equal(t, ack, line["delivered"], "all delivered: %s", sc.Text())
				require.Zero(t, line["lost"], sc.Text())
				require.Zero(t, line["duplicates"], sc.Text())
				require.Zero(t, line["order_violations"], sc.Text())
				require.NotContains(t, line, "rejected", "the valid carriers' callbacks all accepted: %s", sc.Text())
				require.Equal(t, 3.0, line["valid_carriers"], sc.Text())
				require.NotNil(t, line["ack_p99_ms"], sc.Text())
				require.NotNil(t, line["e2e_p99_ms"], sc.Text())
				if line["phase"] == "refusal-flood-off" {
					require.Zero(t, line["flood_sent"], sc.Text())
					require.Zero(t, line["refusals_not_logged"], sc.Text())
					continue
				}
				refused := line["flood_refused"].(float64)
				if kind == "signature" {
					// 200/s over the run (1.5 s and the drain's wait for
					// the flood's last answers), plus what the
					// connections held.
					require.LessOrEqual(t, refused, 200*(line["duration_s"].(float64)+0.5)+4, sc.Text())
				}
				require.Positive(t, refused, sc.Text())
				require.Equal(t, line["flood_sent"], refused, "every flood callback refused: %s", sc.Text())
				statuses := line["flood_statuses"].(map[string]any)
				require.Len(t, statuses, 1, sc.Text())
				require.Equal(t, refused, statuses[strconv.Itoa(want)], sc.Text())
				require.Positive(t, line["flood_refusals_per_sec"], sc.Text())
				require.Equal(t, refused, line["service_counted_refusals"], "the service counted each: %s", sc.Text())
				// The log keeps at most 20 of a carrier a minute (the run
				// may span two); the rest are counted, not stored.
				require.LessOrEqual(t, refused-line["refusals_not_logged"].(float64), 20.0*2, sc.Text())
				require.Zero(t, line["refusal_log_rows_lost"], sc.Text())
				require.NotNil(t, line["ack_p99_ratio"], sc.Text())
				require.NotNil(t, line["e2e_p99_ratio"], sc.Text())
			}
			require.Equal(t, []string{"refusal-flood-off", "refusal-flood-on", "refusal-flood-alone"}, phases, "stderr:\n%s", stderr.String())
		})
	}
}
