package ops_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
	"github.com/hookrelay/hookrelay/maintenance"
	"github.com/hookrelay/hookrelay/ops"
)

// arrival is one request an orderSink received.
type arrival struct {
	msgID   int64
	key     string // X-Hookrelay-Ordering-Key
	replay  bool
	started time.Time
}

// orderSink is a loopback merchant endpoint that takes a little time over
// each request and records, per chain (the key, replayed or live), the
// arrival order and the most requests it had in flight at once.
type orderSink struct {
	srv      *httptest.Server
	isReplay func(msgID int64) bool
	mu       sync.Mutex
	all      []arrival
	inFlight map[string]int
	maxIn    map[string]int
}

func newOrderSink(t *testing.T, isReplay func(int64) bool) *orderSink {
	s := &orderSink{isReplay: isReplay, inFlight: map[string]int{}, maxIn: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id, _ := strconv.ParseInt(strings.TrimPrefix(r.Header.Get("webhook-id"), "msg_"), 10, 64)
		a := arrival{msgID: id, key: r.Header.Get("X-Hookrelay-Ordering-Key"), replay: s.isReplay(id), started: time.Now()}
		chain := a.chain()
		s.mu.Lock()
		s.all = append(s.all, a)
		s.inFlight[chain]++
		s.maxIn[chain] = max(s.maxIn[chain], s.inFlight[chain])
		s.mu.Unlock()
		time.Sleep(3 * time.Millisecond)
		s.mu.Lock()
		s.inFlight[chain]--
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (a arrival) chain() string {
	if a.replay {
		return "replay " + a.key
	}
	return "live " + a.key
}

func (s *orderSink) received() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.all...)
}

func (s *orderSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

func (s *orderSink) maxInFlight() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.maxIn))
	for k, v := range s.maxIn {
		out[k] = v
	}
	return out
}

// raiseIDs moves the id sequences past base, so that live callbacks get
// higher ids than the history a test wrote below base, as they would.
func raiseIDs(t *testing.T, url string, base int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, `SELECT setval('messages_id_seq', $1), setval('deliveries_id_seq', $1)`, base)
	require.NoError(t, err)
}

// A replay of several keys with many callbacks each, beside a live stream
// of the same keys: each key's replayed callbacks arrive in their original
// order, one at a time; the live callbacks keep their own order, one at a
// time per key, and go out while the replay still has that key's callbacks
// to send (they are not held behind it).
func TestReplayOrderPerKeyBesideLiveStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	s := ops.New(store, ops.Config{})
	const (
		base   = 4_000_000
		keys   = 5
		perKey = 60
		n      = keys * perKey
	)
	sk := newOrderSink(t, func(id int64) bool { return id > base && id <= base+n })
	// Room for every chain at once: nothing but the chains orders them.
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: sk.srv.URL, MaxInFlight: 100})
	carrier, _ := dbtest.Carrier(t, store, nil)
	since := history(t, url, ep.ID, carrier.ID, base, n, keys, "O")
	raiseIDs(t, url, 5_000_000)
	runDispatcher(t, store)
	rp, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered})
	require.NoError(t, err)
	require.Equal(t, int64(n), rp.Total)
	// Small batches: a key's callbacks span many of them.
	runRunner(t, store, maintenance.ReplayConfig{Batch: 40, Interval: 20 * time.Millisecond})

	// The live stream: a callback of each key in turn every 5 ms until every
	// replayed callback has arrived.
	live := map[string][]int64{}
	var nLive int
	for i := 0; ; i++ {
		replayed := 0
		for _, a := range sk.received() {
			if a.replay {
				replayed++
			}
		}
		if replayed >= n || nLive >= 3000 {
			break
		}
		key := "O" + strconv.Itoa(i%keys)
		m := dbtest.Message(t, store, &dbtest.MessageOpts{CarrierID: carrier.ID, EndpointIDs: []int64{ep.ID}, OrderingKey: key})
		live[key] = append(live[key], m.ID)
		nLive++
		time.Sleep(5 * time.Millisecond)
	}
	waitReplay(t, s, rp.ID, db.ReplayFinished)
	testenv.Eventually(t, 60*time.Second, "every delivery", func() bool { return sk.count() >= n+nLive })

	replayedOrder := map[string][]int64{}
	liveOrder := map[string][]int64{}
	// liveDuring counts, per key, the live callbacks that arrived between
	// the key's first and last replayed one.
	liveDuring := map[string]int{}
	all := sk.received()
	lastReplayed := map[string]int{}
	for i, a := range all {
		if a.replay {
			lastReplayed[a.key] = i
		}
	}
	for i, a := range all {
		if a.replay {
			replayedOrder[a.key] = append(replayedOrder[a.key], a.msgID)
			continue
		}
		liveOrder[a.key] = append(liveOrder[a.key], a.msgID)
		if len(replayedOrder[a.key]) > 0 && i < lastReplayed[a.key] {
			liveDuring[a.key]++
		}
	}
	for k := range keys {
		key := "O" + strconv.Itoa(k)
		want := make([]int64, perKey)
		for j := range perKey {
			want[j] = base + int64(j*keys+k) + 1
		}
		require.Equal(t, want, replayedOrder[key], "key %s: replayed callbacks in their original order, each once", key)
		require.Equal(t, live[key], liveOrder[key], "key %s: live callbacks in their order", key)
		require.Positive(t, liveDuring[key], "key %s: live callbacks were held until its replay ended", key)
	}
	for chain, m := range sk.maxInFlight() {
		require.Equal(t, 1, m, "%s: requests of one chain in flight at once", chain)
	}
	t.Logf("%d replayed over %d keys beside %d live; live during the replay per key: %v", n, keys, nLive, liveDuring)
}

