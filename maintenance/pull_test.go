package maintenance

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/dbtest"
)

// TestRetentionDeadLettersUnackedPulls: a poll endpoint's delivery not
// acknowledged within retention becomes a dead letter (shown until its day
// is dropped), and does not hold its day; before that, its lag is in the
// hookrelay_poll_* gauges.
func TestRetentionDeadLettersUnackedPulls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d0 := day(time.Now()).AddDate(0, 0, 1)
	b.clock.Set(d0.Add(12 * time.Hour))
	r := b.start(t, Config{Retention: 72 * time.Hour})
	r.pass(t, d0.Add(12*time.Hour))

	poll, _ := dbtest.Endpoint(t, b.store, &dbtest.EndpointOpts{Type: db.EndpointPoll})
	push, _ := dbtest.Endpoint(t, b.store, nil)
	old := dbtest.Message(t, b.store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID, push.ID}, OrderingKey: "OLD",
		ReceivedAt: d0.Add(12 * time.Hour)})
	dbtest.Message(t, b.store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID}, OrderingKey: "NEW",
		ReceivedAt: d0.AddDate(0, 0, 1).Add(12 * time.Hour)})

	require.NoError(t, r.mt.samplePullLag(t.Context(), d0.Add(14*time.Hour)))
	require.InDelta(t, 2*3600, value(t, r.mt.m.pullLag.WithLabelValues(strconv.FormatInt(poll.ID, 10))), 1)
	require.Equal(t, 2.0, value(t, r.mt.m.pullPending.WithLabelValues(strconv.FormatInt(poll.ID, 10))))
	require.Equal(t, 2.0, value(t, r.mt.m.pullPendingAll))
	require.Equal(t, 1.0, value(t, r.mt.m.pullEndpointsAt))

	// Retention 72 h: 73 h after the first callback it is past the window,
	// its day is not (it ends at d0 + 24 h).
	later := d0.AddDate(0, 0, 3).Add(13 * time.Hour)
	b.clock.Set(later)
	rep := r.pass(t, later)
	require.EqualValues(t, 1, rep.PullExpired)
	dls, err := b.store.DeadLetterList(t.Context(), db.DeadLetterFilter{EndpointID: poll.ID}, db.DeadLetterPage{}, 10)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	dl := dls[0]
	require.Equal(t, old.DeliveryIDs[0], dl.ID)
	require.Equal(t, "not acknowledged within the retention window", dl.LastError)
	// The push endpoint's delivery of the same message stays pending (it
	// has its retries), and so does the poll endpoint's newer one.
	var pending int
	require.NoError(t, b.sql.QueryRow(t.Context(), "SELECT count(*) FROM deliveries").Scan(&pending))
	require.Equal(t, 2, pending)
}

