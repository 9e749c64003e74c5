//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

const (
	adminToken = "hra_faults_admin_token_0123456789"
	// lease is HOOKRELAY_LEASE for every scenario: short, so takeovers are
	// quick.
	lease = 2 * time.Second
)

// dispatchConcurrency is HOOKRELAY_DISPATCH_CONCURRENCY; ackBatch and
// ackFlushers are the dispatcher's defaults (HOOKRELAY_DISPATCH_ACK_BATCH,
// dispatch.DefaultAckFlushers). inFlightBound is what one dispatcher may
// have sent but not yet acknowledged, and so what one crash, pause, lost
// database or dropped acknowledgement may deliver twice
// (docs/guarantees.md, "At least once, with bounded duplicates"): the
// deliveries it is making, and the results waiting for their
// acknowledgement — its queue (four batches), the batch being gathered, a
// batch waiting for each flusher and the one each flusher is writing.
const (
	dispatchConcurrency = 64
	ackBatch            = 100
	ackFlushers         = 4
	inFlightBound       = dispatchConcurrency + (5+2*ackFlushers)*ackBatch
)

// retrySchedule is the endpoints' retry schedule: short, so that attempts
// failed by a fault are retried within the scenario.
var retrySchedule = []string{"1s", "1s", "1s", "2s", "2s", "2s", "3s", "3s", "3s", "5s", "5s", "5s"}

// serviceEnv is the environment of every process of a scenario.
func serviceEnv(dbURL string, s3 *s3Server, extra map[string]string) map[string]string {
	env := map[string]string{
		"DATABASE_URL":                    dbURL,
		"HOOKRELAY_ADMIN_TOKEN":           adminToken,
		"HOOKRELAY_ALLOW_PRIVATE_TARGETS": "true",
		"HOOKRELAY_LEASE":                 lease.String(),
		"HOOKRELAY_DB_MAX_CONNS":          "10",
		"HOOKRELAY_DISPATCH_CONCURRENCY":  strconv.Itoa(dispatchConcurrency),
		"HOOKRELAY_LOG_LEVEL":             "info",
	}
	for k, v := range s3.env() {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// world is the merchant and carrier side of a scenario: registered objects,
// the sink with its ledger, and the load generator.
type world struct {
	t         *testing.T
	admin     *load.Admin
	carrier   load.Carrier
	merchant  load.Merchant
	sink      *load.Sink
	ledger    *load.Ledger
	endpoints []load.Endpoint // on the sink, as /e/0.. /e/n-1
	keys      int
}

// newWorld registers a carrier, a merchant and n sink endpoints through the
// api at apiURL, and prepares a ledger for keys ordering keys where every
// callback is expected at every sink endpoint.
func newWorld(t *testing.T, apiURL string, n, keys int, sinkCfg load.SinkConfig) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sink, err := load.StartSink(sinkCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sink.Close() })
	w := &world{t: t, sink: sink, keys: keys,
		admin: &load.Admin{BaseURL: apiURL, Token: adminToken, Client: &http.Client{Timeout: 10 * time.Second}}}
	w.carrier, err = w.admin.CreateCarrier(ctx, "carrier-"+t.Name())
	require.NoError(t, err)
	w.merchant, err = w.admin.CreateMerchant(ctx, "merchant-"+t.Name())
	require.NoError(t, err)
	for i := range n {
		e, err := w.admin.CreateEndpoint(ctx, w.merchant.ID, sink.EndpointURL(i), retrySchedule, 0)
		require.NoError(t, err)
		require.NoError(t, sink.SetSecret(i, e.Secret))
		w.endpoints = append(w.endpoints, e)
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	w.ledger = load.NewLedger(keys, func(int) []int { return all })
	sink.SetLedger(1, w.ledger)
	return w
}

// load returns a loader for this world's carrier and ledger.
func (w *world) load(cfg loadConfig) *loader {
	cfg.APIKey, cfg.Phase, cfg.Keys = w.carrier.APIKey, 1, w.keys
	return newLoader(cfg, w.ledger)
}

// runLoad starts l in the background; the returned function stops it and
// waits until every key has finished its last callback.
func runLoad(l *loader) (stop func()) {
	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(stopCh)
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stopCh) })
		<-done
	}
}

