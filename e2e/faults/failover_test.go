//go:build faults

package faults

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// promoteAfter is how long the test leaves the cluster without a primary
// before promoting the standby: the detection time of a failover manager.
const promoteAfter = 2 * time.Second

// TestFailover: two api and two dispatch processes of the real binary run
// on a primary with a synchronous standby, through a multi-host DATABASE_URL
// (target_session_attrs=read-write). Under load, every process of the
// primary is killed (kill -9, its machine lost) and the standby promoted a
// moment later. The processes find the new primary by themselves (none is
// restarted); every callback answered 202 — before, during or after — is
// delivered to every endpoint in order per key, with duplicates bounded by
// what the dispatchers had in flight. The time to recover is reported
// (docs/reliability.md).
func TestFailover(t *testing.T) {
	pair := startPair(t, true)
	s3 := startS3(t)
	env := serviceEnv(pair.URL(), s3, nil)
	api1 := newProc(t, "api1", "api,maintenance", env)
	api1.start() // migrates first, alone
	api2 := newProc(t, "api2", "api", env)
	d1 := newProc(t, "dispatch1", "dispatch", env)
	d2 := newProc(t, "dispatch2", "dispatch", env)
	for _, p := range []*proc{api2, d1, d2} {
		p.start()
	}
	dumpLogs(t, api1, api2, d1, d2)

	w := newWorld(t, api1.URL(), 2, 30, load.SinkConfig{})
	// api2 learns of the endpoints made through api1 by an announcement or,
	// at the latest, its cache's next reload (HOOKRELAY_CACHE_TTL, 1 s):
	// callbacks it fanned out before would rightly skip them.
	time.Sleep(2 * time.Second)
	l := w.load(loadConfig{Targets: []string{api1.URL(), api2.URL()}, Interval: 20 * time.Millisecond, GiveUpAfter: 120 * time.Second})
	stop := runLoad(l)
	time.Sleep(4 * time.Second)
	require.True(t, waitFor(t.Context(), 30*time.Second, func() bool {
		_, got := w.ledger.Progress()
		return got > 0
	}), "nothing delivered before the fault")

	pair.run("kill-primary")
	killAt := time.Now() // every process of the primary is gone
	time.Sleep(promoteAfter)
	promoteAt := time.Now()
	pair.run("promote")
	promoted := time.Now()
	t.Logf("killed the primary, promoted the standby %s later (pg_ctl promote took %s)",
		promoteAt.Sub(killAt).Round(time.Millisecond), promoted.Sub(promoteAt).Round(time.Millisecond))

	require.True(t, waitFor(t.Context(), 120*time.Second, func() bool {
		return firstAcceptAfter(l.answers(), promoteAt, false) >= 0
	}), "ingest did not accept again within 120s of the promotion")
	ingestRecovery := firstAcceptAfter(l.answers(), promoteAt, false)
	// On the new primary, by themselves: both dispatchers' LISTEN sessions
	// for wake-ups, both APIs' LISTEN sessions for configuration changes,
	// and every logical queue leased by one of the two live dispatchers.
	newPrimary := pair.URL()
	for _, c := range []struct {
		what, sql string
		want      int64
	}{
		{"dispatch LISTEN sessions", "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'hookrelay-dispatch-listen'", 2},
		{"api configuration LISTEN sessions", "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'hookrelay-api-config'", 2},
		{"dispatchers holding queues", "SELECT count(DISTINCT owner) FROM queue_leases WHERE expires_at > now()", 2},
		{"queues not leased", "SELECT count(*) FROM queue_leases WHERE expires_at <= now() OR owner IS NULL", 0},
	} {
		var got int64
		require.True(t, waitFor(t.Context(), 60*time.Second, func() bool {
			n, err := queryInt(t.Context(), newPrimary, c.sql)
			got = n
			return err == nil && n == c.want
		}), "%s on the new primary: %d, want %d", c.what, got, c.want)
	}
	time.Sleep(3 * time.Second)
	stop()
	drain := w.drain(180 * time.Second)

	// Between the kill and the promotion there is no primary: nothing sent
	// then can be acknowledged before the promotion.
	var headless []response
	for _, r := range l.answers() {
		if r.At.Add(-r.Took).After(killAt) && r.At.Before(promoteAt) {
			headless = append(headless, r)
		}
	}
	a := w.ledger.Analyze()
	// The first delivery of a callback sent after the promotion: end to end,
	// through the new primary.
	deliveryRecovery := time.Duration(-1)
	for i, sent := range a.SentAt {
		if sent.After(promoteAt) {
			if d := sent.Add(a.Latencies[i]).Sub(promoteAt); deliveryRecovery < 0 || d < deliveryRecovery {
				deliveryRecovery = d
			}
		}
	}
	t.Logf("recovery: first 202 %s after the promotion (%s after the kill); first delivery of a new callback %s after the promotion",
		ingestRecovery.Round(time.Millisecond), (ingestRecovery + promoteAt.Sub(killAt)).Round(time.Millisecond),
		deliveryRecovery.Round(time.Millisecond))
	w.account(result{Scenario: "primary lost, standby promoted", Faults: 1, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: ingestRecovery.Round(time.Millisecond).String(),
		Extra: map[string]any{"answers_without_primary": statusCounts(headless), "promoted_after": promoteAt.Sub(killAt).Round(time.Millisecond).String(),
			"delivery_recovery": deliveryRecovery.Round(time.Millisecond).String(), "max_end_to_end": maxLatency(w.ledger).String()}},
		l, 2*inFlightBound)
	for _, r := range headless {
		require.NotEqual(t, http.StatusAccepted, r.Status, "a 202 while there was no primary (all: %v)", statusCounts(headless))
	}
	require.Positive(t, deliveryRecovery, "no callback sent after the promotion was delivered")
	// Every process is still the one started before the fault.
	for _, p := range []*proc{api1, api2, d1, d2} {
		require.True(t, p.running(), "%s exited", p.name)
	}
}

