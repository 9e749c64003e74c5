package maintenance

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
