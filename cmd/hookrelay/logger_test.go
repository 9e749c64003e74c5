package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLogDurationsAsStrings: both log formats write a duration as people
// read it ("30s"), never as nanoseconds, in groups too.
func TestLogDurationsAsStrings(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	newLogger(config{LogFormat: "json", LogLevel: "info"}, &buf).
		Info("leases", "lease", 30*time.Second, slog.Group("wait", "poll", 1500*time.Microsecond))
	var rec struct {
		Lease string `json:"lease"`
		Wait  struct {
			Poll string `json:"poll"`
		} `json:"wait"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), buf.String())
	require.Equal(t, "30s", rec.Lease)
	require.Equal(t, "1.5ms", rec.Wait.Poll)
	require.NotContains(t, buf.String(), "30000000000")

	buf.Reset()
	newLogger(config{LogFormat: "text", LogLevel: "info"}, &buf).Info("leases", "lease", 30*time.Second)
	require.True(t, strings.Contains(buf.String(), "lease=30s"), buf.String())
}
