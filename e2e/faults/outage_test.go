//go:build faults

package faults

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// TestPostgresRestart: the test's own PostgreSQL cluster is stopped (fast
// mode, sessions cut) under load and started again a few seconds later.
// While it is down ingest answers 503 with Retry-After; afterwards the
// service recovers by itself (no process is restarted) and nothing
// acknowledged is lost.
func TestPostgresRestart(t *testing.T) {
	pg := startCluster(t)
	s3 := startS3(t)
	env := serviceEnv(pg.URL("hookrelay"), s3, nil)
	api := newProc(t, "api", "api,maintenance", env)
	api.start()
	d := newProc(t, "dispatch", "dispatch", env)
	d.start()
	dumpLogs(t, api, d)

	w := newWorld(t, api.URL(), 2, 30, load.SinkConfig{})
	l := w.load(loadConfig{Targets: []string{api.URL()}, Interval: 20 * time.Millisecond, GiveUpAfter: 60 * time.Second})
	stop := runLoad(l)
	time.Sleep(3 * time.Second)
	pg.stop() // returns once the server is gone
	downAt := time.Now()
	time.Sleep(4 * time.Second)
	upAt := time.Now()
	pg.start()
	require.True(t, waitFor(t.Context(), 60*time.Second, func() bool {
		return firstAcceptAfter(l.answers(), upAt, false) >= 0
	}), "ingest did not accept again within 60s of PostgreSQL's restart")
	recovery := firstAcceptAfter(l.answers(), upAt, false)
	time.Sleep(3 * time.Second)
	stop()
	drain := w.drain(90 * time.Second)

	// While the database was down (from a moment after it was gone, for
	// answers in transit, until it was started again), every answer is a 503
	// with Retry-After.
	var down []response
	for _, r := range l.answers() {
		if r.At.After(downAt.Add(200*time.Millisecond)) && r.At.Before(upAt) {
			down = append(down, r)
		}
	}
	w.account(result{Scenario: "PostgreSQL restart", Faults: 1, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: recovery.Round(time.Millisecond).String(),
		Extra: map[string]any{"answers_while_down": statusCounts(down), "down_for": upAt.Sub(downAt).Round(time.Millisecond).String(),
			"max_end_to_end": maxLatency(w.ledger).String()}}, l, inFlightBound)
	require.NotEmpty(t, down, "no callback was answered while PostgreSQL was down")
	for _, r := range down {
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "answer while PostgreSQL was down (all: %v)", statusCounts(down))
		require.True(t, r.RetryAfter, "a 503 without Retry-After")
	}
}

// TestS3Outage: the S3 store the service writes large payloads to goes away
// for a few seconds under a load with one large callback in five. Large
// callbacks are refused with 503 (never acknowledged without their payload
// stored); small ones keep being accepted and delivered; after the store is
// back large ones are accepted again and everything acknowledged arrives.
func TestS3Outage(t *testing.T) {
	s3 := startS3(t)
	env := serviceEnv(dbURL(t), s3, map[string]string{"HOOKRELAY_OFFLOAD_BYTES": "8192"})
	svc := newProc(t, "all", "api,dispatch,maintenance", env)
	svc.start()
	dumpLogs(t, svc)

	w := newWorld(t, svc.URL(), 1, 30, load.SinkConfig{})
	l := w.load(loadConfig{Targets: []string{svc.URL()}, Interval: 30 * time.Millisecond, LargeEvery: 5,
		LargeBytes: 20 << 10, SkipLargeOnRefusal: true})
	stop := runLoad(l)
	time.Sleep(3 * time.Second)
	s3.down() // returns once the store is closed (requests in flight finished)
	downAt := time.Now()
	time.Sleep(5 * time.Second)
	upAt := time.Now()
	s3.up()
	require.True(t, waitFor(t.Context(), 60*time.Second, func() bool {
		return firstAcceptAfter(l.answers(), upAt, true) >= 0
	}), "large callbacks not accepted within 60s of the S3 store's return")
	recovery := firstAcceptAfter(l.answers(), upAt, true)
	time.Sleep(3 * time.Second)
	stop()
	drain := w.drain(90 * time.Second)

	var small, large []response
	for _, r := range l.answers() {
		if r.At.After(downAt.Add(200*time.Millisecond)) && r.At.Before(upAt) {
			if r.Large {
				large = append(large, r)
			} else {
				small = append(small, r)
			}
		}
	}
	w.account(result{Scenario: "S3 store down", Faults: 1, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: recovery.Round(time.Millisecond).String(),
		Extra: map[string]any{"small_while_down": statusCounts(small), "large_while_down": statusCounts(large),
			"max_end_to_end": maxLatency(w.ledger).String()}}, l, 0)
	require.NotEmpty(t, large, "no large callback was sent while S3 was down")
	for _, r := range large {
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "large callback while S3 was down (all: %v)", statusCounts(large))
		require.True(t, r.RetryAfter, "a 503 without Retry-After")
	}
	sc := statusCounts(small)
	require.NotZero(t, sc[http.StatusAccepted], "small callbacks stopped flowing while S3 was down: %v", sc)
	require.Equal(t, len(small), sc[http.StatusAccepted], "small callbacks refused while S3 was down: %v", sc)
}
