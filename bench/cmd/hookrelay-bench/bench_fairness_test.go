package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

func TestFairnessPhaseFlags(t *testing.T) {
	t.Parallel()
	o, err := parseBenchFlags([]string{"--phases", "burst,slow-tenant,many-endpoints", "--burst", "1000",
		"--slow-latency", "500ms", "--many-endpoints", "50"}, io.Discard)
	require.NoError(t, err)
	require.True(t, o.runs("burst") && o.runs("slow-tenant") && o.runs("many-endpoints"))
	require.Equal(t, int64(1000), o.fair.burst)
	require.Equal(t, 500*time.Millisecond, o.fair.slowLatency)
	require.Equal(t, 50, o.fair.manyEndpoints)
	require.Equal(t, 200.0, o.fair.burstRate, "default")
}

// TestBurstSplitsBAtASent: B's latencies are split by whether the callback
// was sent before A's last acknowledgement or after it.
func TestBurstSplitsBAtASent(t *testing.T) {
	t.Parallel()
	aSent := time.Unix(1000, 0)
	a := load.Accounting{
		Latencies: []time.Duration{400 * time.Millisecond, 200 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 20 * time.Millisecond},
		SentAt:    []time.Time{aSent.Add(-2 * time.Second), aSent.Add(-time.Second), aSent, aSent.Add(time.Second), aSent.Add(2 * time.Second)},
	}
	var r burstBResult
	r.split(a, aSent)
	require.Equal(t, 200.0, *r.SendingP50ms)
	require.Equal(t, 400.0, *r.SendingP99ms)
	require.Equal(t, 20.0, *r.DrainingP50ms)
	require.Equal(t, 30.0, *r.DrainingP99ms)

	r = burstBResult{}
	r.split(load.Accounting{}, aSent)
	require.Nil(t, r.SendingP99ms, "no callbacks: no figure")
}
