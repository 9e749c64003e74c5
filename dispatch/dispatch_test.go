package dispatch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// chainOrderOK checks that for each ordering key the successful deliveries
// came in message-id order and that no message of a key was sent before the
// previous one of that key had succeeded.
func checkOrder(t *testing.T, reqs []received) map[string]int {
	t.Helper()
	lastOK := map[string]int64{}
	delivered := map[string]int{}
	seenOK := map[int64]bool{}
	for _, r := range reqs {
		key := r.Header.Get("X-Hookrelay-Ordering-Key")
		id, err := strconv.ParseInt(r.Header.Get("Webhook-Id")[len("msg_"):], 10, 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, id, lastOK[key], "key %s: message %d sent after %d succeeded", key, id, lastOK[key])
		if r.Status/100 == 2 {
			if !seenOK[id] {
				delivered[key]++
			}
			seenOK[id] = true
			lastOK[key] = id
		}
	}
	return delivered
}

func TestDeliversSignedOnceInOrder(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	secret := stdSecret(9)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL + "/hook", Secret: secret})
	const keys, perKey = 6, 5
	var want int
	for i := range perKey {
		for k := range keys {
			dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprintf("T%d", k), Queues: 8,
				Payload: fmt.Appendf(nil, `{"tracking_no":"T%d","seq":%d}`, k, i)})
			want++
		}
	}
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 20*time.Second, "every delivery", func() bool { return len(s.requests()) >= want })
	reqs := s.requests()
	require.Len(t, reqs, want, "each delivered exactly once with a healthy endpoint")
	for _, r := range reqs {
		require.True(t, verifyStandardWebhook(secret, r.Header, r.Body), "signature verifies")
		require.Equal(t, r.Header.Get("Webhook-Id"), r.Header.Get("Idempotency-Key"))
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.Equal(t, "1", r.Header.Get("X-Hookrelay-Attempt"))
		require.NotEmpty(t, r.Header.Get("X-Hookrelay-Carrier"))
		require.Equal(t, "delivered", r.Header.Get("X-Hookrelay-Event-Type"))
		require.Contains(t, r.Header.Get("User-Agent"), "hookrelay/")
	}
	for _, n := range checkOrder(t, reqs) {
		require.Equal(t, perKey, n)
	}
	testenv.Eventually(t, 10*time.Second, "queue empty", func() bool {
		c, err := dbtest.DeliveryQueueCounts(context.Background(), store)
		require.NoError(t, err)
		return len(c) == 0
	})
}

// TestOrderUnderRetriesWithCompetingDispatchers runs three dispatchers
// against an endpoint that fails a third of the requests: every message is
// delivered, and per key in order.
func TestOrderUnderRetriesWithCompetingDispatchers(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(1, 2))
	s.setDecide(func(*http.Request, []byte) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		if rnd.IntN(3) == 0 {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	sched := make([]time.Duration, 30)
	for i := range sched {
		sched[i] = 10 * time.Millisecond
	}
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, RetrySchedule: sched, MaxInFlight: 50})
	const keys, perKey = 10, 8
	for i := range perKey {
		for k := range keys {
			dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: fmt.Sprintf("K%d", k), Queues: 8,
				Payload: fmt.Appendf(nil, `{"i":%d}`, i)})
		}
	}
	cfg := testConfig()
	cfg.CircuitThreshold = 1000
	var ids []int64
	for range 3 {
		d, _ := runDispatcher(t, store, cfg)
		ids = append(ids, d.ID())
	}
	require.Len(t, map[int64]bool{ids[0]: true, ids[1]: true, ids[2]: true}, 3)
	testenv.Eventually(t, 60*time.Second, "every message delivered", func() bool {
		n := 0
		for _, r := range s.requests() {
			if r.Status == 200 {
				n++
			}
		}
		return n >= keys*perKey
	})
	for k, n := range checkOrder(t, s.requests()) {
		require.Equal(t, perKey, n, k)
	}
}