// Two replays of one key's window: the second waits until the first one's
// deliveries of the key are sent, then sends them again, in order, one at a
// time; meanwhile the queued rows show the key itself, not their chain.
func TestReplayOfAKeyStillBeingReplayedWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	s := ops.New(store, ops.Config{})
	const base, n = 6_000_000, 6
	sk := newOrderSink(t, func(int64) bool { return true })
	// Disabled: the first replay's deliveries stay queued.
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: sk.srv.URL, MaxInFlight: 100, Disabled: true})
	carrier, _ := dbtest.Carrier(t, store, nil)
	since := history(t, url, ep.ID, carrier.ID, base, n, 1, "W")
	req := ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered}
	runner := maintenance.NewReplayRunner(quietLogger(), maintenance.ReplayConfig{}, store)

	first, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, req)
	require.NoError(t, err)
	_, err = runner.Step(ctx)
	require.NoError(t, err)
	first, err = s.Replay(ctx, ops.Actor{}, first.ID)
	require.NoError(t, err)
	require.Equal(t, db.ReplayFinished, first.State)
	require.Equal(t, int64(n), first.Done)
	d, _, err := s.Delivery(ctx, ops.Actor{}, base+1)
	require.NoError(t, err)
	require.Equal(t, db.DeliveryPending, d.State)
	require.Equal(t, "W0", d.OrderingKey, "a queued replayed delivery shows its key")
	msgs, err := s.Messages(ctx, ops.Actor{}, db.MessageFilter{OrderingKey: "W0", Since: since.Add(-time.Hour), Until: time.Now().Add(time.Minute)}, db.MessagePosition{}, 10)
	require.NoError(t, err)
	require.Len(t, msgs, n)
	for _, m := range msgs {
		require.Len(t, m.Deliveries, 1)
		require.Equal(t, db.DeliveryPending, m.Deliveries[0].State, "message %d", m.ID)
	}

	second, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, req)
	require.NoError(t, err)
	require.Equal(t, int64(n), second.Total)
	for range 3 {
		_, err = runner.Step(ctx)
		require.NoError(t, err)
	}
	second, err = s.Replay(ctx, ops.Actor{}, second.ID)
	require.NoError(t, err)
	require.Equal(t, db.ReplayRunning, second.State, "the second replay waits for the first one's deliveries")
	require.Zero(t, second.Done)
	require.Zero(t, second.Failed)

	_, err = s.EnableEndpoint(ctx, ops.Actor{}, ep.ID)
	require.NoError(t, err)
	runDispatcher(t, store)
	runRunner(t, store, maintenance.ReplayConfig{Interval: 20 * time.Millisecond})
	second = waitReplay(t, s, second.ID, db.ReplayFinished)
	require.Equal(t, int64(n), second.Done)
	require.Zero(t, second.Failed)
	testenv.Eventually(t, 30*time.Second, "both replays", func() bool { return sk.count() >= 2*n })
	var order []int64
	for _, a := range sk.received() {
		require.Equal(t, "W0", a.key)
		order = append(order, a.msgID-base)
	}
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, order)
	require.Equal(t, map[string]int{"replay W0": 1}, sk.maxInFlight())
}

