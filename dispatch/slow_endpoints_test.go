package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestSlowEndpointsKeepToTheirSlots: of 1,000 endpoints, 10 never answer
// while each has 30 chain heads due; at the default settings (256 delivery
// slots, max_in_flight 10) the slow ones hold at most their max_in_flight
// each (100 slots in all) and the 990 others' deliveries all go through while
// every slow request is still open.
func TestSlowEndpointsKeepToTheirSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	carrier, _ := dbtest.Carrier(t, store, nil)
	slow := newGatedSink(t)
	fast := newSink(t)
	const endpoints, slowOnes, backlog = 1000, 10, 30
	var msgs []db.NewMessage
	add := func(ep int64, key string) {
		p := fmt.Appendf(nil, `{"tracking_no":%q}`, key)
		msgs = append(msgs, db.NewMessage{CarrierID: carrier.ID, EventType: "delivered", OrderingKey: key,
			Queue: hookrelay.QueueFor(key, 8), Payload: p, PayloadSize: len(p), PayloadSHA256: make([]byte, 32),
			EndpointIDs: []int64{ep}})
	}
	for i := range endpoints {
		url := fast.srv.URL
		if i < slowOnes {
			url = slow.srv.URL
		}
		ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: url, Timeout: time.Minute})
		if i < slowOnes {
			for k := range backlog {
				add(ep.ID, fmt.Sprintf("slow-%d-%d", i, k))
			}
		} else {
			add(ep.ID, fmt.Sprintf("fast-%d", i))
		}
	}
	for start := 0; start < len(msgs); start += 500 {
		_, err := store.MessageInsertMany(ctx, msgs[start:min(start+500, len(msgs))])
		require.NoError(t, err)
	}
	cfg := testConfig()
	cfg.Concurrency = DefaultConcurrency
	start := time.Now()
	runDispatcher(t, store, cfg)
	// Generous: under the race detector on a loaded 2-vCPU machine a
	// thousand endpoints' first deliveries take minutes.
	testenv.Eventually(t, 5*time.Minute, "the fast endpoints served", func() bool {
		return len(fast.requests()) == endpoints-slowOnes
	})
	t.Logf("%d fast deliveries in %s", endpoints-slowOnes, time.Since(start).Round(time.Millisecond))
	require.LessOrEqual(t, slow.count(), slowOnes*10, "the slow endpoints hold at most their max_in_flight")
	require.Positive(t, slow.count())
	require.Empty(t, slow.delivered(), "the slow requests were still open all along")
	slow.open()
}
