package db

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// PullPosition is a place in a poll endpoint's stream of served
// deliveries: the pull that served a row (its token, increasing from pull
// to pull) and the row's id within it. The zero position is before
// everything.
type PullPosition struct {
	Token int64
	ID    int64
}

// PulledDelivery is a delivery served to a pull, with what its event shows.
type PulledDelivery struct {
	ID                int64
	MessageID         int64
	MessageReceivedAt time.Time
	// Attempt counts the times the delivery was served, this one included.
	Attempt     int
	OrderingKey string // the message's ordering key
	EventType   string
	CarrierName string
	Payload     []byte // nil when offloaded
	PayloadKey  string // S3 object key when offloaded
	// CanonicalType and CanonicalEvent are the message's canonical event
	// (nil: none).
	CanonicalType  string
	CanonicalEvent []byte
	// MessageFound is false when the message row is gone (its partition
	// was dropped).
	MessageFound bool
	// At is the row's position: a cursor that covers it and every row
	// served before it.
	At PullPosition
}

// DeliveryPull serves up to limit deliveries of poll endpoint endpointID
// not covered by after, in id order, and marks them served at new
// positions (after's own and later positions are given up: a consumer that
// resumes from after sees again what was served after it). Pulls of one
// endpoint run one at a time.
//
// Order: the rows of one ordering key get increasing ids in the order their
// callbacks were acknowledged, and a pull serves uncovered rows in id order
// with positions that grow from pull to pull, so a key's rows are served,
// and covered, in order: a cursor never covers a later row of a key
// without its earlier ones.
func (db *DB) DeliveryPull(ctx context.Context, endpointID int64, after PullPosition, limit int) ([]PulledDelivery, error) {
	var out []PulledDelivery
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		if err := q.DeliveryPullLock(ctx, endpointID); err != nil {
			return unavailable(err)
		}
		rows, err := q.DeliveryPullServe(ctx, dbsqlc.DeliveryPullServeParams{
			EndpointID: endpointID, NextEndpointID: endpointID + 1, AfterToken: after.Token, AfterID: after.ID, Lim: int32(limit)})
		if err != nil {
			return unavailable(err)
		}
		out = make([]PulledDelivery, len(rows))
		for i, r := range rows {
			out[i] = PulledDelivery{
				ID: r.ID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt, Attempt: int(r.Attempt),
				OrderingKey: r.OrderingKey, EventType: r.EventType, CarrierName: r.CarrierName,
				Payload: r.Payload, MessageFound: r.MessageFound, At: PullPosition{Token: r.Token, ID: r.ID},
			}
			if r.PayloadKey != nil {
				out[i].PayloadKey = *r.PayloadKey
			}
			out[i].CanonicalType, out[i].CanonicalEvent = deref(r.CanonicalType), r.CanonicalEvent
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pull endpoint %d: %w", endpointID, err)
	}
	return out, nil
}

// DeliveryPullAck acknowledges the deliveries of endpoint endpointID that
// position at covers: they are deleted, each with a success attempt in
// history. It returns how many were.
func (db *DB) DeliveryPullAck(ctx context.Context, endpointID int64, at PullPosition) (int64, error) {
	n, err := db.q.DeliveryPullAck(ctx, dbsqlc.DeliveryPullAckParams{EndpointID: endpointID, Token: at.Token, ID: at.ID})
	if err != nil {
		return 0, fmt.Errorf("acknowledge pull of endpoint %d: %w", endpointID, unavailable(err))
	}
	return n, nil
}

// PullLag is what a poll endpoint has not acknowledged yet.
type PullLag struct {
	EndpointID int64
	// Pending counts its deliveries, up to the cap asked for.
	Pending int64
	// Oldest is when the message of its oldest delivery was received; zero
	// when none is pending.
	Oldest time.Time
}

// DeliveryPullLag returns the lag of each of the endpoints, their pending
// deliveries counted up to limit.
func (db *DB) DeliveryPullLag(ctx context.Context, endpointIDs []int64, limit int64) ([]PullLag, error) {
	rows, err := db.q.DeliveryPullLag(ctx, dbsqlc.DeliveryPullLagParams{Cap: limit, EndpointIDs: endpointIDs})
	if err != nil {
		return nil, fmt.Errorf("poll endpoints' lag: %w", unavailable(err))
	}
	out := make([]PullLag, len(rows))
	for i, r := range rows {
		out[i] = PullLag{EndpointID: r.EndpointID, Pending: r.Pending}
		if r.OldestUnix > 0 {
			sec, frac := math.Modf(r.OldestUnix)
			out[i].Oldest = time.Unix(int64(sec), int64(frac*1e9)).UTC()
		}
	}
	return out, nil
}

// PollEndpoint names a poll endpoint and its merchant.
type PollEndpoint struct {
	ID         int64
	MerchantID int64
}

