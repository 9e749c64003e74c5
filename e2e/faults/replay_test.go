//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// replayMessages is how many callbacks the replay scenario delivers and then
// replays. The operators' target is a replay of 100,000 surviving a killed
// dispatcher; CI runs the same scenario scaled down so that it stays well
// under a minute on a 2-core machine. HOOKRELAY_E2E_REPLAY_MESSAGES=100000
// runs the full size (a multiple of replayKeys).
var replayMessages = envInt("HOOKRELAY_E2E_REPLAY_MESSAGES", 20_000)

// envInt is the positive integer in the environment variable name, or def
// when it is unset; anything else stops the test binary (a typo must not
// quietly run the default size).
func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		panic(fmt.Sprintf("%s=%q: want a positive integer", name, v))
	}
	return n
}

// replayKeys is how many ordering keys (sending goroutines) carry them.
const replayKeys = 50

// TestKillDuringReplay: replayMessages callbacks are delivered to one
// endpoint, then the whole window is replayed. When a third of the replay has
// been queued again, the only process running dispatch and maintenance (so
// both the replay runner and the dispatcher that sends its deliveries) is
// killed with SIGKILL and a replacement started. The replay must finish and
// every message arrive again (nothing lost); what arrives more than once
// beyond that is bounded by what one dispatcher had in flight
// (inFlightBound): the runner commits each batch with the replay's cursor,
// so its own crash queues nothing twice, and a delivery sent but not yet
// acknowledged is sent again by the take-over. The replayed deliveries of a
// key arrive in their original order (a duplicate of one already delivered
// is not a violation: see load.Ledger).
func TestKillDuringReplay(t *testing.T) {
	s3 := startS3(t)
	env := serviceEnv(dbURL(t), s3, map[string]string{
		// The replacement takes the maintenance role (and with it the
		// replay runner) as soon as the killed holder's session is gone.
		"HOOKRELAY_MAINTENANCE_LOCK_RETRY": "200ms",
	})
	api := newProc(t, "api", "api", env)
	api.start()
	worker := newProc(t, "worker", "dispatch,maintenance", env)
	worker.start()
	dumpLogs(t, api, worker)

	// Waits grow with the size: three minutes for every 20,000 messages.
	// They bound how long the test waits for a condition, not what it
	// checks: 20,000 messages on 50 keys are 400 deliveries in a row per key,
	// and under the default latency budget each waits for the previous one's
	// acknowledgement and a claim. On a quiet 2-core machine the replay
	// drains in about 23 s and the whole test takes under 80 s; a loaded CI
	// run once needed more than the minute this allowed before for the first
	// drain (17,274 of 20,000 delivered after 60 s).
	wait := time.Duration(max(1, replayMessages/20_000)) * 3 * time.Minute

	w := newWorld(t, api.URL(), 1, replayKeys, load.SinkConfig{})
	rc := &replayClient{base: api.URL(), client: &http.Client{Timeout: 30 * time.Second}}
	since := time.Now().Add(-time.Minute)
	l := w.load(loadConfig{Targets: []string{api.URL()}})
	sendExactly(t, l, w.ledger, replayMessages/replayKeys)
	w.drain(wait)
	first := w.ledger.Analyze()
	require.Zero(t, first.Lost, "the original deliveries did not all arrive")
	// Arrived is not yet recorded: the last deliveries' acknowledgements
	// may still be filling their batch (the latency budget). The replay
	// selects recorded deliveries, so wait until none is pending.
	require.True(t, waitFor(t.Context(), wait, func() bool {
		return rc.pending(t, w.endpoints[0].ID) == 0
	}), "deliveries still pending after the first drain")

	// From here on the sink counts into a fresh ledger that expects every
	// message once more.
	again := load.NewLedger(replayKeys, func(int) []int { return []int{0} })
	replayStart := time.Now()
	for k := range replayKeys {
		for seq := range replayMessages / replayKeys {
			again.Acked(k, seq, replayStart)
		}
	}
	w.sink.SetLedger(1, again)

	id, count := rc.start(t, w.endpoints[0].ID, since, time.Now().Add(time.Minute))
	require.EqualValues(t, replayMessages, count, "the replay's window does not hold every delivery")

	var atKill replayState
	require.True(t, waitFor(t.Context(), wait, func() bool {
		atKill = rc.get(t, id)
		return atKill.Done >= int64(replayMessages/3) || atKill.State != "running"
	}), "the replay did not queue a third within %s", wait)
	require.Equal(t, "running", atKill.State, "the replay finished before the kill: the kill would prove nothing")
	_, arrivedAtKill := again.Progress()
	require.Less(t, arrivedAtKill, int64(replayMessages), "every replayed message had arrived before the kill")
	killAt := time.Now()
	worker.kill()
	worker.start()

	var end replayState
	require.True(t, waitFor(t.Context(), wait, func() bool {
		end = rc.get(t, id)
		return end.State != "running"
	}), "the replay did not finish within %s of the kill (%+v)", wait, end)
	require.Equal(t, "finished", end.State)
	require.EqualValues(t, replayMessages, end.Total)
	require.EqualValues(t, replayMessages, end.Done, "deliveries of the window were not queued again")
	require.Zero(t, end.Failed)
	waitFor(t.Context(), wait, func() bool {
		exp, got := again.Progress()
		return got >= exp
	})
	took := again.LastDelivery().Sub(replayStart)

	a := again.Analyze()
	res := result{Scenario: "kill -9 dispatch+maintenance mid-replay", Requests: l.requests.Load(),
		Statuses: statusCounts(l.answers()), Acknowledged: a.Acknowledged,
		Expected: a.Expected, Delivered: a.Delivered, Lost: a.Lost, Duplicates: a.Duplicates,
		OrderViolations: a.OrderViolations,
		Unexpected:      a.Unexpected, Faults: 1, Drain: took.Round(time.Millisecond).String(),
		MaxRecovery: (again.LastDelivery().Sub(killAt)).Round(time.Millisecond).String(),
		Extra: map[string]any{
			"replay_took": took.Round(time.Millisecond).String(), "done_at_kill": atKill.Done,
			"arrived_at_kill": arrivedAtKill, "original_duplicates": first.Duplicates,
		}}
	report(t, res)
	require.Zero(t, w.sink.Stats().BadSignature, "sink received deliveries with a bad signature")
	require.Zero(t, a.Lost, "replayed messages that never arrived (expected %d, delivered %d)", a.Expected, a.Delivered)
	require.Zero(t, a.Unexpected)
	require.Zero(t, a.OrderViolations, "replayed deliveries of a key out of their original order")
	require.LessOrEqual(t, a.Duplicates, inFlightBound, "replay duplicates beyond what one dispatcher had in flight")
}

