package ops_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/maintenance"
	"github.com/hookrelay/hookrelay/ops"
)

// got is one request the sink received.
type got struct {
	msgID int64
	key   string
	at    time.Time
}

// sink is a loopback merchant endpoint that answers 200 and records what it
// received.
type sink struct {
	srv *httptest.Server
	mu  sync.Mutex
	all []got
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id, _ := strconv.ParseInt(strings.TrimPrefix(r.Header.Get("webhook-id"), "msg_"), 10, 64)
		s.mu.Lock()
		s.all = append(s.all, got{msgID: id, key: r.Header.Get("X-Hookrelay-Ordering-Key"), at: time.Now()})
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) received() []got {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]got(nil), s.all...)
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// runDispatcher runs a real dispatcher on store until the test ends.
func runDispatcher(t *testing.T, store *db.DB) {
	t.Helper()
	d := dispatch.New(quietLogger(), dispatch.Config{
		Queues: hookrelay.DefaultQueues, Lease: 5 * time.Second, AllowPrivateTargets: true,
		IdlePoll: 10 * time.Millisecond, DrainTimeout: 2 * time.Second, RetryJitter: -1,
		HoldDelay: 100 * time.Millisecond, EndpointCacheTTL: 50 * time.Millisecond,
	}, store, nil, nil)
	testenv.Go(t, "the dispatcher", d.Run)
}

// runRunner runs a replay runner until the returned stop is called (or the
// test ends).
func runRunner(t *testing.T, store *db.DB, cfg maintenance.ReplayConfig) (stop func()) {
	t.Helper()
	stopRunner := testenv.Go(t, "the replay runner", maintenance.NewReplayRunner(quietLogger(), cfg, store).Run)
	return func() { _ = stopRunner() }
}

func waitReplay(t *testing.T, s *ops.Service, id int64, state string) db.Replay {
	t.Helper()
	var rp db.Replay
	testenv.Eventually(t, 3*time.Minute, "replay "+state, func() bool {
		var err error
		rp, err = s.Replay(context.Background(), ops.Actor{}, id)
		require.NoError(t, err)
		return rp.State == state
	})
	return rp
}