// EndpointPollList returns up to limit poll endpoints (not deleted), by id.
func (db *DB) EndpointPollList(ctx context.Context, limit int) ([]PollEndpoint, error) {
	rows, err := db.q.EndpointPollIDs(ctx, int32(limit))
	if err != nil {
		return nil, fmt.Errorf("list poll endpoints: %w", unavailable(err))
	}
	out := make([]PollEndpoint, len(rows))
	for i, r := range rows {
		out[i] = PollEndpoint{ID: r.ID, MerchantID: r.MerchantID}
	}
	return out, nil
}

// DeliveryPullExpire turns the deliveries of poll endpoints whose message
// was received before before into dead letters ("not acknowledged within
// the retention window") and returns how many.
func (db *DB) DeliveryPullExpire(ctx context.Context, before time.Time) (int64, error) {
	n, err := db.q.DeliveryPullExpire(ctx, before)
	if err != nil {
		return 0, fmt.Errorf("dead-letter expired pulls: %w", unavailable(err))
	}
	return n, nil
}

// PollLagAlert is one poll endpoint's lag as the lag alert sees it.
type PollLagAlert struct {
	Lag PullLag
	// LagSeconds is the age of its oldest unacknowledged delivery.
	LagSeconds float64
}

// PollLagAlerts is what EndpointPollLagAlert reported.
type PollLagAlerts struct {
	// Lagging are the endpoints that started an episode (endpoint.poll_lagging).
	Lagging []int64
	// CaughtUp are the endpoints that ended one (endpoint.poll_caught_up).
	CaughtUp []int64
}

// EndpointPollLagAlert records, at now, that the poll endpoints of lagging
// passed the alert threshold and that those of caughtUp are back under it,
// in one transaction: an endpoint not yet recorded as lagging is recorded
// and reported as endpoint.poll_lagging, one recorded as lagging that
// caught up is cleared and reported as endpoint.poll_caught_up. The record
// lives in endpoint_health, so one pair of events goes out per episode
// however many samples, restarts or leadership changes see it.
func (db *DB) EndpointPollLagAlert(ctx context.Context, now time.Time, threshold time.Duration,
	lagging, caughtUp []PollLagAlert) (PollLagAlerts, error) {
	var out PollLagAlerts
	if len(lagging) == 0 && len(caughtUp) == 0 {
		return out, nil
	}
	ids := func(as []PollLagAlert) ([]int64, map[int64]PollLagAlert) {
		ids := make([]int64, len(as))
		by := make(map[int64]PollLagAlert, len(as))
		for i, a := range as {
			ids[i] = a.Lag.EndpointID
			by[a.Lag.EndpointID] = a
		}
		return ids, by
	}
	oldest := func(l PullLag) any {
		if l.Oldest.IsZero() {
			return nil
		}
		return l.Oldest.UTC()
	}
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		out = PollLagAlerts{}
		if len(lagging) > 0 {
			lids, by := ids(lagging)
			rows, err := q.EndpointPollLaggingMark(ctx, dbsqlc.EndpointPollLaggingMarkParams{Since: now, EndpointIDs: lids})
			if err != nil {
				return unavailable(err)
			}
			for _, r := range rows {
				a := by[r.EndpointID]
				out.Lagging = append(out.Lagging, r.EndpointID)
				if err := opsEventAdd(ctx, q, hookrelay.OpsEventEndpointPollLagging, r.EndpointID, map[string]any{
					"endpoint_id": strconv.FormatInt(r.EndpointID, 10), "merchant_id": strconv.FormatInt(r.MerchantID, 10),
					"oldest": oldest(a.Lag), "lag_seconds": math.Round(a.LagSeconds), "pending": a.Lag.Pending,
					"threshold_seconds": threshold.Seconds(),
				}); err != nil {
					return err
				}
			}
		}
		if len(caughtUp) > 0 {
			cids, by := ids(caughtUp)
			rows, err := q.EndpointPollLaggingClear(ctx, cids)
			if err != nil {
				return unavailable(err)
			}
			for _, r := range rows {
				a := by[r.EndpointID]
				out.CaughtUp = append(out.CaughtUp, r.EndpointID)
				if err := opsEventAdd(ctx, q, hookrelay.OpsEventEndpointPollCaughtUp, r.EndpointID, map[string]any{
					"endpoint_id": strconv.FormatInt(r.EndpointID, 10), "merchant_id": strconv.FormatInt(r.MerchantID, 10),
					"lagging_since": r.LaggingSince.UTC(), "lag_seconds": math.Round(a.LagSeconds), "pending": a.Lag.Pending,
				}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return PollLagAlerts{}, fmt.Errorf("poll endpoints' lag alert: %w", err)
	}
	return out, nil
}
