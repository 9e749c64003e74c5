package dispatch

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// TestUnreadableEndpointParkedAlone: among the endpoints of the same
// claimed batches, one whose signing secret was sealed under a key the
// store does not hold is parked — no request, no attempt spent, the
// hookrelay_endpoints_unreadable gauge at 1 and its health row marked —
// while the ten others get every delivery at once; a new secret resumes it,
// signed with the secret that opens.
func TestUnreadableEndpointParkedAlone(t *testing.T) {
	t.Parallel()
	store := dbtest.New(t)
	ctx := t.Context()
	s := newSink(t)
	var healthy []int64
	for i := range 10 {
		ep, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: fmt.Sprintf("%s/ep%d", s.srv.URL, i)})
		healthy = append(healthy, ep.ID)
	}
	bad, _ := dbtest.Endpoint(t, store, &dbtest.EndpointOpts{URL: s.srv.URL + "/bad", RetrySchedule: []time.Duration{time.Millisecond}})
	keyID, err := dbtest.SealSecretsUnderUnknownKey(ctx, store, bad.ID)
	require.NoError(t, err)
	all := append([]int64{bad.ID}, healthy...)
	for i := range 10 {
		dbtest.Message(t, store, &dbtest.MessageOpts{EndpointIDs: all, OrderingKey: fmt.Sprint("k-", i), Queues: 8})
	}
	d, _ := runDispatcher(t, store, testConfig())

	testenv.EventuallyErr(t, 15*time.Second, func() error {
		if n := len(s.requests()); n < 100 {
			return fmt.Errorf("delivered %d of the healthy endpoints' 100", n)
		}
		return nil
	})
	require.Len(t, s.requests(), 100, "nothing reached the endpoint whose secret cannot be opened")
	testenv.Eventually(t, 10*time.Second, "the gauge and the health row", func() bool {
		h, err := dbtest.EndpointHealthGet(ctx, store, bad.ID)
		return metricValue(t, d.metrics.endpointsUnreadable) == 1 && err == nil && h.UnreadableSince != nil
	})
	h, err := dbtest.EndpointHealthGet(ctx, store, bad.ID)
	require.NoError(t, err)
	require.Contains(t, h.UnreadableReason, "key id "+keyID)
	require.Positive(t, metricValue(t, d.metrics.deliveries.WithLabelValues("unreadable")))
	dl, err := dbtest.DeadLetterCountForEndpoint(ctx, store, bad.ID)
	require.NoError(t, err)
	require.Zero(t, dl, "parking spends no attempt (one would have dead-lettered)")

	// A new secret: the parked deliveries go, signed with it (the old one,
	// which cannot be opened, left out).
	newSecret := hookrelay.NewSecret()
	require.NoError(t, store.EndpointSecretRotate(ctx, bad.ID, newSecret))
	testenv.EventuallyErr(t, 15*time.Second, func() error {
		if n := len(s.requests()); n < 110 {
			return fmt.Errorf("delivered %d of 110", n)
		}
		return nil
	})
	for _, r := range s.requests()[100:] {
		require.True(t, verifyStandardWebhook(newSecret, r.Header, r.Body), "signed with the new secret")
	}
	testenv.Eventually(t, 10*time.Second, "the gauge back to 0 and the mark cleared", func() bool {
		h, err := dbtest.EndpointHealthGet(ctx, store, bad.ID)
		return metricValue(t, d.metrics.endpointsUnreadable) == 0 && err == nil && h.UnreadableSince == nil
	})
}

// TestUnreadableCountForgetsEndpointsNoLongerSeen: an endpoint in the set
// stays counted while its parked deliveries keep being claimed, and is no
// longer counted once none was seen for the stale window (it was deleted).
func TestUnreadableCountForgetsEndpointsNoLongerSeen(t *testing.T) {
	t.Parallel()
	s := &unreadableSet{logger: testLogger(t), stale: 3 * time.Minute, m: map[int64]*unreadableEntry{}}
	t0 := time.Now()
	require.Nil(t, s.note(db.EndpointConfig{ID: 1, Unreadable: "secret cannot be opened", UnreadableMarked: true}, t0))
	require.Equal(t, 1, s.count(t0))
	require.True(t, s.parked(1, t0.Add(2*time.Minute)))
	require.Equal(t, 1, s.count(t0.Add(4*time.Minute)), "seen 2 minutes ago")
	require.Equal(t, 0, s.count(t0.Add(6*time.Minute)))
	require.False(t, s.parked(1, t0.Add(6*time.Minute)))
}
