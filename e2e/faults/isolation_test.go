//go:build faults

package faults

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// healthyP99Bound is the isolation property's bound: a generous one, far
// above the healthy endpoint's latency without faults (milliseconds) and far
// below what sharing a worker with a hanging endpoint would give (the 15 s
// delivery timeout).
const healthyP99Bound = 2 * time.Second

// TestMerchantIsolation: next to a healthy endpoint, the same callbacks go
// to endpoints that hang, reset the connection, answer slowly, fail every
// other time, redirect and send an 8 MiB body. The healthy endpoint's
// end-to-end p99 stays under healthyP99Bound, it receives everything in
// order, and the redirect is not followed. There are more ordering keys (so
// more chain heads due at once on each bad endpoint) than the dispatcher
// has delivery slots: a bad endpoint must not be able to hold them all.
//
// FAULTS_ISOLATION_PATHS=/hang (comma-separated) runs with only some of the
// bad endpoints, to tell which one breaks isolation.
func TestMerchantIsolation(t *testing.T) {
	s3 := startS3(t)
	env := serviceEnv(dbURL(t), s3, nil)
	svc := newProc(t, "all", "api,dispatch,maintenance", env)
	svc.start()
	dumpLogs(t, svc)

	keys := 100 // > dispatchConcurrency
	w := newWorld(t, svc.URL(), 1, keys, load.SinkConfig{})
	bad := startBadMerchant(t)
	paths := []string{"/hang", "/reset", "/slow", "/flaky", "/redirect", "/huge"}
	if only := os.Getenv("FAULTS_ISOLATION_PATHS"); only != "" {
		paths = strings.Split(only, ",")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, p := range paths {
		_, err := w.admin.CreateEndpoint(ctx, w.merchant.ID, bad.URL(p), nil, 0)
		require.NoError(t, err, p)
	}

	l := w.load(loadConfig{Targets: []string{svc.URL()}, Interval: 500 * time.Millisecond})
	stop := runLoad(l)
	time.Sleep(12 * time.Second)
	stop()
	drain := w.drain(30 * time.Second)
	if exp, got := w.ledger.Progress(); got < exp {
		a := w.ledger.Analyze()
		t.Errorf("healthy endpoint starved: %d of %d acknowledged callbacks delivered 30s after the load stopped "+
			"(p99 so far %s; bad endpoints hit: hang %d, slow %d)", got, exp, percentile(a.Latencies, 0.99).Round(time.Millisecond),
			bad.Hits("/hang"), bad.Hits("/slow"))
	}

	a := w.account(result{Scenario: "misbehaving merchant endpoints", Faults: len(paths), Drain: drain.Round(time.Millisecond).String(),
		MaxRecovery: maxLatency(w.ledger).String(),
		Extra: map[string]any{"hits": map[string]int64{
			"hang": bad.Hits("/hang"), "reset": bad.Hits("/reset"), "slow": bad.Hits("/slow"),
			"flaky": bad.Hits("/flaky"), "redirect": bad.Hits("/redirect"), "huge": bad.Hits("/huge"),
		}}}, l, 0)
	for _, p := range paths {
		require.NotZero(t, bad.Hits(p), "endpoint %s never got a delivery: the fault was not exercised", p)
	}
	require.Zero(t, bad.landed.Load(), "the service followed a redirect")
	p99 := percentile(a.Latencies, 0.99)
	require.Less(t, p99, healthyP99Bound, "healthy endpoint p99 %s while others misbehave", p99)
}
