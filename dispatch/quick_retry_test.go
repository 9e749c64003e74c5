package dispatch

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestOrderedHeadFailingOnceIsRetriedQuickly: the head of a key's chain
// fails once while its successors are parked behind it; it is tried again
// after the first quick step (0.5 s), not the endpoint's first scheduled
// delay (5 s by default), and the chain then goes on in order.
func TestOrderedHeadFailingOnceIsRetriedQuickly(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	s := newSink(t)
	failed := false
	s.setDecide(func(_ *http.Request, body []byte) (int, http.Header) {
		if string(body) == `{"n":1}` && !failed {
			failed = true
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL}) // the default schedule: 5 s first
	const n = 5
	for i := 1; i <= n; i++ {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "Q", Queues: 8,
			Payload: []byte(`{"n":` + strconv.Itoa(i) + `}`)})
	}
	cfg := testConfig()
	cfg.QuickRetries = nil // the defaults
	runDispatcher(t, store, cfg)

	testenv.Eventually(t, 10*time.Second, "the head's failure", func() bool { return len(s.requests()) > 0 })
	sawParked := false
	testenv.Eventually(t, 10*time.Second, "the head's retry", func() bool {
		counts, err := dbtest.DeliveryQueueCounts(ctx, store)
		require.NoError(t, err)
		for _, c := range counts {
			sawParked = sawParked || c.Parked > 0
		}
		return len(s.requests()) > 1
	})
	require.True(t, sawParked, "the successors waited parked behind the failed head")
	testenv.Eventually(t, 10*time.Second, "the whole chain", func() bool { return len(s.requests()) == n+1 })

	reqs := s.requests()
	require.Equal(t, `{"n":1}`, string(reqs[0].Body))
	require.Equal(t, http.StatusInternalServerError, reqs[0].Status)
	require.Equal(t, `{"n":1}`, string(reqs[1].Body), "nothing of the key before its head succeeded")
	require.Equal(t, "2", reqs[1].Header.Get("X-Hookrelay-Attempt"))
	gap := reqs[1].At.Sub(reqs[0].At)
	require.GreaterOrEqual(t, gap, 450*time.Millisecond, "the first quick step is 0.5 s (no jitter here)")
	require.Less(t, gap, 3*time.Second, "retried quickly, not after the schedule's 5 s")
	for i := 1; i <= n; i++ {
		r := reqs[i]
		require.Equal(t, `{"n":`+strconv.Itoa(i)+`}`, string(r.Body), "in order")
		require.Equal(t, http.StatusOK, r.Status)
	}
}

// TestUnorderedDeliveriesOfAKeyGoTogether: deliveries stored unordered (an
// endpoint with ordering "none") of one key are in flight at the same time;
// none is parked behind another.
func TestUnorderedDeliveriesOfAKeyGoTogether(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	const n = 4
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	srv := newHTTPTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == n {
			close(all)
		}
		mu.Unlock()
		// Hold every request until all n are in flight at once (or give
		// up after a while: ordered, they never would be).
		select {
		case <-all:
		case <-time.After(3 * time.Second):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: srv.URL, Ordering: db.OrderingNone, MaxInFlight: 10})
	var ids []int64
	for i := range n {
		m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: "U", Queues: 8,
			Payload: []byte(`{"n":` + strconv.Itoa(i) + `}`), Unordered: []bool{true}})
		ids = append(ids, m.DeliveryIDs[0])
	}
	ctx := context.Background()
	for _, id := range ids {
		d, _, err := store.DeliveryGet(ctx, id)
		require.NoError(t, err)
		require.False(t, d.Ordered, "stored unordered")
	}
	runDispatcher(t, store, testConfig())
	testenv.Eventually(t, 20*time.Second, "every delivery", func() bool {
		for _, id := range ids {
			d, _, err := store.DeliveryGet(ctx, id)
			require.NoError(t, err)
			if d.State != db.DeliveryDelivered {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, n, most, "all of the key's deliveries in flight at once")
}
