package dispatch

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultRetrySchedule is the wait after each failed attempt (docs/guarantees.md): at
// most 1 + len attempts, then a dead letter.
var DefaultRetrySchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// maxRetryAfter caps a Retry-After the endpoint asks for.
const maxRetryAfter = time.Hour

// retryDelay returns the wait before the next attempt after failed attempt
// number attempt (1-based): quick[attempt-1] for the first len(quick)
// failures, then schedule (the default when empty) from its first delay;
// with ±jitter (a fraction) drawn from rnd. It reports whether there is a
// next attempt at all: at most 1 + len(quick) + len(schedule) attempts.
func retryDelay(schedule, quick []time.Duration, attempt int, jitter float64, rnd func() float64) (time.Duration, bool) {
	if len(schedule) == 0 {
		schedule = DefaultRetrySchedule
	}
	var d time.Duration
	switch n := attempt - len(quick); {
	case attempt < 1, n > len(schedule):
		return 0, false
	case n < 1:
		d = quick[attempt-1]
	default:
		d = schedule[n-1]
	}
	if jitter > 0 && rnd != nil {
		d = time.Duration(float64(d) * (1 + jitter*(2*rnd()-1)))
	}
	return max(d, 0), true
}

// defaultRand is the jitter source of production dispatchers.
func defaultRand() float64 { return rand.Float64() }

// parseRetryAfter reads a Retry-After header (seconds or an HTTP date) into a
// wait capped at maxRetryAfter; ok is false when absent or unreadable.
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	} else {
		return 0, false
	}
	return min(max(d, 0), maxRetryAfter), true
}
