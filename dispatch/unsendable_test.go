package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestUnsendableDeliveriesAreDeadAtOnce: deliveries whose ordering key,
// event type or carrier name holds a control character no HTTP header can
// carry (rows stored before ingest refused them, inserted here directly)
// can never be sent. Each becomes a dead letter after one recorded attempt,
// none counts against the endpoint's circuit — closed after 15 of them, more
// than its threshold of 10 — the chain they were in goes on in order, and
// the endpoint's valid callbacks keep being delivered.
func TestUnsendableDeliveriesAreDeadAtOnce(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := context.Background()
	s := newSink(t)
	sched := make([]time.Duration, 5)
	for i := range sched {
		sched[i] = 10 * time.Millisecond
	}
	ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL, RetrySchedule: sched})
	badCarrier, _ := dbtest.Carrier(t, store, &dbtest.CarrierOpts{Name: "carrier\r\nX-Injected: 1"})
	message := func(key, eventType string, n int, carrierID int64) int64 {
		m := dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: []int64{ep.ID}, OrderingKey: key, EventType: eventType,
			CarrierID: carrierID, Queues: 8, Payload: fmt.Appendf(nil, `{"n":%d}`, n)})
		return m.DeliveryIDs[0]
	}
	// Key K: a valid callback, an unsendable one, two valid ones.
	message("K", "delivered", 1, 0)
	var bad []int64
	bad = append(bad, message("K", "bad\revent", 2, 0))
	message("K", "delivered", 3, 0)
	message("K", "delivered", 4, 0)
	for i, c := range []string{"\r", "\n", "\x7f", "\x01", "\x1f", "\x0b", "\r\n"} {
		bad = append(bad, message(fmt.Sprintf("key%s%d", c, i), "delivered", 100+i, 0))
	}
	for i, c := range []string{"\n", "\x7f", "\x01", "\x1f"} {
		bad = append(bad, message(fmt.Sprintf("E%d", i), "ev"+c, 200+i, 0))
	}
	for i := range 15 - len(bad) {
		bad = append(bad, message(fmt.Sprintf("C%d", i), "delivered", 300+i, badCarrier.ID))
	}
	require.Len(t, bad, 15)

	cfg := testConfig()
	cfg.CircuitThreshold = 10
	runDispatcher(t, store, cfg)
	testenv.Eventually(t, 20*time.Second, "every unsendable delivery a dead letter", func() bool {
		n, err := dbtest.DeadLetterCountForEndpoint(ctx, store, ep.ID)
		require.NoError(t, err)
		return n == int64(len(bad))
	})
	testenv.Eventually(t, 20*time.Second, "key K's valid callbacks delivered", func() bool { return len(s.requests()) == 3 })
	for _, id := range bad {
		atts, err := dbtest.AttemptsForDelivery(ctx, store, id)
		require.NoError(t, err)
		require.Len(t, atts, 1, "delivery %d: one attempt, no retry", id)
		require.Equal(t, OutcomeFailed, atts[0].Outcome)
		require.Contains(t, atts[0].Error, "request cannot be built: X-Hookrelay-")
		require.Contains(t, atts[0].Error, "holds the control character U+00")
	}
	h, err := dbtest.EndpointHealthGet(ctx, store, ep.ID)
	require.NoError(t, err)
	require.Equal(t, "closed", h.CircuitState, "no unsendable delivery counts against the circuit")
	require.Zero(t, h.ConsecutiveFailures)
	require.Nil(t, h.FailingSince, "nor towards the auto-disable")

	// A valid callback after them is delivered at once.
	message("after", "delivered", 5, 0)
	testenv.Eventually(t, 20*time.Second, "the valid callback after them delivered", func() bool { return len(s.requests()) == 4 })
	var order []string
	for _, r := range s.requests() {
		require.Equal(t, http.StatusOK, r.Status)
		order = append(order, string(r.Body))
	}
	require.Equal(t, []string{`{"n":1}`, `{"n":3}`, `{"n":4}`, `{"n":5}`}, order, "key K in order, then the one after")
	h, err = dbtest.EndpointHealthGet(ctx, store, ep.ID)
	require.NoError(t, err)
	require.Equal(t, "closed", h.CircuitState)
}