func TestRetriesThenDeadLetterThenNextOfKey(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	s := newSink(t)
	s.setDecide(func(_ *http.Request, body []byte) (int, http.Header) {
		if string(body) == `{"n":1}` {
			return http.StatusBadGateway, nil
		}
		return http.StatusOK, nil
	})
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, RetrySchedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}})
	first := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "D", Queues: 8, Payload: []byte(`{"n":1}`)})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "D", Queues: 8, Payload: []byte(`{"n":2}`)})
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 20*time.Second, "second message", func() bool {
		r := s.requests()
		return len(r) > 0 && string(r[len(r)-1].Body) == `{"n":2}`
	})
	reqs := s.requests()
	require.Len(t, reqs, 4, "1 + 2 retries of the first, then the second")
	for i := range 3 {
		require.Equal(t, strconv.Itoa(i+1), reqs[i].Header.Get("X-Hookrelay-Attempt"))
		require.Equal(t, reqs[0].Header.Get("Webhook-Id"), reqs[i].Header.Get("Webhook-Id"), "same id on every retry")
	}
	n, err := dbtest.DeadLetterCountForEndpoint(ctx, store, ep.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	atts, err := dbtest.AttemptsForDelivery(ctx, store, first.DeliveryIDs[0])
	require.NoError(t, err)
	require.Len(t, atts, 3)
	require.Equal(t, 502, atts[2].StatusCode)
	require.Contains(t, atts[2].ResponseExcerpt, "ok 502")
	require.NotZero(t, atts[2].DispatcherID)
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	calls := 0
	s.setDecide(func(*http.Request, []byte) (int, http.Header) {
		calls++
		if calls == 1 {
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}
		}
		return http.StatusOK, nil
	})
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, RetrySchedule: []time.Duration{10 * time.Millisecond}})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8})
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 20*time.Second, "retry", func() bool { return len(s.requests()) >= 2 })
	r := s.requests()
	require.GreaterOrEqual(t, r[1].At.Sub(r[0].At), 1900*time.Millisecond, "waited at least Retry-After, not the 10ms schedule")
}

func TestGoneDisablesAndEnableResumes(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	s := newSink(t)
	s.setDecide(func(*http.Request, []byte) (int, http.Header) { return http.StatusGone, nil })
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL})
	m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8})
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 20*time.Second, "endpoint disabled", func() bool {
		e, err := store.EndpointGet(ctx, ep.ID)
		require.NoError(t, err)
		return e.Status == "disabled"
	})
	e, err := store.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Contains(t, e.DisabledReason, "410")
	time.Sleep(500 * time.Millisecond) // held rows are looked at again; none may be sent
	require.Len(t, s.requests(), 1, "held while disabled")
	s.setDecide(nil)
	_, err = store.EndpointEnable(ctx, ep.ID)
	require.NoError(t, err)
	testenv.Eventually(t, 20*time.Second, "delivery after enable", func() bool { return len(s.requests()) == 2 })
	r := s.requests()
	require.Equal(t, "1", r[1].Header.Get("X-Hookrelay-Attempt"), "the 410 spent no attempt")
	var atts []db.Attempt
	testenv.Eventually(t, 10*time.Second, "attempts recorded", func() bool {
		var err error
		atts, err = dbtest.AttemptsForDelivery(ctx, store, m.DeliveryIDs[0])
		require.NoError(t, err)
		return len(atts) == 2
	})
	require.Equal(t, OutcomeGone, atts[0].Outcome)
}