// A replayed delivery that runs out of attempts becomes a dead letter of
// its key (not of its chain), and a retry of it goes back unordered under
// that key, like any retried dead letter.
func TestReplayedDeadLetterKeepsItsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	s := ops.New(store, ops.Config{})
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	const base, n = 7_000_000, 2
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: failing.URL, RetrySchedule: []time.Duration{time.Second}})
	carrier, _ := dbtest.Carrier(t, store, nil)
	since := history(t, url, ep.ID, carrier.ID, base, n, 1, "D")
	runDispatcher(t, store)
	rp, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered})
	require.NoError(t, err)
	runRunner(t, store, maintenance.ReplayConfig{Interval: 20 * time.Millisecond})
	waitReplay(t, s, rp.ID, db.ReplayFinished)
	for id := base + 1; id <= base+n; id++ {
		testenv.Eventually(t, 30*time.Second, "a dead letter", func() bool {
			d, _, err := s.Delivery(ctx, ops.Actor{}, int64(id))
			require.NoError(t, err)
			return d.State == db.DeliveryDead
		})
		d, _, err := s.Delivery(ctx, ops.Actor{}, int64(id))
		require.NoError(t, err)
		require.Equal(t, "D0", d.OrderingKey, "dead letter %d", id)
	}
	retried, err := s.RetryDeadLetters(ctx, ops.DeadLetters{IDs: []int64{base + 1}})
	require.NoError(t, err)
	require.Equal(t, int64(1), retried)
	d, _, err := s.Delivery(ctx, ops.Actor{}, base+1)
	require.NoError(t, err)
	require.Equal(t, db.DeliveryPending, d.State)
	require.Equal(t, "D0", d.OrderingKey)
	require.False(t, d.Ordered, "a retried dead letter goes back unordered")
}

// Two replays of one window started one after the other, on an endpoint
// with "ordering": "key" and on one with "none": either way the second
// waits while the first one's deliveries are still queued, then queues
// them all again (done, none failed), and each callback goes out once per
// replay.
func TestOverlappingReplaysWaitWhateverTheOrdering(t *testing.T) {
	t.Parallel()
	for _, ordering := range []string{"key", "none"} {
		t.Run(ordering, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := dbtest.NewURL(t)
			store := dbtest.Open(t, url, db.Config{})
			s := ops.New(store, ops.Config{})
			const base, n, keys = 7_000_000, 12, 3
			sk := newOrderSink(t, func(int64) bool { return true })
			// Disabled: the first replay's deliveries stay queued.
			ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: sk.srv.URL, MaxInFlight: 100, Disabled: true, Ordering: ordering})
			carrier, _ := dbtest.Carrier(t, store, nil)
			since := history(t, url, ep.ID, carrier.ID, base, n, keys, "V")
			req := ops.ReplayRequest{Since: since, Until: time.Now(), Status: db.ReplayDelivered}
			runner := maintenance.NewReplayRunner(quietLogger(), maintenance.ReplayConfig{}, store)

			first, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, req)
			require.NoError(t, err)
			_, err = runner.Step(ctx)
			require.NoError(t, err)
			first, err = s.Replay(ctx, ops.Actor{}, first.ID)
			require.NoError(t, err)
			require.Equal(t, db.ReplayFinished, first.State)
			require.Equal(t, int64(n), first.Done)

			second, err := s.StartReplay(ctx, ops.Actor{}, ep.ID, req)
			require.NoError(t, err)
			require.Equal(t, int64(n), second.Total)
			for range 3 {
				_, err = runner.Step(ctx)
				require.NoError(t, err)
			}
			second, err = s.Replay(ctx, ops.Actor{}, second.ID)
			require.NoError(t, err)
			require.Equal(t, db.ReplayRunning, second.State, "the second replay waits for the first one's deliveries")
			require.Zero(t, second.Done)
			require.Zero(t, second.Failed, "deliveries queued by another replay are waited for, not counted as failed")

			_, err = s.EnableEndpoint(ctx, ops.Actor{}, ep.ID)
			require.NoError(t, err)
			runDispatcher(t, store)
			runRunner(t, store, maintenance.ReplayConfig{Interval: 20 * time.Millisecond})
			second = waitReplay(t, s, second.ID, db.ReplayFinished)
			require.Equal(t, int64(n), second.Done)
			require.Zero(t, second.Failed)
			testenv.Eventually(t, 30*time.Second, "both replays", func() bool { return sk.count() >= 2*n })
			sent := map[int64]int{}
			for _, a := range sk.received() {
				sent[a.msgID-base]++
			}
			for i := int64(1); i <= n; i++ {
				require.Equal(t, 2, sent[i], "message %d: once per replay", i)
			}
			require.Len(t, sent, n)
		})
	}
}
