package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// AttemptView is one delivery attempt from the history.
type AttemptView struct {
	DeliveryID        int64
	MessageID         int64
	MessageReceivedAt time.Time
	EndpointID        int64
	Attempt           int
	AttemptedAt       time.Time
	Outcome           string // success | failed | timeout | conn_error | gone | throttled | refused
	StatusCode        int
	Latency           time.Duration
	Error             string
	ResponseExcerpt   string
}

// PendingView is a delivery still in the queue.
type PendingView struct {
	ID                int64
	Queue             int
	EndpointID        int64
	OrderingKey       string
	Ordered           bool
	MessageID         int64
	MessageReceivedAt time.Time
	Attempt           int
	VisibleAt         time.Time // 'infinity' (far future) when parked
	LastStatus        *int
	LastError         string
	CreatedAt         time.Time
}

func pendingFrom(id int64, queue int32, endpointID int64, key string, ordered bool, msgID int64, msgAt time.Time,
	attempt int32, visible time.Time, lastStatus *int32, lastError string, created time.Time) PendingView {
	p := PendingView{
		ID: id, Queue: int(queue), EndpointID: endpointID, OrderingKey: key, Ordered: ordered,
		MessageID: msgID, MessageReceivedAt: msgAt, Attempt: int(attempt), VisibleAt: visible,
		LastError: lastError, CreatedAt: created,
	}
	if lastStatus != nil {
		s := int(*lastStatus)
		p.LastStatus = &s
	}
	return p
}

// DeliveryView is everything known about one delivery: its row in the queue
// (when pending), its dead letter (when dead) and every attempt.
type DeliveryView struct {
	ID          int64
	MessageID   int64
	ReceivedAt  time.Time // the message's
	EndpointID  int64
	State       string // pending | dead | delivered | failed (history only)
	Pending     *PendingView
	DeadLetter  *DeadLetterView
	Attempts    []AttemptView
	OrderingKey string
}

// DashboardDelivery returns the delivery with id from the queue, the dead
// letters and the attempt history, or hookrelay.ENOTFOUND when none knows it.
func (db *DB) DashboardDelivery(ctx context.Context, id int64) (DeliveryView, error) {
	v := DeliveryView{ID: id}
	if r, err := db.q.DeliveryGetDue(ctx, id); err == nil {
		p := pendingFrom(r.ID, r.Queue, r.EndpointID, r.OrderingKey, r.Ordered, r.MessageID, r.MessageReceivedAt,
			r.Attempt, r.VisibleAt, r.LastStatus, r.LastError, r.CreatedAt)
		v.Pending, v.State = &p, "pending"
		v.MessageID, v.ReceivedAt, v.EndpointID, v.OrderingKey = p.MessageID, p.MessageReceivedAt, p.EndpointID, p.OrderingKey
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return v, fmt.Errorf("pending delivery: %w", unavailable(err))
	}
	if v.Pending == nil {
		if r, err := db.q.DeadLetterGet(ctx, id); err == nil {
			d := deadLetterViewFrom(r)
			v.DeadLetter, v.State = &d, "dead"
			v.MessageID, v.ReceivedAt, v.EndpointID, v.OrderingKey = d.MessageID, d.MessageReceivedAt, d.EndpointID, d.OrderingKey
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return v, fmt.Errorf("dead letter: %w", unavailable(err))
		}
	}
	rows, err := db.q.AttemptListByDeliveryCapped(ctx, id)
	if err != nil {
		return v, fmt.Errorf("attempts: %w", unavailable(err))
	}
	for _, r := range rows {
		v.Attempts = append(v.Attempts, attemptFrom(dbsqlc.AttemptListRecentByEndpointRow(r)))
	}
	if v.State == "" {
		if len(v.Attempts) == 0 {
			return v, notFound(pgx.ErrNoRows, "delivery")
		}
		last := v.Attempts[len(v.Attempts)-1]
		v.MessageID, v.ReceivedAt, v.EndpointID = last.MessageID, last.MessageReceivedAt, last.EndpointID
		v.State = "failed"
		if last.Outcome == "success" {
			v.State = "delivered"
		}
	}
	return v, nil
}

func attemptFrom(r dbsqlc.AttemptListRecentByEndpointRow) AttemptView {
	return AttemptView{
		DeliveryID: r.DeliveryID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
		EndpointID: r.EndpointID, Attempt: int(r.Attempt), AttemptedAt: r.AttemptedAt, Outcome: r.Outcome,
		StatusCode: int(r.StatusCode), Latency: time.Duration(r.LatencyMs) * time.Millisecond,
		Error: r.Error, ResponseExcerpt: r.ResponseExcerpt,
	}
}

// DashboardRecentAttempts returns up to limit attempts to an endpoint made
// in [since, before), newest first.
func (db *DB) DashboardRecentAttempts(ctx context.Context, endpointID int64, since, before time.Time, limit int) ([]AttemptView, error) {
	rows, err := db.q.AttemptListRecentByEndpoint(ctx, dbsqlc.AttemptListRecentByEndpointParams{
		EndpointID: endpointID, Since: since, BeforeAt: before, Lim: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("recent attempts: %w", unavailable(err))
	}
	out := make([]AttemptView, len(rows))
	for i, r := range rows {
		out[i] = attemptFrom(r)
	}
	return out, nil
}

// DashboardEndpointPendingList returns the newest pending deliveries of an
// endpoint (at most limit).
func (db *DB) DashboardEndpointPendingList(ctx context.Context, endpointID int64, limit int) ([]PendingView, error) {
	rows, err := db.q.DeliveryListNewestByEndpoint(ctx, dbsqlc.DeliveryListNewestByEndpointParams{EndpointID: endpointID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("pending of endpoint: %w", unavailable(err))
	}
	out := make([]PendingView, len(rows))
	for i, r := range rows {
		out[i] = pendingFrom(r.ID, r.Queue, r.EndpointID, r.OrderingKey, r.Ordered, r.MessageID, r.MessageReceivedAt,
			r.Attempt, r.VisibleAt, r.LastStatus, r.LastError, r.CreatedAt)
	}
	return out, nil
}

// DashboardMessage returns message id; receivedAt (optional) narrows the
// look-up to one day partition. hookrelay.ENOTFOUND when absent.
func (db *DB) DashboardMessage(ctx context.Context, id int64, receivedAt *time.Time) (Message, error) {
	r, err := db.q.MessageLookup(ctx, dbsqlc.MessageLookupParams{ID: id, ReceivedAt: receivedAt})
	if err != nil {
		return Message{}, notFound(unavailableUnlessNoRows(err), "message")
	}
	return messageFrom(r), nil
}