// TestPollLagAlert: a poll endpoint whose oldest unacknowledged delivery
// passes HOOKRELAY_POLL_LAG_ALERT is reported once per episode
// (endpoint.poll_lagging), however many samples and maintainers see it, and
// reported caught up (endpoint.poll_caught_up) once, when its oldest is
// back under half the threshold; a push endpoint's backlog is not.
func TestPollLagAlert(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.OpsEndpointCreate(t.Context(), "http://127.0.0.1:9/ops",
		[]string{hookrelay.OpsEventEndpointPollLagging, hookrelay.OpsEventEndpointPollCaughtUp}, "", hookrelay.NewSecret())
	require.NoError(t, err)
	cfg := Config{PollLagAlert: 5 * time.Minute}
	r := b.start(t, cfg)
	now := time.Now().UTC()
	b.clock.Set(now)

	poll, _ := dbtest.Endpoint(t, b.store, &dbtest.EndpointOpts{Type: db.EndpointPoll})
	push, _ := dbtest.Endpoint(t, b.store, nil)
	dbtest.Message(t, b.store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID, push.ID}, OrderingKey: "A",
		ReceivedAt: now.Add(-10 * time.Minute)})
	dbtest.Message(t, b.store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID}, OrderingKey: "B",
		ReceivedAt: now.Add(-4 * time.Minute)})

	type event struct {
		typ  string
		data map[string]any
	}
	events := func() []event {
		t.Helper()
		rows, err := b.sql.Query(t.Context(), `SELECT type, data FROM ops_events
			WHERE type IN ('endpoint.poll_lagging', 'endpoint.poll_caught_up') ORDER BY id`)
		require.NoError(t, err)
		var out []event
		for rows.Next() {
			var e event
			require.NoError(t, rows.Scan(&e.typ, &e.data))
			out = append(out, e)
		}
		require.NoError(t, rows.Err())
		return out
	}
	types := func() []string {
		var out []string
		for _, e := range events() {
			out = append(out, e.typ)
		}
		return out
	}
	sample := func(mt *Maintainer, at time.Time) {
		t.Helper()
		require.NoError(t, mt.samplePullLag(t.Context(), at))
	}

	// Under the threshold: nothing.
	sample(r.mt, now.Add(-6*time.Minute))
	require.Empty(t, events())

	// Past it: one event, whatever the samples and maintainers that follow.
	sample(r.mt, now)
	sample(r.mt, now.Add(time.Second))
	other := New(b.logger, cfg.WithDefaults(), b.store, b.payloads, prometheus.NewRegistry())
	sample(other, now.Add(2*time.Second))
	evs := events()
	require.Len(t, evs, 1)
	require.Equal(t, "endpoint.poll_lagging", evs[0].typ)
	d := evs[0].data
	require.Equal(t, strconv.FormatInt(poll.ID, 10), d["endpoint_id"])
	require.Equal(t, strconv.FormatInt(poll.MerchantID, 10), d["merchant_id"])
	require.EqualValues(t, 2, d["pending"])
	require.EqualValues(t, 600, d["lag_seconds"])
	require.EqualValues(t, 300, d["threshold_seconds"])
	require.NotEmpty(t, d["oldest"])
	require.Contains(t, b.logs.String(), "passed the lag alert threshold")

	// The oldest acknowledged, the next is 4 minutes old: under the
	// threshold but not under half of it, so the episode goes on.
	pulled, err := b.store.DeliveryPull(t.Context(), poll.ID, db.PullPosition{}, 1)
	require.NoError(t, err)
	require.Len(t, pulled, 1)
	n, err := b.store.DeliveryPullAck(t.Context(), poll.ID, pulled[0].At)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	sample(r.mt, now.Add(3*time.Second))
	require.Equal(t, []string{"endpoint.poll_lagging"}, types())

	// Everything acknowledged: caught up, once.
	pulled, err = b.store.DeliveryPull(t.Context(), poll.ID, pulled[0].At, 10)
	require.NoError(t, err)
	require.Len(t, pulled, 1)
	_, err = b.store.DeliveryPullAck(t.Context(), poll.ID, pulled[0].At)
	require.NoError(t, err)
	sample(r.mt, now.Add(4*time.Second))
	sample(other, now.Add(5*time.Second))
	evs = events()
	require.Equal(t, []string{"endpoint.poll_lagging", "endpoint.poll_caught_up"}, types())
	d = evs[1].data
	require.Equal(t, strconv.FormatInt(poll.ID, 10), d["endpoint_id"])
	require.EqualValues(t, 0, d["pending"])
	require.NotEmpty(t, d["lagging_since"])

	// A new backlog past the threshold is a new episode.
	dbtest.Message(t, b.store, &dbtest.MessageOpts{EndpointIDs: []int64{poll.ID}, OrderingKey: "C",
		ReceivedAt: now.Add(-time.Hour)})
	sample(r.mt, now.Add(6*time.Second))
	sample(r.mt, now.Add(7*time.Second))
	require.Equal(t, []string{"endpoint.poll_lagging", "endpoint.poll_caught_up", "endpoint.poll_lagging"}, types())

	// Off: a maintainer with the alert off reports nothing, not even the
	// end of the episode.
	pulled, err = b.store.DeliveryPull(t.Context(), poll.ID, pulled[0].At, 10)
	require.NoError(t, err)
	require.Len(t, pulled, 1)
	_, err = b.store.DeliveryPullAck(t.Context(), poll.ID, pulled[0].At)
	require.NoError(t, err)
	off := New(b.logger, Config{PollLagAlert: -1}.WithDefaults(), b.store, b.payloads, prometheus.NewRegistry())
	sample(off, now.Add(8*time.Second))
	require.Len(t, events(), 3)
}
