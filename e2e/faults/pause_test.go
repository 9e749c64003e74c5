//go:build faults

package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// TestPausedDispatcher: one of two dispatchers is frozen (SIGSTOP) for five
// lease times while it holds queues and deliveries in flight, then resumed
// (SIGCONT). The other takes its queues over; when the frozen one wakes up
// with stale claims, its acknowledgements are refused (fenced by the lease
// token): no delivery is recorded as succeeded twice, and order per key
// holds at the merchant.
func TestPausedDispatcher(t *testing.T) {
	const pauseFor = 5 * lease
	url := dbURL(t)
	s3 := startS3(t)
	env := serviceEnv(url, s3, nil)
	api := newProc(t, "api", "api,maintenance", env)
	api.start()
	d1 := newProc(t, "dispatch1", "dispatch", env)
	d1.start()
	d2 := newProc(t, "dispatch2", "dispatch", env)
	d2.start()
	dumpLogs(t, api, d1, d2)

	// A sink latency keeps deliveries in flight when the pause comes.
	w := newWorld(t, api.URL(), 2, 30, load.SinkConfig{Latency: 30 * time.Millisecond})
	l := w.load(loadConfig{Targets: []string{api.URL()}, Interval: 100 * time.Millisecond})
	stop := runLoad(l)
	time.Sleep(3 * time.Second)
	d1.pause()
	time.Sleep(pauseFor)
	d1.resume()
	time.Sleep(3 * time.Second)
	stop()
	drain := w.drain(90 * time.Second)

	// The sink has seen every delivery; their acknowledgements (and so their
	// attempt rows) are written in batches a few milliseconds later.
	expected, _ := w.ledger.Progress()
	var successes int64
	for deadline := time.Now().Add(15 * time.Second); ; {
		var err error
		successes, err = queryInt(t.Context(), url, `SELECT count(*) FROM delivery_attempts WHERE outcome = 'success'`)
		require.NoError(t, err)
		if successes >= expected || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	twice, err := queryInt(t.Context(), url, `SELECT count(*) FROM (
		SELECT delivery_id FROM delivery_attempts WHERE outcome = 'success'
		GROUP BY delivery_id HAVING count(*) > 1) x`)
	require.NoError(t, err)
	a := w.account(result{Scenario: "dispatcher paused past its lease", Faults: 1, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: maxLatency(w.ledger).String(),
		Extra:       map[string]any{"success_attempt_rows": successes, "deliveries_acknowledged_twice": twice, "paused_for": pauseFor.String()}}, l, inFlightBound)
	require.Zero(t, twice, "deliveries recorded as succeeded more than once: a stale claim was acknowledged")
	// Exactly one success row per delivery the merchant side expected.
	require.EqualValues(t, a.Expected, successes, "success rows in delivery_attempts")
	if a.Duplicates == 0 {
		t.Log("the paused dispatcher had nothing in flight when frozen: the fencing was not exercised this run")
	}
	require.True(t, d1.running(), "the paused dispatcher died after SIGCONT")
	// The other dispatcher took the frozen one's queues over: no callback
	// waited for the frozen one to wake up.
	require.Less(t, maxLatency(w.ledger), pauseFor-lease, "callbacks waited for the paused dispatcher: its queues were not taken over")
}
