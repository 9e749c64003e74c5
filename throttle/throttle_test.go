package throttle

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// Free failures pass; then the wait doubles per failure up to Max; other
// addresses are unaffected.
func TestThrottleDelays(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	th := New(Config{Now: c.now})
	const a, b = "192.0.2.1", "192.0.2.2"
	for range DefaultFree - 1 {
		th.Failed(SurfaceAPI, a)
		w, _ := th.Wait(SurfaceAPI, a)
		require.Zero(t, w)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for _, d := range want {
		th.Failed(SurfaceAPI, a)
		w, known := th.Wait(SurfaceAPI, a)
		require.True(t, known)
		require.Equal(t, d, w)
		c.t = c.t.Add(d)
		w, _ = th.Wait(SurfaceAPI, a)
		require.Zero(t, w, "the wait is over")
	}
	w, known := th.Wait(SurfaceAPI, b)
	require.Zero(t, w)
	require.False(t, known)

	for range 30 {
		th.Failed(SurfaceAPI, a)
	}
	w, _ = th.Wait(SurfaceAPI, a)
	require.Equal(t, DefaultMax, w, "capped")
}

// Failures are forgiven with time, Free per Max: a client failing no
// faster than that never waits; one that stops failing is back to Free
// free failures after Max.
func TestThrottleForgivesWithTime(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	th := New(Config{Now: c.now})
	const a = "192.0.2.1"
	every := DefaultMax / DefaultFree
	for range DefaultFree - 1 {
		th.Failed(SurfaceAPI, a)
	}
	for i := range 100 {
		c.t = c.t.Add(every)
		th.Failed(SurfaceAPI, a)
		w, known := th.Wait(SurfaceAPI, a)
		require.True(t, known)
		require.Zero(t, w, "failure %d, one per %s", i, every)
	}
	th.Failed(SurfaceAPI, a)
	w, _ := th.Wait(SurfaceAPI, a)
	require.Equal(t, time.Second, w, "one more at once")

	// Forgiven one by one: after every, one failure less counts.
	c.t = c.t.Add(time.Second + every)
	th.Failed(SurfaceAPI, a)
	w, _ = th.Wait(SurfaceAPI, a)
	require.Equal(t, time.Second, w, "one forgiven, one added")
}

// A steady guesser gets about one guess per Max/Free however it spaces
// them: it tries whenever its wait is over.
func TestThrottleSteadyGuesser(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	th := New(Config{Now: c.now})
	const a = "192.0.2.1"
	start := c.t
	guesses := 0
	for c.t.Sub(start) < 24*time.Hour {
		if w, _ := th.Wait(SurfaceAPI, a); w > 0 {
			c.t = c.t.Add(w)
			continue
		}
		th.Failed(SurfaceAPI, a)
		guesses++
	}
	perDay := int(24 * time.Hour / (DefaultMax / DefaultFree))
	require.LessOrEqual(t, guesses, perDay+DefaultFree+20, "guesses in a day")
	t.Logf("%d guesses in a day (forgiven: %d)", guesses, perDay)
}

// An address with no failure for Max starts afresh.
func TestThrottleForgets(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	th := New(Config{Now: c.now, Free: 2, Max: time.Minute})
	th.Failed(SurfaceDashboard, "192.0.2.1")
	th.Failed(SurfaceDashboard, "192.0.2.1")
	w, _ := th.Wait(SurfaceDashboard, "192.0.2.1")
	require.Equal(t, time.Second, w)
	c.t = c.t.Add(time.Minute)
	w, known := th.Wait(SurfaceDashboard, "192.0.2.1")
	require.Zero(t, w)
	require.False(t, known)
	require.Zero(t, th.Len())
	th.Failed(SurfaceDashboard, "192.0.2.1")
	w, _ = th.Wait(SurfaceDashboard, "192.0.2.1")
	require.Zero(t, w, "one failure after a fresh start")
}

// Spraying addresses cannot grow the table beyond Entries; the address that
// failed least recently goes first.
func TestThrottleBounded(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	th := New(Config{Now: c.now, Entries: 100, Free: 1})
	th.Failed(SurfaceAPI, "198.51.100.1")
	for i := range 10_000 {
		th.Failed(SurfaceAPI, fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255))
		require.LessOrEqual(t, th.Len(), 100)
	}
	_, known := th.Wait(SurfaceAPI, "198.51.100.1")
	require.False(t, known, "the oldest entry was evicted")
	w, _ := th.Wait(SurfaceAPI, "10.0.39.15") // the last one sprayed
	require.Equal(t, time.Second, w)
	require.Len(t, th.byKey, th.order.Len())
}

// IPv6 addresses of one /64 share an entry; IPv4-mapped ones count as IPv4.
func TestThrottleKeys(t *testing.T) {
	require.Equal(t, keyOf("2001:db8:1:2::1"), keyOf("2001:db8:1:2:ffff::9"))
	require.NotEqual(t, keyOf("2001:db8:1:2::1"), keyOf("2001:db8:1:3::1"))
	require.Equal(t, "192.0.2.7", keyOf("::ffff:192.0.2.7"))

	r, _ := http.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	require.Equal(t, "192.0.2.7", ClientAddr(r))
	r.RemoteAddr = "[2001:db8::1]:443"
	require.Equal(t, "2001:db8::1", ClientAddr(r))
}