// TestSyncStandbyBlocked: the synchronous standby stops under load, so no
// commit on the primary can complete. Ingest answers 503 with Retry-After,
// each within a bound set by the statement timeout (the commit's wait for
// the standby is cut short there and the batch refused: it was committed on
// the primary only); nothing answered 202 before, during or after is lost;
// once the standby is back, callbacks are accepted again without any
// process restarted.
func TestSyncStandbyBlocked(t *testing.T) {
	const statementTimeout = 3 * time.Second
	pair := startPair(t, true)
	s3 := startS3(t)
	env := serviceEnv(pair.URL(), s3, map[string]string{"HOOKRELAY_STATEMENT_TIMEOUT": statementTimeout.String()})
	api := newProc(t, "api", "api,maintenance", env)
	api.start()
	d := newProc(t, "dispatch", "dispatch", env)
	d.start()
	dumpLogs(t, api, d)

	w := newWorld(t, api.URL(), 2, 20, load.SinkConfig{})
	l := w.load(loadConfig{Targets: []string{api.URL()}, Interval: 20 * time.Millisecond, GiveUpAfter: 120 * time.Second})
	stop := runLoad(l)
	time.Sleep(3 * time.Second)
	pair.run("stop-standby")
	blockedAt := time.Now()
	// Requests in flight when the standby stops are answered about one
	// statement timeout later, before the window below opens; their keys'
	// next requests queue behind a blocked batch and are answered about two
	// timeouts after that. Five timeouts leave that second round inside the
	// window with seconds to spare.
	time.Sleep(5 * statementTimeout)
	upAt := time.Now()
	pair.run("start-standby")
	require.True(t, waitFor(t.Context(), 120*time.Second, func() bool {
		return firstAcceptAfter(l.answers(), upAt, false) >= 0
	}), "ingest did not accept again within 120s of the standby's return")
	recovery := firstAcceptAfter(l.answers(), upAt, false)
	time.Sleep(3 * time.Second)
	stop()
	drain := w.drain(180 * time.Second)

	// Requests sent after the standby stopped (a moment after, for commits
	// already confirmed) and answered before it was back.
	var blocked []response
	var slowest time.Duration
	for _, r := range l.answers() {
		if r.At.Add(-r.Took).After(blockedAt.Add(500*time.Millisecond)) && r.At.Before(upAt) {
			blocked = append(blocked, r)
			slowest = max(slowest, r.Took)
		}
	}
	w.account(result{Scenario: "synchronous standby stopped", Faults: 1, Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: recovery.Round(time.Millisecond).String(),
		Extra: map[string]any{"answers_while_blocked": statusCounts(blocked), "slowest_answer_while_blocked": slowest.Round(time.Millisecond).String(),
			"statement_timeout": statementTimeout.String(), "max_end_to_end": maxLatency(w.ledger).String()}}, l, inFlightBound)
	require.NotEmpty(t, blocked, "no callback was answered while the standby was stopped")
	for _, r := range blocked {
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "answer while the standby was stopped (all: %v; refusals %v)", statusCounts(blocked), l.refusals())
		require.True(t, r.RetryAfter, "a 503 without Retry-After")
	}
	// A request waits for at most the batch ahead of it and its own, each
	// cut at the statement timeout; the rest is slack for a loaded machine.
	require.Less(t, slowest, 2*statementTimeout+5*time.Second, "a 503 took too long while the standby was stopped")
	samples := l.refusals()[http.StatusServiceUnavailable]
	require.True(t, strings.Contains(strings.Join(samples, " "), "not confirmed by the synchronous standby"), "503 bodies: %v", samples)
}
