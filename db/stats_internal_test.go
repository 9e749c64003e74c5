package db

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLatencyHistogramPercentile: percentiles of a histogram merged from
// several slices are within 0.5 % of percentile_cont over the raw values.
func TestLatencyHistogramPercentile(t *testing.T) {
	h := latencyHistogram{}
	require.Zero(t, h.percentile(0.5), "empty")

	rng := rand.New(rand.NewPCG(1, 2))
	var raw []float64
	for slice := range 10 {
		part := latencyHistogram{} // one slice's rows, as AttemptHistogram returns them
		for range 1000 + 100*slice {
			v := math.Exp(rng.NormFloat64()*1.5 + 3) // log-normal around 20 ms
			raw = append(raw, v)
			part[int32(math.Floor(math.Log(v)/math.Log(1.01)))]++
		}
		for b, n := range part {
			h[b] += n
		}
	}
	slices.Sort(raw)
	exact := func(q float64) float64 { // percentile_cont
		r := q * float64(len(raw)-1)
		lo := int(math.Floor(r))
		if lo+1 >= len(raw) {
			return raw[lo]
		}
		return raw[lo] + (r-float64(lo))*(raw[lo+1]-raw[lo])
	}
	for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		require.InEpsilon(t, exact(q), h.percentile(q), 0.005, "q=%v", q)
	}

	one := latencyHistogram{}
	one[int32(math.Floor(math.Log(42)/math.Log(1.01)))]++
	require.InEpsilon(t, 42, one.percentile(0.99), 0.005, "a single value")
}
