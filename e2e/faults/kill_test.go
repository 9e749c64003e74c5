//go:build faults

package faults

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// TestKillDispatchers: three dispatcher processes share the logical queues;
// one chosen at random is killed with SIGKILL every couple of seconds during
// the load and started again. The survivors take its queues over within the
// lease; nothing acknowledged is lost, order per key holds, and only what was
// in flight is delivered twice.
func TestKillDispatchers(t *testing.T) {
	s3 := startS3(t)
	env := serviceEnv(dbURL(t), s3, nil)
	api := newProc(t, "api", "api,maintenance", env)
	api.start()
	var ds []*proc
	for i := range 3 {
		d := newProc(t, fmt.Sprintf("dispatch%d", i), "dispatch", env)
		d.start()
		ds = append(ds, d)
	}
	dumpLogs(t, append([]*proc{api}, ds...)...)

	w := newWorld(t, api.URL(), 2, 30, load.SinkConfig{Latency: 2 * time.Millisecond})
	l := w.load(loadConfig{Targets: []string{api.URL()}, Interval: 100 * time.Millisecond})
	stop := runLoad(l)
	const kills = 5
	for range kills {
		time.Sleep(2 * time.Second)
		victim := ds[rand.IntN(len(ds))]
		victim.kill()
		time.Sleep(300 * time.Millisecond)
		victim.start()
	}
	time.Sleep(2 * time.Second)
	stop()
	drain := w.drain(90 * time.Second)

	w.account(result{Scenario: "kill -9 dispatchers", Faults: kills, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: maxLatency(w.ledger).String()}, l, kills*inFlightBound)
}

// TestKillAPI: the only api process is killed with SIGKILL while requests
// are in flight (mid-batch), several times, and started again on the same
// address. Every callback answered 202 before a kill is delivered; callbacks
// whose request failed are sent again by the carrier (same Idempotency-Key),
// which hookrelay answers 202 or 200 duplicate.
func TestKillAPI(t *testing.T) {
	s3 := startS3(t)
	env := serviceEnv(dbURL(t), s3, nil)
	api := newProc(t, "api", "api", env)
	api.start()
	d := newProc(t, "dispatch", "dispatch,maintenance", env)
	d.start()
	dumpLogs(t, api, d)

	w := newWorld(t, api.URL(), 2, 40, load.SinkConfig{})
	l := w.load(loadConfig{Targets: []string{api.URL()}, Interval: 30 * time.Millisecond})
	stop := runLoad(l)
	const kills = 4
	var recoveries []time.Duration
	for range kills {
		time.Sleep(2 * time.Second)
		api.kill()
		time.Sleep(300 * time.Millisecond)
		restartAt := time.Now()
		api.start()
		require.True(t, waitFor(t.Context(), 30*time.Second, func() bool {
			return firstAcceptAfter(l.answers(), restartAt, false) >= 0
		}), "no 202 within 30s of the api restart")
		recoveries = append(recoveries, firstAcceptAfter(l.answers(), restartAt, false))
	}
	time.Sleep(time.Second)
	stop()
	drain := w.drain(90 * time.Second)

	statuses := statusCounts(l.answers())
	w.account(result{Scenario: "kill -9 api", Faults: kills, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: slices.Max(recoveries).Round(time.Millisecond).String(),
		Extra:       map[string]any{"max_end_to_end": maxLatency(w.ledger).String()}}, l, 0)
	require.NotZero(t, statuses[0], "no request was cut by a kill: the scenario did not kill mid-request")
	for st := range statuses {
		require.Contains(t, []int{0, http.StatusOK, http.StatusAccepted, http.StatusServiceUnavailable}, st,
			"unexpected answer status %d (statuses %v)", st, statuses)
	}
}

// maxLatency returns the longest end-to-end time (request start to first 2xx
// at the sink) of the ledger's deliveries: the worst wait a fault caused.
func maxLatency(l *load.Ledger) time.Duration {
	a := l.Analyze()
	if len(a.Latencies) == 0 {
		return 0
	}
	return slices.Max(a.Latencies).Round(time.Millisecond)
}