// drain waits until every acknowledged callback reached every matching
// endpoint or timeout passed; it returns how long it waited.
func (w *world) drain(timeout time.Duration) time.Duration {
	start := time.Now()
	waitFor(context.Background(), timeout, func() bool {
		exp, got := w.ledger.Progress()
		return got >= exp
	})
	return time.Since(start)
}

// result is the figures of one scenario run, reported in docs/reliability.md.
type result struct {
	Scenario        string         `json:"scenario"`
	Requests        int64          `json:"requests"`
	Acknowledged    int            `json:"acknowledged"`
	Expected        int            `json:"expected_deliveries"`
	Delivered       int            `json:"delivered"`
	Lost            int            `json:"lost"`
	Duplicates      int            `json:"duplicates"`
	OrderViolations int            `json:"order_violations"`
	Unexpected      int            `json:"unexpected"`
	GaveUp          int64          `json:"gave_up"`
	Statuses        map[int]int    `json:"statuses"`
	Faults          int            `json:"faults"`
	MaxRecovery     string         `json:"max_recovery"`
	Drain           string         `json:"drain"`
	P99             string         `json:"p99_end_to_end"`
	Extra           map[string]any `json:"extra,omitempty"`
}

// account analyses the ledger after the load stopped and the queue drained,
// completes res (which carries the scenario's own figures) and reports it,
// then checks the guarantees every scenario shares: nothing lost, order per
// key, signatures valid, duplicates at most maxDup.
func (w *world) account(res result, l *loader, maxDup int) load.Accounting {
	t := w.t
	t.Helper()
	a := w.ledger.Analyze()
	res.Requests, res.Acknowledged, res.Expected = l.requests.Load(), a.Acknowledged, a.Expected
	res.Delivered, res.Lost, res.Duplicates, res.OrderViolations = a.Delivered, a.Lost, a.Duplicates, a.OrderViolations
	res.Unexpected, res.GaveUp, res.Statuses = a.Unexpected, l.gaveUp.Load(), statusCounts(l.answers())
	res.P99 = percentile(a.Latencies, 0.99).Round(time.Millisecond).String()
	report(t, res)
	if rs := l.refusals(); len(rs) > 0 {
		t.Logf("sample refusals: %v", rs)
	}
	st := w.sink.Stats()
	require.NotZero(t, a.Acknowledged, "the load generator got no callback acknowledged; statuses %v", res.Statuses)
	require.Zero(t, st.BadSignature, "sink received deliveries with a bad signature")
	require.Zero(t, a.Lost, "acknowledged callbacks not delivered (expected %d, delivered %d; endpoint/key/seq: %v)", a.Expected, a.Delivered, a.LostSample)
	require.Zero(t, a.OrderViolations, "order per (endpoint, key) broken")
	require.LessOrEqual(t, a.Duplicates, maxDup, "duplicates beyond the bound")
	return a
}

// report logs res and appends it to $FAULTS_REPORT when set.
func report(t *testing.T, res result) {
	t.Helper()
	line, _ := json.Marshal(res)
	t.Logf("figures: %s", line)
	path := os.Getenv("FAULTS_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("report: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\n", line)
}

// percentile returns the q-quantile of ds (0 when empty).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

// dumpLogs logs the tail of every process's log when the test failed, and
// every warning and error they logged when FAULTS_VERBOSE is set.
func dumpLogs(t *testing.T, procs ...*proc) {
	t.Cleanup(func() {
		if os.Getenv("FAULTS_VERBOSE") != "" {
			for _, p := range procs {
				lines := p.logLines("WARN")
				t.Logf("---- %s: %d warnings/errors ----\n%s", p.name, len(lines), strings.Join(lines[:min(len(lines), 60)], "\n"))
			}
		}
		if !t.Failed() {
			return
		}
		for _, p := range procs {
			t.Logf("---- %s (last 40 lines) ----\n%s", p.name, p.tail(40))
		}
	})
}

// dbURL returns a fresh migrated database on the shared test server (see
// db/dbtest), dropped when the test ends.
func dbURL(t *testing.T) string { return dbtest.NewURL(t) }
