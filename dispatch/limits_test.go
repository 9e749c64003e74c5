package dispatch

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
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
		time.Sleep(30 * time.Millisecond)
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
	waitFor(t, 30*time.Second, "rate-limited deliveries", func() bool { return len(limited.requests()) == n })
	r := limited.requests()
	require.GreaterOrEqual(t, r[n-1].At.Sub(r[0].At), 1500*time.Millisecond, "10 requests at 5/s take at least ~1.8 s")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, peak, "never more than max_in_flight at once (and it was reached)")
}
