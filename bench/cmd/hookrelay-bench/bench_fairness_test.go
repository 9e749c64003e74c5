package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