// history writes n delivered callbacks of endpoint epID straight into the
// history tables (one statement each), as if delivered over the last n
// milliseconds: message ids and delivery ids from base+1, over keys
// "<prefix>0" … "<prefix><keys-1>" in turn, each key's in id order. It
// returns the window's start.
func history(t *testing.T, url string, epID, carrierID int64, base int64, n, keys int, prefix string) time.Time {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var start time.Time
	require.NoError(t, conn.QueryRow(ctx, `SELECT now() - make_interval(secs => $1::double precision / 1000 + 1)`, n).Scan(&start))
	// Each key's queue as ingest computes it.
	queues := make([]int16, keys)
	for k := range keys {
		queues[k] = int16(hookrelay.QueueFor(prefix+strconv.Itoa(k), hookrelay.DefaultQueues))
	}
	_, err = conn.Exec(ctx, `
INSERT INTO messages (id, received_at, carrier_id, event_type, ordering_key, queue, payload, payload_size, payload_sha256)
SELECT $1::bigint + g, $2::timestamptz + make_interval(secs => g::double precision / 1000), $3::bigint, 'delivered',
       $4::text || ((g - 1) % $5::integer), ($6::smallint[])[1 + (g - 1) % $5::integer], '{}'::bytea, 2, '\x00'::bytea
FROM generate_series(1, $7::integer) AS g`, base, start, carrierID, prefix, keys, queues, n)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
INSERT INTO delivery_attempts (delivery_id, message_id, message_received_at, endpoint_id, attempt,
                               attempted_at, outcome, status_code, latency_ms)
SELECT $1::bigint + g, $1::bigint + g, $2::timestamptz + make_interval(secs => g::double precision / 1000), $3::bigint, 1,
       $2::timestamptz + make_interval(secs => g::double precision / 1000 + 0.0005), 'success', 200, 1
FROM generate_series(1, $4::integer) AS g`, base, start, epID, n)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `ANALYZE messages, delivery_attempts`)
	require.NoError(t, err)
	return start
}

// Replays of delivered, failed and all deliveries of a window: each
// delivery goes out once more, in its key's order; a second replay of the
// same window does not count the first one's re-deliveries again.
func TestReplayStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	sk := newSink(t)
	s := ops.New(store, ops.Config{})
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: sk.srv.URL, MaxInFlight: 1})
	carrier, _ := dbtest.Carrier(t, store, nil)
	since := time.Now().Add(-time.Second)

	send := func(key string) int64 {
		return dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: carrier.ID, EndpointIDs: []int64{ep.ID}, OrderingKey: key}).ID
	}
	dead := send("X")
	dbtest.Finish(t, store, "X", db.AckDead)
	order := map[string][]int64{} // each key's messages, in the order sent
	for range 3 {
		for _, k := range []string{"A", "B"} {
			order[k] = append(order[k], send(k))
		}
	}
	runDispatcher(t, store)
	testenv.Eventually(t, 30*time.Second, "the first deliveries", func() bool { return sk.count() == 6 })

	start := func(req ops.ReplayRequest) db.Replay {
		t.Helper()
		// The results of what the sink answered are in the history first.
		testenv.Eventually(t, 30*time.Second, "an empty queue", func() bool {
			p, err := store.DeliveryListPending(ctx, ep.ID, 0, 1)
			require.NoError(t, err)
			return len(p) == 0
		})
		req.Since, req.Until = since, time.Now().Add(time.Hour) // until after now: taken as now
		rp, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, req)
		require.NoError(t, err)
		return rp
	}
	rp := start(ops.ReplayRequest{Status: db.ReplayDelivered})
	require.Equal(t, int64(6), rp.Total)
	require.Equal(t, db.ReplayRunning, rp.State)
	stop := runRunner(t, store, maintenance.ReplayConfig{Interval: 20 * time.Millisecond})
	rp = waitReplay(t, s, rp.ID, db.ReplayFinished)
	require.Equal(t, int64(6), rp.Done)
	require.Zero(t, rp.Failed)
	require.NotNil(t, rp.FinishedAt)
	testenv.Eventually(t, 30*time.Second, "the replayed deliveries", func() bool { return sk.count() == 12 })
	again := map[string][]int64{}
	for _, g := range sk.received()[6:] {
		again[g.key] = append(again[g.key], g.msgID)
	}
	for k := range order {
		// Replayed deliveries are unordered: each once, in no promised order.
		require.ElementsMatch(t, order[k], again[k], "each delivered message of %s once more", k)
	}

	// failed: the dead letter goes back (and leaves dead_letters).
	rp = start(ops.ReplayRequest{Status: db.ReplayFailed})
	require.Equal(t, int64(1), rp.Total)
	rp = waitReplay(t, s, rp.ID, db.ReplayFinished)
	require.Equal(t, int64(1), rp.Done)
	testenv.Eventually(t, 30*time.Second, "the replayed dead letter", func() bool { return sk.count() == 13 })
	require.Equal(t, dead, sk.received()[12].msgID)
	n, err := dbtest.DeadLetterCountForEndpoint(ctx, store, ep.ID)
	require.NoError(t, err)
	require.Zero(t, n)

	// all, one key: A's three, once each however often they were delivered.
	rp = start(ops.ReplayRequest{Status: db.ReplayAll, OrderingKey: "A"})
	require.Equal(t, int64(3), rp.Total)
	rp = waitReplay(t, s, rp.ID, db.ReplayFinished)
	require.Equal(t, int64(3), rp.Done)
	testenv.Eventually(t, 30*time.Second, "the replay of A", func() bool { return sk.count() == 16 })
	for _, g := range sk.received()[13:] {
		require.Equal(t, "A", g.key)
	}
	stop()

	// Every delivery of the window counts once: 3 A, 3 B and X.
	rp = start(ops.ReplayRequest{Status: db.ReplayDelivered})
	require.Equal(t, int64(7), rp.Total)
	_, err = s.CancelReplay(ctx, ops.Actor{}, rp.ID)
	require.NoError(t, err)
}

// Bad requests are refused before anything is stored; another merchant's
// endpoint and replays are not found.
func TestReplayBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	s := ops.New(store, ops.Config{})
	m1, _ := dbtest.Merchant(t, store, nil)
	m2, _ := dbtest.Merchant(t, store, nil)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{MerchantID: m1.ID})
	now := time.Now()
	ok := ops.ReplayRequest{Since: now.Add(-time.Hour), Until: now, Status: db.ReplayAll}
	for name, req := range map[string]ops.ReplayRequest{
		"inverted":     {Since: now, Until: now.Add(-time.Hour), Status: db.ReplayAll},
		"empty":        {Since: now.Add(-time.Hour), Until: now.Add(-time.Hour), Status: db.ReplayAll},
		"future":       {Since: now.Add(time.Hour), Until: now.Add(2 * time.Hour), Status: db.ReplayAll},
		"no since":     {Until: now, Status: db.ReplayAll},
		"too wide":     {Since: now.Add(-ops.MaxReplayWindow - time.Hour), Until: now, Status: db.ReplayAll},
		"status":       {Since: ok.Since, Until: ok.Until, Status: "dead"},
		"no status":    {Since: ok.Since, Until: ok.Until},
		"key with NUL": {Since: ok.Since, Until: ok.Until, Status: db.ReplayAll, OrderingKey: "a\x00"},
	} {
		_, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, req)
		require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err), "%s: %v", name, err)
		_, err = s.CountReplay(ctx, ops.Actor{}, ep.ID, req)
		require.Equal(t, hookrelay.EINVALID, hookrelay.CodeOf(err), "count: %s: %v", name, err)
	}
	_, err := s.StartReplay(ctx, ops.Merchant(m2.ID), ep.ID, ok)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "%v", err)
	_, err = s.CountReplay(ctx, ops.Merchant(m2.ID), ep.ID, ok)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err), "%v", err)

	rp, err := s.StartReplay(ctx, ops.Merchant(m1.ID), ep.ID, ok)
	require.NoError(t, err)
	require.Zero(t, rp.Total)
	_, err = s.Replay(ctx, ops.Merchant(m2.ID), rp.ID)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	_, err = s.CancelReplay(ctx, ops.Merchant(m2.ID), rp.ID)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))
	_, err = s.Replay(ctx, ops.Actor{}, 999999999)
	require.Equal(t, hookrelay.ENOTFOUND, hookrelay.CodeOf(err))

	// An empty window finishes at its first batch; it cannot be cancelled then.
	r := maintenance.NewReplayRunner(quietLogger(), maintenance.ReplayConfig{}, store)
	_, err = r.Step(ctx)
	require.NoError(t, err)
	got, err := s.Replay(ctx, ops.Merchant(m1.ID), rp.ID)
	require.NoError(t, err)
	require.Equal(t, db.ReplayFinished, got.State)
	_, err = s.CancelReplay(ctx, ops.Merchant(m1.ID), rp.ID)
	require.Equal(t, hookrelay.ECONFLICT, hookrelay.CodeOf(err))
}

// A cancelled replay queues nothing more.
func TestReplayCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	s := ops.New(store, ops.Config{})
	ep, _ := dbtest.Endpoint(t, store, nil)
	carrier, _ := dbtest.Carrier(t, store, nil)
	since := history(t, url, ep.ID, carrier.ID, 1_000_000, 1000, 10, "C")
	n, err := s.CountReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered})
	require.NoError(t, err)
	require.Equal(t, int64(1000), n, "the count without a start")
	n, err = s.CountReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered, OrderingKey: "C3"})
	require.NoError(t, err)
	require.Equal(t, int64(100), n, "one key's")
	rp, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered})
	require.NoError(t, err)
	require.Equal(t, int64(1000), rp.Total)

	// No dispatcher: what a batch queues stays queued. A runner that starts
	// anew does not wait for an earlier runner's batch.
	step := func() db.Replay {
		t.Helper()
		_, err := maintenance.NewReplayRunner(quietLogger(), maintenance.ReplayConfig{Batch: 100}, store).Step(ctx)
		require.NoError(t, err)
		got, err := s.Replay(ctx, ops.Actor{}, rp.ID)
		require.NoError(t, err)
		return got
	}
	require.Equal(t, int64(100), step().Done)
	require.Equal(t, int64(200), step().Done)
	c, err := s.CancelReplay(ctx, ops.Actor{}, rp.ID)
	require.NoError(t, err)
	require.Equal(t, db.ReplayCancelled, c.State)
	require.NotNil(t, c.FinishedAt)
	for range 3 {
		got := step()
		require.Equal(t, int64(200), got.Done, "a cancelled replay queues nothing more")
		require.Equal(t, db.ReplayCancelled, got.State)
	}
	again, err := s.CancelReplay(ctx, ops.Actor{}, rp.ID)
	require.NoError(t, err, "cancelling twice is no error")
	require.Equal(t, db.ReplayCancelled, again.State)
}

// Live callbacks of a key keep their order while a long replay of the same
// key runs, and are not held until it ends: the replayed deliveries are
// unordered, so they neither wait for the live ones nor hold them back, and
// the runner keeps no more than about a batch of them queued. They share
// the endpoint's one slot (max_in_flight 1) with the live ones, so a live
// callback's latency is bounded by batches of replayed deliveries, not by a
// time: on a loaded machine it reached 18 s here; the check is that the live
// ones are interleaved with the replay, not sent after it.
func TestReplayBesideLiveTraffic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	s := ops.New(store, ops.Config{})
	sk := newSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: sk.srv.URL, MaxInFlight: 1})
	carrier, _ := dbtest.Carrier(t, store, nil)
	// One key: its replayed deliveries go one at a time, each a round trip
	// through the acknowledgement and the next claim.
	const n = 300
	since := history(t, url, ep.ID, carrier.ID, 2_000_000, n, 1, "K")
	runDispatcher(t, store)
	rp, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered})
	require.NoError(t, err)
	require.Equal(t, int64(n), rp.Total)
	runRunner(t, store, maintenance.ReplayConfig{Batch: 100, Interval: 20 * time.Millisecond})

	// A live callback of the same key every 10 ms while the replay runs.
	sent := map[int64]time.Time{}
	var live []int64
	for {
		cur, err := s.Replay(ctx, ops.Actor{}, rp.ID)
		require.NoError(t, err)
		if cur.State != db.ReplayRunning || len(live) >= 100 {
			break
		}
		m := dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: carrier.ID, EndpointIDs: []int64{ep.ID}, OrderingKey: "K0"})
		sent[m.ID] = time.Now()
		live = append(live, m.ID)
		time.Sleep(10 * time.Millisecond)
	}
	require.GreaterOrEqual(t, len(live), 10, "the replay ran beside the live callbacks")
	waitReplay(t, s, rp.ID, db.ReplayFinished)
	testenv.Eventually(t, 60*time.Second, "every delivery", func() bool { return sk.count() >= n+len(live) })

	var replayed, liveOrder []int64
	var worst time.Duration
	firstLive, lastReplayed := -1, -1
	for i, g := range sk.received() {
		if at, ok := sent[g.msgID]; ok {
			liveOrder = append(liveOrder, g.msgID)
			worst = max(worst, g.at.Sub(at))
			if firstLive < 0 {
				firstLive = i
			}
			continue
		}
		replayed = append(replayed, g.msgID)
		lastReplayed = i
	}
	require.Equal(t, live, liveOrder, "live callbacks in their order")
	require.Len(t, replayed, n)
	slices.Sort(replayed)
	for i, id := range replayed {
		require.Equal(t, int64(2_000_000+i+1), id, "each replayed delivery once")
	}
	t.Logf("%d live callbacks beside a replay of %d: worst latency %s", len(live), n, worst)
	require.Less(t, firstLive, lastReplayed, "the live callbacks waited for the whole replay")
}

// A replay of 100,000 deliveries whose runner stops half-way (its context
// ends, as when its process loses the maintenance role) and another runner
// takes over: every delivery goes out, none is queued twice, and no batch's
// transaction lasts a second.
func TestReplayResumesAfterRunnerStops(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 deliveries")
	}
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	s := ops.New(store, ops.Config{})
	sk := newSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: sk.srv.URL, MaxInFlight: 200})
	carrier, _ := dbtest.Carrier(t, store, nil)
	const n = 100_000
	since := history(t, url, ep.ID, carrier.ID, 3_000_000, n, 1000, "R")
	began := time.Now()
	rp, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered})
	require.NoError(t, err)
	require.Equal(t, int64(n), rp.Total)
	t.Logf("counted %d at creation in %s", rp.Total, time.Since(began))
	runDispatcher(t, store)

	var mu sync.Mutex
	var batches int
	var worst, sum time.Duration
	cfg := maintenance.ReplayConfig{Interval: 20 * time.Millisecond, OnBatch: func(b db.ReplayBatch, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		batches++
		worst, sum = max(worst, b.Tx), sum+b.Tx
	}}
	stop := runRunner(t, store, cfg)
	testenv.Eventually(t, 5*time.Minute, "half the replay", func() bool {
		cur, err := s.Replay(ctx, ops.Actor{}, rp.ID)
		require.NoError(t, err)
		return cur.Done >= n/2
	})
	stop()
	runRunner(t, store, cfg)
	final := waitReplay(t, s, rp.ID, db.ReplayFinished)
	require.Equal(t, int64(n), final.Done, "each delivery queued once")
	testenv.Eventually(t, 5*time.Minute, "every delivery", func() bool { return sk.count() >= n })

	seen := map[int64]int{}
	for _, g := range sk.received() {
		seen[g.msgID]++
	}
	dups := sk.count() - len(seen)
	require.Len(t, seen, n, "every message delivered")
	require.LessOrEqual(t, dups, maintenance.DefaultReplayBatch, "duplicates bounded by a batch")
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d batches of %d: mean %s, worst %s per transaction; %d duplicates", batches, maintenance.DefaultReplayBatch,
		sum/time.Duration(max(batches, 1)), worst, dups)
	require.Less(t, worst, time.Second, "a batch held its transaction a second or longer")
}
