package load

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const metricsBefore = `# HELP hookrelay_dispatch_claim_seconds Time to claim a batch.
# TYPE hookrelay_dispatch_claim_seconds histogram
hookrelay_dispatch_claim_seconds_bucket{queue="0",le="0.001"} 10
hookrelay_dispatch_claim_seconds_bucket{queue="0",le="0.005"} 20
hookrelay_dispatch_claim_seconds_bucket{queue="0",le="+Inf"} 20
hookrelay_dispatch_claim_seconds_sum{queue="0"} 0.05
hookrelay_dispatch_claim_seconds_count{queue="0"} 20
hookrelay_dispatch_claim_seconds_bucket{queue="1",le="0.001"} 0
hookrelay_dispatch_claim_seconds_bucket{queue="1",le="0.005"} 0
hookrelay_dispatch_claim_seconds_bucket{queue="1",le="+Inf"} 0
hookrelay_dispatch_claim_seconds_total_bucket{le="1"} 999
`

const metricsAfter = `hookrelay_dispatch_claim_seconds_bucket{queue="0",le="0.001"} 60
hookrelay_dispatch_claim_seconds_bucket{queue="0",le="0.005"} 110
hookrelay_dispatch_claim_seconds_bucket{queue="0",le="+Inf"} 120
hookrelay_dispatch_claim_seconds_bucket{queue="1",le="0.001"} 50
hookrelay_dispatch_claim_seconds_bucket{queue="1",le="0.005"} 100
hookrelay_dispatch_claim_seconds_bucket{queue="1",le="+Inf"} 100
`

func TestParseHistogramSumsLabelSets(t *testing.T) {
	t.Parallel()
	h, err := ParseHistogram(strings.NewReader(metricsBefore), "hookrelay_dispatch_claim_seconds")
	require.NoError(t, err)
	require.Equal(t, []float64{0.001, 0.005, math.Inf(1)}, h.Bounds)
	require.Equal(t, []float64{10, 20, 20}, h.Counts, "another metric sharing the prefix is ignored")
	require.Equal(t, 20.0, h.Total())

	missing, err := ParseHistogram(strings.NewReader(metricsBefore), "nope")
	require.NoError(t, err)
	require.Zero(t, missing.Total())
	require.True(t, math.IsNaN(missing.Quantile(0.5)))
}

func TestParseHistogramRejectsGarbage(t *testing.T) {
	t.Parallel()
	_, err := ParseHistogram(strings.NewReader(`x_bucket{le="abc"} 1`), "x")
	require.Error(t, err)
	_, err = ParseHistogram(strings.NewReader(`x_bucket{le="1"} many`), "x")
	require.Error(t, err)
}

func TestHistogramDeltaQuantiles(t *testing.T) {
	t.Parallel()
	before, err := ParseHistogram(strings.NewReader(metricsBefore), "hookrelay_dispatch_claim_seconds")
	require.NoError(t, err)
	after, err := ParseHistogram(strings.NewReader(metricsAfter), "hookrelay_dispatch_claim_seconds")
	require.NoError(t, err)
	d := after.Sub(before)
	// cumulative: ≤1ms 100, ≤5ms 190, +Inf 200
	require.Equal(t, []float64{100, 190, 200}, d.Counts)
	// p50: rank 100 is the top of the first bucket
	require.InDelta(t, 0.001, d.Quantile(0.5), 1e-12)
	// p25: rank 50 of 100 in [0, 1ms] → 0.5 ms
	require.InDelta(t, 0.0005, d.Quantile(0.25), 1e-12)
	// p90: rank 180 in (1ms, 5ms] holding 90 → 1 + 4×80/90 ms
	require.InDelta(t, 0.001+0.004*80.0/90.0, d.Quantile(0.9), 1e-12)
	// p99: rank 198 is in the +Inf bucket → the largest finite bound
	require.InDelta(t, 0.005, d.Quantile(0.99), 1e-12)
}

func TestHistogramSubAfterRestartAndAdd(t *testing.T) {
	t.Parallel()
	before, _ := ParseHistogram(strings.NewReader(metricsAfter), "hookrelay_dispatch_claim_seconds")
	after, _ := ParseHistogram(strings.NewReader(metricsBefore), "hookrelay_dispatch_claim_seconds")
	// counters went down: the process restarted, the new counts are the delta
	require.Equal(t, after, after.Sub(before))
	// a process that did not exist at the start
	require.Equal(t, after.Counts, after.Sub(Histogram{}).Counts)

	sum := before.Add(after)
	require.Equal(t, []float64{120, 230, 240}, sum.Counts)
}

func TestScrapeHistogramsReadsSeveralNames(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(metricsBefore + `x_bucket{le="1"} 3` + "\n" + `x_bucket{le="+Inf"} 4` + "\n"))
	}))
	defer srv.Close()
	hs, err := ScrapeHistograms(context.Background(), srv.Client(), srv.URL, "hookrelay_dispatch_claim_seconds", "x", "absent")
	require.NoError(t, err)
	require.Equal(t, 20.0, hs["hookrelay_dispatch_claim_seconds"].Total())
	require.Equal(t, 4.0, hs["x"].Total())
	require.Zero(t, hs["absent"].Total())
	_, err = ScrapeHistograms(context.Background(), srv.Client(), "http://127.0.0.1:1/metrics", "x")
	require.Error(t, err)
}