func TestCircuitBreakerOpensProbesAndCloses(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	s := newSink(t)
	var mu sync.Mutex
	failing := true
	s.setDecide(func(*http.Request, []byte) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	sched := make([]time.Duration, 50)
	for i := range sched {
		sched[i] = 5 * time.Millisecond
	}
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, RetrySchedule: sched})
	other := newSink(t)
	ep2, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: other.srv.URL})
	m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8})
	cfg := testConfig()
	cfg.CircuitThreshold, cfg.CircuitBase, cfg.CircuitMax = 3, time.Second, 4*time.Second
	runDispatcher(t, store, cfg)
	testenv.Eventually(t, 20*time.Second, "circuit open", func() bool {
		h, err := dbtest.EndpointHealthGet(ctx, store, ep.ID)
		return err == nil && h.CircuitState != "closed"
	})
	// While open, another endpoint is not held back.
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep2.ID}, Queues: 8})
	testenv.Eventually(t, 20*time.Second, "other endpoint delivered", func() bool { return len(other.requests()) == 1 })
	// The failing endpoint sees a probe only after the open period, and
	// attempts are not spent while waiting.
	n0 := len(s.requests())
	require.Equal(t, 3, n0, "no attempts while open")
	testenv.Eventually(t, 20*time.Second, "probe", func() bool { return len(s.requests()) > n0 })
	r := s.requests()
	require.GreaterOrEqual(t, r[n0].At.Sub(r[n0-1].At), 900*time.Millisecond)
	mu.Lock()
	failing = false
	mu.Unlock()
	testenv.Eventually(t, 30*time.Second, "delivered after recovery", func() bool {
		rs := s.requests()
		return rs[len(rs)-1].Status == 200
	})
	testenv.Eventually(t, 10*time.Second, "circuit closed", func() bool {
		h, err := dbtest.EndpointHealthGet(ctx, store, ep.ID)
		return err == nil && h.CircuitState == "closed" && h.ConsecutiveFailures == 0
	})
	testenv.Eventually(t, 10*time.Second, "every attempt recorded", func() bool {
		atts, err := dbtest.AttemptsForDelivery(ctx, store, m.DeliveryIDs[0])
		require.NoError(t, err)
		return len(atts) == len(s.requests())
	})
}

func TestFailingTooLongDisables(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	s := newSink(t)
	s.setDecide(func(*http.Request, []byte) (int, http.Header) { return http.StatusInternalServerError, nil })
	sched := make([]time.Duration, 100)
	for i := range sched {
		sched[i] = 20 * time.Millisecond
	}
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, RetrySchedule: sched})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, Queues: 8})
	cfg := testConfig()
	cfg.CircuitThreshold, cfg.DisableAfter = 1000, 300*time.Millisecond
	runDispatcher(t, store, cfg)
	testenv.Eventually(t, 20*time.Second, "auto-disable", func() bool {
		e, err := store.EndpointGet(ctx, ep.ID)
		require.NoError(t, err)
		return e.Status == "disabled"
	})
	e, err := store.EndpointGet(ctx, ep.ID)
	require.NoError(t, err)
	require.Contains(t, e.DisabledReason, "too long")
	c, err := dbtest.DeliveryQueueCounts(ctx, store)
	require.NoError(t, err)
	require.Len(t, c, 1, "the delivery is kept")
}

