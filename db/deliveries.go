package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Delivery states as the API shows them.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryDead      = "dead"
)

// APIDelivery is one delivery as the API lists it, whatever its state.
type APIDelivery struct {
	ID                int64
	EndpointID        int64
	MessageID         int64
	MessageReceivedAt time.Time
	State             string // pending | delivered | dead
	OrderingKey       string
	Ordered           bool
	Attempts          int        // attempts made so far
	NextAttemptAt     *time.Time // pending: when it is due (nil when parked)
	LastStatus        int
	LastError         string
	At                time.Time // pending: created; delivered: delivered; dead: dead since
}

// APIAttempt is one delivery attempt from the history.
type APIAttempt struct {
	Attempt         int
	AttemptedAt     time.Time
	Outcome         string // success | failed | timeout | conn_error | gone | throttled | refused
	StatusCode      int
	LatencyMS       int
	Error           string
	ResponseExcerpt string
}

func pendingView(endpointID int64, r dbsqlc.DeliveryListByEndpointRow) APIDelivery {
	v := APIDelivery{
		ID: r.ID, EndpointID: endpointID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
		State: DeliveryPending, OrderingKey: r.OrderingKey, Ordered: r.Ordered, Attempts: int(r.Attempt), At: r.CreatedAt,
	}
	if !NeverDue(r.VisibleAt) {
		t := r.VisibleAt
		v.NextAttemptAt = &t
	}
	if r.LastStatus != nil {
		v.LastStatus = int(*r.LastStatus)
	}
	if r.LastError != nil {
		v.LastError = *r.LastError
	}
	return v
}

func deadView(r dbsqlc.DeadLetter) APIDelivery {
	v := APIDelivery{
		ID: r.ID, EndpointID: r.EndpointID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
		State: DeliveryDead, OrderingKey: r.OrderingKey, Ordered: true, Attempts: int(r.Attempts),
		LastError: r.LastError, At: r.CreatedAt,
	}
	if r.LastStatus != nil {
		v.LastStatus = int(*r.LastStatus)
	}
	return v
}