// sendExactly sends perKey callbacks for every key of l (each key one after
// another, keys side by side), resending any not answered 202 or 200, and
// records them acknowledged in ledger.
func sendExactly(t *testing.T, l *loader, ledger *load.Ledger, perKey int) {
	t.Helper()
	var wg sync.WaitGroup
	for k := range l.cfg.Keys {
		wg.Go(func() {
			for seq := range perKey {
				body := l.payload(k, seq, false)
				idem := fmt.Sprintf("p%d-k%d-s%d", l.cfg.Phase, k, seq)
				sentAt := time.Now()
				for backoff := 20 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
					st := l.send(body, idem, false)
					if st == http.StatusAccepted || st == http.StatusOK {
						break
					}
					if time.Since(sentAt) > 30*time.Second {
						t.Errorf("key %d seq %d: not accepted within 30s (last status %d)", k, seq, st)
						return
					}
					time.Sleep(backoff)
				}
				ledger.Acked(k, seq, sentAt)
			}
		})
	}
	wg.Wait()
	l.client.CloseIdleConnections()
	require.False(t, t.Failed(), "the callbacks were not all accepted")
}

// replayState is the part of GET /v1/replays/{id} the scenario reads.
type replayState struct {
	Total  int64  `json:"total"`
	Done   int64  `json:"done"`
	Failed int64  `json:"failed"`
	State  string `json:"state"`
}

// replayClient starts and reads replays with the admin token.
type replayClient struct {
	base   string
	client *http.Client
}

// start asks for a replay of the endpoint's delivered deliveries in
// [since, until) and returns its id and count.
func (c *replayClient) start(t *testing.T, endpointID string, since, until time.Time) (string, int64) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"since": since.UTC().Format(time.RFC3339Nano),
		"until": until.UTC().Format(time.RFC3339Nano), "status": "delivered"})
	var out struct {
		ID    string `json:"id"`
		Count int64  `json:"count"`
	}
	c.do(t, http.MethodPost, "/v1/endpoints/"+endpointID+"/replay", body, http.StatusAccepted, &out)
	return out.ID, out.Count
}

// pending returns how many of the endpoint's deliveries are not yet
// recorded as delivered or dead (at most one page: 0 is what matters).
func (c *replayClient) pending(t *testing.T, endpointID string) int {
	t.Helper()
	var out struct {
		Items []json.RawMessage `json:"items"`
	}
	c.do(t, http.MethodGet, "/v1/endpoints/"+endpointID+"/deliveries?status=pending&limit=1", nil, http.StatusOK, &out)
	return len(out.Items)
}

// get returns the replay's progress.
func (c *replayClient) get(t *testing.T, id string) replayState {
	t.Helper()
	var st replayState
	c.do(t, http.MethodGet, "/v1/replays/"+id, nil, http.StatusOK, &st)
	return st
}

func (c *replayClient) do(t *testing.T, method, path string, body []byte, want int, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := c.client.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err)
	require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, path, data)
	require.NoError(t, json.Unmarshal(data, out), "%s %s: %s", method, path, data)
}
