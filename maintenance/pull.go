package maintenance

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// Bounds of the poll endpoints' lag sample: at most maxPollEndpoints
// endpoints are looked at, and the maxLagSeries furthest behind get series
// of their own (so the metrics' cardinality is bounded however many poll
// endpoints there are); the aggregates count every endpoint looked at.
const (
	maxPollEndpoints = 1000
	maxLagSeries     = 50
	pullPendingCap   = 100000
)

// samplePullLag sets the hookrelay_poll_* gauges from the poll endpoints'
// pending deliveries at now, then reports the endpoints that started or
// stopped lagging (PollLagAlert).
func (mt *Maintainer) samplePullLag(ctx context.Context, now time.Time) error {
	eps, err := mt.db.EndpointPollList(ctx, maxPollEndpoints)
	if err != nil {
		return err
	}
	ids := make([]int64, len(eps))
	for i, e := range eps {
		ids[i] = e.ID
	}
	type lag struct {
		id      int64
		age     float64
		pending int64
	}
	lags := make([]lag, 0, len(ids))
	var lagging, caughtUp []db.PollLagAlert
	if len(ids) > 0 {
		rows, err := mt.db.DeliveryPullLag(ctx, ids, pullPendingCap)
		if err != nil {
			return err
		}
		alert := mt.cfg.PollLagAlert.Seconds()
		for _, r := range rows {
			l := lag{id: r.EndpointID, pending: r.Pending}
			if !r.Oldest.IsZero() {
				l.age = max(0, now.Sub(r.Oldest).Seconds())
			}
			lags = append(lags, l)
			switch a := (db.PollLagAlert{Lag: r, LagSeconds: l.age}); {
			case alert <= 0:
			case l.age >= alert:
				lagging = append(lagging, a)
			case l.age < alert/2:
				caughtUp = append(caughtUp, a)
			}
		}
	}
	slices.SortFunc(lags, func(a, b lag) int {
		return cmp.Or(cmp.Compare(b.age, a.age), cmp.Compare(b.pending, a.pending), cmp.Compare(a.id, b.id))
	})
	m := mt.m
	m.pullLag.Reset()
	m.pullPending.Reset()
	var maxAge float64
	var total int64
	for i, l := range lags {
		maxAge = max(maxAge, l.age)
		total += l.pending
		if i < maxLagSeries {
			id := strconv.FormatInt(l.id, 10)
			m.pullLag.WithLabelValues(id).Set(l.age)
			m.pullPending.WithLabelValues(id).Set(float64(l.pending))
		}
	}
	m.pullLagMax.Set(maxAge)
	m.pullPendingAll.Set(float64(total))
	m.pullEndpointsAt.Set(float64(len(eps)))
	return mt.alertPullLag(ctx, now, lagging, caughtUp)
}

// alertPullLag reports the poll endpoints that started lagging
// (endpoint.poll_lagging) and those reported lagging that caught up
// (endpoint.poll_caught_up); the store keeps the episodes, so each is
// reported once.
func (mt *Maintainer) alertPullLag(ctx context.Context, now time.Time, lagging, caughtUp []db.PollLagAlert) error {
	got, err := mt.db.EndpointPollLagAlert(ctx, now, mt.cfg.PollLagAlert, lagging, caughtUp)
	if err != nil {
		return err
	}
	for _, id := range got.Lagging {
		mt.logger.Warn("maintenance: a poll endpoint's oldest unacknowledged delivery passed the lag alert threshold",
			"endpoint_id", id, "threshold", mt.cfg.PollLagAlert)
	}
	for _, id := range got.CaughtUp {
		mt.logger.Info("maintenance: a poll endpoint reported lagging caught up", "endpoint_id", id)
	}
	return nil
}