// DeliveryListPending returns up to limit pending deliveries of an endpoint
// with ids above afterID, by id.
func (db *DB) DeliveryListPending(ctx context.Context, endpointID, afterID int64, limit int) ([]APIDelivery, error) {
	rows, err := db.q.DeliveryListByEndpoint(ctx, dbsqlc.DeliveryListByEndpointParams{EndpointID: endpointID, AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list pending deliveries: %w", unavailable(err))
	}
	out := make([]APIDelivery, len(rows))
	for i, r := range rows {
		out[i] = pendingView(endpointID, r)
	}
	return out, nil
}

// DeliveryListDelivered returns up to limit delivered deliveries of an
// endpoint, newest first, older than (beforeAt, beforeID); pass the zero
// time for the first page.
func (db *DB) DeliveryListDelivered(ctx context.Context, endpointID int64, beforeAt time.Time, beforeID int64, limit int) ([]APIDelivery, error) {
	if beforeAt.IsZero() {
		beforeAt, beforeID = farFuture, 0
	}
	rows, err := db.q.AttemptListDeliveredByEndpoint(ctx, dbsqlc.AttemptListDeliveredByEndpointParams{
		EndpointID: endpointID, BeforeAt: beforeAt, BeforeID: beforeID, Lim: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list delivered deliveries: %w", unavailable(err))
	}
	out := make([]APIDelivery, len(rows))
	for i, r := range rows {
		out[i] = APIDelivery{
			ID: r.DeliveryID, EndpointID: endpointID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
			State: DeliveryDelivered, Attempts: int(r.Attempt), LastStatus: int(r.StatusCode), At: r.AttemptedAt,
		}
	}
	return out, nil
}

// DeliveryGet returns delivery id in whatever state it is (pending, dead,
// or delivered according to its history) with every attempt, or
// hookrelay.ENOTFOUND.
//
// Its reads share one snapshot: a delivery that finishes between two of them
// (its row deleted and its attempt written in one transaction) would
// otherwise be in none of them and answer "not found".
func (db *DB) DeliveryGet(ctx context.Context, id int64) (APIDelivery, []APIAttempt, error) {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return APIDelivery{}, nil, fmt.Errorf("get delivery: %w", unavailable(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := dbsqlc.New(tx)
	rows, err := q.AttemptListByDeliveryInTime(ctx, id)
	if err != nil {
		return APIDelivery{}, nil, fmt.Errorf("delivery attempts: %w", unavailable(err))
	}
	if db.hooks.deliveryGetRead != nil {
		db.hooks.deliveryGetRead()
	}
	attempts := make([]APIAttempt, len(rows))
	for i, r := range rows {
		attempts[i] = APIAttempt{
			Attempt: int(r.Attempt), AttemptedAt: r.AttemptedAt, Outcome: r.Outcome, StatusCode: int(r.StatusCode),
			LatencyMS: int(r.LatencyMs), Error: r.Error, ResponseExcerpt: r.ResponseExcerpt,
		}
	}
	if d, err := q.DeliveryGet(ctx, id); err == nil {
		due := d.VisibleAt // a leased row is next due when its lease runs out
		if d.LeasedUntil != nil && d.LeasedUntil.After(due) {
			due = *d.LeasedUntil
		}
		v := pendingView(d.EndpointID, dbsqlc.DeliveryListByEndpointRow{
			ID: d.ID, MessageID: d.MessageID, MessageReceivedAt: d.MessageReceivedAt, OrderingKey: d.OrderingKey,
			Ordered: d.Ordered, Attempt: d.Attempt, VisibleAt: due, LastStatus: d.LastStatus,
			LastError: d.LastError, CreatedAt: d.CreatedAt,
		})
		return v, attempts, nil
	} else if err = unavailableUnlessNoRows(err); notFound(err, "") == err {
		return APIDelivery{}, nil, fmt.Errorf("get delivery: %w", err)
	}
	if d, err := q.DeadLetterGet(ctx, id); err == nil {
		return deadView(d), attempts, nil
	} else if err = unavailableUnlessNoRows(err); notFound(err, "") == err {
		return APIDelivery{}, nil, fmt.Errorf("get dead letter: %w", err)
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if r := rows[i]; r.Outcome == "success" {
			return APIDelivery{
				ID: id, EndpointID: r.EndpointID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
				State: DeliveryDelivered, Attempts: int(r.Attempt), LastStatus: int(r.StatusCode), At: r.AttemptedAt,
			}, attempts, nil
		}
	}
	return APIDelivery{}, nil, hookrelay.Errorf(hookrelay.ENOTFOUND, "delivery not found")
}

// DeliveryRetryPending makes a pending delivery due now and reports whether
// it was waiting.
func (db *DB) DeliveryRetryPending(ctx context.Context, id int64) (bool, error) {
	n, err := db.q.DeliveryMakeVisible(ctx, id)
	if err != nil {
		return false, fmt.Errorf("retry delivery: %w", unavailable(err))
	}
	return n > 0, nil
}

// were still ours.
func (db *DB) DeliveryExtend(ctx context.Context, ids, tokens []int64, lease time.Duration) (int64, error) {
	n, err := db.q.DeliveryExtend(ctx, dbsqlc.DeliveryExtendParams{Lease: lease, IDs: ids, Tokens: tokens})
	if err != nil {
		return 0, fmt.Errorf("extend leases: %w", unavailable(err))
	}
	return n, nil
}

// DeliveryResumeEndpoint makes an endpoint's held rows visible now (not those
// in flight, not parked non-heads).
func (db *DB) DeliveryResumeEndpoint(ctx context.Context, endpointID int64) (int64, error) {
	n, err := db.q.DeliveryResumeByEndpoint(ctx, endpointID)
	if err != nil {
		return 0, fmt.Errorf("resume endpoint %d: %w", endpointID, unavailable(err))
	}
	return n, nil
}

// QueueCounts is the backlog of one logical queue.
type QueueCounts struct {
	Queue   int
	Due     int64 // visible now
	Waiting int64 // leased, retrying or held
	Parked  int64 // behind their predecessor
}

// DeliveryQueueCounts returns the backlog per logical queue that has rows.
func (db *DB) DeliveryQueueCounts(ctx context.Context) ([]QueueCounts, error) {
	rows, err := db.q.DeliveryCountByState(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue counts: %w", unavailable(err))
	}
	out := make([]QueueCounts, len(rows))
	for i, r := range rows {
		out[i] = QueueCounts{Queue: int(r.Queue), Due: r.Due, Waiting: r.Waiting, Parked: r.Parked}
	}
	return out, nil
}