// TestWakeEndsTheIdlePause: a dispatcher backing off after claims that found
// nothing claims at once when Wake says rows may be due (the API in the same
// process stored callbacks), instead of at the end of its pause.
func TestWakeEndsTheIdlePause(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	s := newSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL + "/hook"})
	cfg := testConfig()
	cfg.IdlePoll, cfg.BusyPoll = time.Minute, time.Minute // the first empty claim pauses a minute
	d := New(testLogger(t), cfg, store, nil, nil)
	claims := watchClaims(d)
	startDispatcher(t, d)
	testenv.Eventually(t, 10*time.Second, "every queue held", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.held) == cfg.Queues
	})
	claims.waitPaused(t, nil) // the claims found nothing

	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "W1", Queues: 8})
	time.Sleep(time.Second) // a second for a claim that should not come
	require.Empty(t, s.requests(), "paused: nothing claimed without a wake-up")

	start := time.Now()
	d.Wake()
	testenv.Eventually(t, 5*time.Second, "the delivery after Wake", func() bool { return len(s.requests()) == 1 })
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestListenWakesTheIdlePause: a paused dispatcher that LISTENs claims at
// once when an API in another process announces stored callbacks in the
// queues of one of its claim loops, and only that loop wakes; it ignores its
// own process's announcements (that API wakes it directly), and after its
// LISTEN session is killed opens another and hears again.
func TestListenWakesTheIdlePause(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := dbtest.NewURL(t)
	store := dbtest.Open(t, url, db.Config{})
	s := newSink(t)
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL + "/hook"})
	cfg := testConfig()
	cfg.IdlePoll, cfg.BusyPoll = time.Minute, time.Minute // the first empty claim pauses a minute
	cfg.ClaimLoops = 2                                    // loop q%2 holds queue q (the held queues are 0..7)
	cfg.Listen, cfg.SelfToken, cfg.ListenRetry = true, "this-process", 100*time.Millisecond
	d := New(testLogger(t), cfg, store, nil, nil)
	claims := watchClaims(d)
	startDispatcher(t, d)
	listening := func() bool { return metricValue(t, d.metrics.listening) == 1 }
	testenv.Eventually(t, 10*time.Second, "every queue held and the LISTEN session open", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.held) == cfg.Queues && listening()
	})
	claims.waitPaused(t, nil) // the claims found nothing
	wakeups := func() float64 { return metricValue(t, d.metrics.wakeups) }

	q := hookrelay.QueueFor("L1", cfg.Queues)
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "L1", Queues: cfg.Queues})
	require.NoError(t, store.DueNotify(ctx, db.Announcement{Token: cfg.SelfToken}))
	time.Sleep(time.Second) // a second for a claim that should not come
	require.Empty(t, s.requests(), "its own process's announcement is not acted on")
	require.Zero(t, metricValue(t, d.metrics.notifications))

	w0 := wakeups()
	other := (q + 1) % cfg.Queues // held by the other loop
	require.NoError(t, store.DueNotify(ctx, db.Announcement{Token: "another-process", Queues: []int{other}}))
	testenv.Eventually(t, 5*time.Second, "the other loop woken", func() bool { return wakeups() == w0+1 })
	time.Sleep(500 * time.Millisecond) // for a second wake-up or claim that should not come
	require.Empty(t, s.requests(), "the loop holding the row's queue was not woken")
	require.Equal(t, w0+1, wakeups(), "one loop woken")

	start := time.Now()
	require.NoError(t, store.DueNotify(ctx, db.Announcement{Token: "another-process", Queues: []int{q}}))
	testenv.Eventually(t, 5*time.Second, "the delivery after the announcement of its queue", func() bool { return len(s.requests()) == 1 })
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, 2.0, metricValue(t, d.metrics.notifications))

	// The LISTEN session is killed: the dispatcher opens another.
	before := claims.snapshot()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var killed int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'hookrelay-dispatch-listen'`).Scan(&killed))
	require.Equal(t, 1, killed)
	testenv.Eventually(t, 5*time.Second, "the LISTEN session lost", func() bool { return !listening() })
	testenv.Eventually(t, 10*time.Second, "a new LISTEN session", listening)
	claims.waitPaused(t, before) // the wake-up on reconnecting found nothing: paused again

	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "L2", Queues: cfg.Queues})
	time.Sleep(500 * time.Millisecond) // for a claim that should not come
	require.Len(t, s.requests(), 1, "paused: nothing claimed without a wake-up")
	// An announcement naming no queue wakes every loop.
	require.NoError(t, store.DueNotify(ctx, db.Announcement{Token: "another-process"}))
	testenv.Eventually(t, 5*time.Second, "the delivery after the reconnected session's announcement", func() bool { return len(s.requests()) == 2 })
}

// metricValue reads a counter's or a gauge's value.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if c := out.GetCounter(); c != nil {
		return c.GetValue()
	}
	return out.GetGauge().GetValue()
}
