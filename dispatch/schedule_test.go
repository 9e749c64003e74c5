package dispatch

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryDelayScheduleAndJitter(t *testing.T) {
	t.Parallel()
	mid := func() float64 { return 0.5 }
	for i, want := range DefaultRetrySchedule {
		got, ok := retryDelay(nil, nil, i+1, 0.2, mid)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	_, ok := retryDelay(nil, nil, len(DefaultRetrySchedule)+1, 0.2, mid)
	require.False(t, ok, "after the last delay comes the dead letter")

	lo, _ := retryDelay(nil, nil, 2, 0.2, func() float64 { return 0 })
	hi, _ := retryDelay(nil, nil, 2, 0.2, func() float64 { return 0.999999 })
	require.Equal(t, 4*time.Minute, lo)
	require.InDelta(t, float64(6*time.Minute), float64(hi), float64(time.Second))

	own := []time.Duration{time.Second, 2 * time.Second}
	d, ok := retryDelay(own, nil, 2, 0, nil)
	require.True(t, ok)
	require.Equal(t, 2*time.Second, d)
	_, ok = retryDelay(own, nil, 3, 0, nil)
	require.False(t, ok)
}

func TestRetryDelayQuickStepsComeFirst(t *testing.T) {
	t.Parallel()
	own := []time.Duration{5 * time.Second, time.Minute}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, time.Minute}
	for i, w := range want {
		got, ok := retryDelay(own, DefaultQuickRetries, i+1, 0, nil)
		require.True(t, ok, "failed attempt %d", i+1)
		require.Equal(t, w, got, "failed attempt %d", i+1)
	}
	_, ok := retryDelay(own, DefaultQuickRetries, len(want)+1, 0, nil)
	require.False(t, ok, "1 + 3 quick + 2 scheduled attempts, then the dead letter")
	lo, _ := retryDelay(own, DefaultQuickRetries, 1, 0.2, func() float64 { return 0 })
	require.Equal(t, 400*time.Millisecond, lo, "quick steps are jittered too")
	_, ok = retryDelay(own, []time.Duration{}, 3, 0, nil)
	require.False(t, ok, "no quick steps: 1 + n attempts")
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	d, ok := parseRetryAfter("120", now)
	require.True(t, ok)
	require.Equal(t, 2*time.Minute, d)
	d, ok = parseRetryAfter("999999", now)
	require.True(t, ok)
	require.Equal(t, time.Hour, d, "capped at 1 h")
	d, ok = parseRetryAfter(now.Add(30*time.Second).Format(http.TimeFormat), now)
	require.True(t, ok)
	require.Equal(t, 30*time.Second, d)
	_, ok = parseRetryAfter("soon", now)
	require.False(t, ok)
	_, ok = parseRetryAfter("", now)
	require.False(t, ok)
}
