package dispatch

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestEndpointLimits: max_in_flight bounds concurrent requests to an
// endpoint across keys, and rate_limit_per_sec spaces them out.
func TestEndpointLimits(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	var mu sync.Mutex
	cur, peak := 0, 0
	busy := newHTTPTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // a slow endpoint: requests overlap
		mu.Lock()
		cur--
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	limited := newSink(t)
	epBusy, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: busy.URL, MaxInFlight: 2})
	epRate, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: limited.srv.URL, RateLimitPerSec: 5})
	const n = 10
	for i := range n {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{epBusy.ID, epRate.ID}, OrderingKey: fmt.Sprintf("L%d", i), Queues: 8})
	}
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 30*time.Second, "rate-limited deliveries", func() bool { return len(limited.requests()) == n })
	r := limited.requests()
	require.GreaterOrEqual(t, r[n-1].At.Sub(r[0].At), 1500*time.Millisecond, "10 requests at 5/s take at least ~1.8 s")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, peak, "never more than max_in_flight at once (and it was reached)")
}

// TestRetriedDeadLetterDoesNotWaitForItsChain: a dead letter retried by an
// operator is delivered at once although a later callback of its key is
// still pending, and does not hold that callback back.
func TestRetriedDeadLetterDoesNotWaitForItsChain(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	s := newSink(t)
	var mu sync.Mutex
	firstOK := false
	s.setDecide(func(_ *http.Request, body []byte) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		switch string(body) {
		case `{"n":1}`:
			if !firstOK {
				return http.StatusInternalServerError, nil
			}
		case `{"n":3}`:
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"3600"}}
		}
		return http.StatusOK, nil
	})
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, RetrySchedule: []time.Duration{10 * time.Millisecond}})
	m1 := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "R", Queues: 8, Payload: []byte(`{"n":1}`)})
	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "R", Queues: 8, Payload: []byte(`{"n":2}`)})
	runDispatcher(t, store, testConfig())
	bodies := func() []string {
		var out []string
		for _, r := range s.requests() {
			out = append(out, fmt.Sprintf("%s:%d", r.Body, r.Status))
		}
		return out
	}
	testenv.Eventually(t, 20*time.Second, "second delivered after the first died", func() bool { return len(s.requests()) == 3 })
	require.Equal(t, []string{`{"n":1}:500`, `{"n":1}:500`, `{"n":2}:200`}, bodies())

	dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "R", Queues: 8, Payload: []byte(`{"n":3}`)})
	testenv.Eventually(t, 20*time.Second, "third throttled", func() bool { return len(s.requests()) == 4 })
	mu.Lock()
	firstOK = true
	mu.Unlock()
	n, err := store.DeadLetterRetry(ctx, []int64{m1.DeliveryIDs[0]}, db.DeadLetterFilter{})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	testenv.Eventually(t, 20*time.Second, "retried dead letter delivered", func() bool { return len(s.requests()) == 5 })
	require.Equal(t, `{"n":1}:200`, bodies()[4], "delivered while {n:3} of its key still waits")
}

// TestRedirectAndTimeoutAreFailedAttempts: a 3xx is not followed, an answer
// slower than the endpoint's timeout is a timeout; both are failed attempts.
func TestRedirectAndTimeoutAreFailedAttempts(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	target := newSink(t)
	redirect := newSink(t)
	redirect.setDecide(func(*http.Request, []byte) (int, http.Header) {
		return http.StatusFound, http.Header{"Location": {target.srv.URL}}
	})
	slow := newHTTPTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client hanging up
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	hour := []time.Duration{time.Hour}
	epR, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: redirect.srv.URL, RetrySchedule: hour})
	epS, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: slow.URL, RetrySchedule: hour, Timeout: 200 * time.Millisecond})
	mR := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{epR.ID}, Queues: 8})
	mS := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{epS.ID}, Queues: 8})
	runDispatcher(t, store, testConfig())
	outcome := func(id int64) (db.Attempt, bool) {
		atts, err := dbtest.AttemptsForDelivery(ctx, store, id)
		require.NoError(t, err)
		if len(atts) == 0 {
			return db.Attempt{}, false
		}
		return atts[0], true
	}
	testenv.Eventually(t, 20*time.Second, "both attempts recorded", func() bool {
		_, a := outcome(mR.DeliveryIDs[0])
		_, b := outcome(mS.DeliveryIDs[0])
		return a && b
	})
	a, _ := outcome(mR.DeliveryIDs[0])
	require.Equal(t, OutcomeFailed, a.Outcome)
	require.Equal(t, http.StatusFound, a.StatusCode)
	require.Empty(t, target.requests(), "the redirect was not followed")
	b, _ := outcome(mS.DeliveryIDs[0])
	require.Equal(t, OutcomeTimeout, b.Outcome)
	require.Len(t, redirect.requests(), 1, "an HTTP answer is never retried in-process")
}

// TestHangingEndpointDoesNotStarveOthers: an endpoint that never answers,
// with more of its chain heads due than the dispatcher has delivery slots,
// keeps at most its share of the slots; a healthy endpoint's deliveries all
// go through while the hanging requests are still open.
func TestHangingEndpointDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	hang := newGatedSink(t)
	healthy := newSink(t)
	epHang, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: hang.srv.URL, Timeout: time.Minute})
	epOK, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: healthy.srv.URL})
	const keys = 40
	for i := range keys {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{epHang.ID}, OrderingKey: fmt.Sprintf("hang-%d", i), Queues: 8})
	}
	for i := range keys {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{epOK.ID}, OrderingKey: fmt.Sprintf("ok-%d", i), Queues: 8})
	}
	cfg := testConfig()
	cfg.Concurrency = 8 // far fewer slots than the hanging endpoint's due heads
	runDispatcher(t, store, cfg)
	testenv.Eventually(t, 20*time.Second, "healthy endpoint served", func() bool { return len(healthy.requests()) == keys })
	require.LessOrEqual(t, hang.count(), cfg.Concurrency/4, "the hanging endpoint holds at most its share of slots")
	require.Empty(t, hang.delivered(), "the hanging requests were still open all along")
	hang.open()
}
