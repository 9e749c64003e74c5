package db

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// DeliveryRecord is everything known about one delivery: its row in the queue
// (when pending), its dead letter (when dead) and its attempts.
type DeliveryRecord struct {
	ID          int64
	MessageID   int64
	ReceivedAt  time.Time // the message's
	EndpointID  int64
	State       string // pending | dead | delivered | failed (history only)
	Pending     *PendingDelivery
	DeadLetter  *DeadLetter
	Attempts    []Attempt
	OrderingKey string
}

// recordAttempts is how many attempts of a delivery DeliveryRead returns.
const recordAttempts = 200

// DeliveryRead returns the delivery with id from the queue, the dead
// letters and its first recordAttempts attempts, or hookrelay.ENOTFOUND
// when none knows it.
func (db *DB) DeliveryRead(ctx context.Context, id int64) (DeliveryRecord, error) {
	rec, err := db.deliveryRead(ctx, id, recordAttempts)
	v := DeliveryRecord{ID: id, Pending: rec.pending, DeadLetter: rec.dead, Attempts: rec.attempts}
	switch p, d := rec.pending, rec.dead; {
	case err != nil:
		return v, err
	case p != nil:
		v.State = "pending"
		v.MessageID, v.ReceivedAt, v.EndpointID, v.OrderingKey = p.MessageID, p.MessageReceivedAt, p.EndpointID, p.OrderingKey
	case d != nil:
		v.State = "dead"
		v.MessageID, v.ReceivedAt, v.EndpointID, v.OrderingKey = d.MessageID, d.MessageReceivedAt, d.EndpointID, d.OrderingKey
	case len(v.Attempts) == 0:
		return v, notFound(pgx.ErrNoRows, "delivery")
	default:
		last := v.Attempts[len(v.Attempts)-1]
		v.MessageID, v.ReceivedAt, v.EndpointID = last.MessageID, last.MessageReceivedAt, last.EndpointID
		v.State = "failed"
		if last.Outcome == "success" {
			v.State = "delivered"
		}
	}
	return v, nil
}

// AttemptListRecent returns up to limit attempts to an endpoint made
// in [since, before), newest first.
func (db *DB) AttemptListRecent(ctx context.Context, endpointID int64, since, before time.Time, limit int) ([]Attempt, error) {
	rows, err := db.q.AttemptListRecentByEndpoint(ctx, dbsqlc.AttemptListRecentByEndpointParams{
		EndpointID: endpointID, Since: since, BeforeAt: before, Lim: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("recent attempts: %w", unavailable(err))
	}
	return attemptsFrom(rows), nil
}

// DeliveryListPendingNewest returns the newest pending deliveries of an
// endpoint (at most limit), newest first.
func (db *DB) DeliveryListPendingNewest(ctx context.Context, endpointID int64, limit int) ([]PendingDelivery, error) {
	return db.pendingList(ctx, endpointID, true, math.MaxInt64, limit)
}
