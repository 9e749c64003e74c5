package db

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// Delivery is one delivery, whatever its state: pending, delivered or dead.
type Delivery struct {
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

// PendingDelivery is a delivery still in the queue.
type PendingDelivery struct {
	ID          int64
	Queue       int
	EndpointID  int64
	OrderingKey string
	// Replayed reports whether the row is a replay's (in the replay chain
	// of its key, hookrelay.ReplayChain).
	Replayed          bool
	Ordered           bool
	MessageID         int64
	MessageReceivedAt time.Time
	Attempt           int       // attempts made so far
	VisibleAt         time.Time // when it is next due: a leased row's lease end; 'infinity' (far future) when parked
	LastStatus        *int
	LastError         string
	CreatedAt         time.Time
}

func pendingFrom(r dbsqlc.Delivery) PendingDelivery {
	key, replayed := hookrelay.ChainKey(r.OrderingKey)
	p := PendingDelivery{
		ID: r.ID, Queue: int(r.Queue), EndpointID: r.EndpointID, OrderingKey: key, Replayed: replayed, Ordered: r.Ordered,
		MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt, Attempt: int(r.Attempt),
		VisibleAt: r.VisibleAt, CreatedAt: r.CreatedAt,
	}
	if r.LeasedUntil != nil && r.LeasedUntil.After(p.VisibleAt) {
		p.VisibleAt = *r.LeasedUntil
	}
	if r.LastStatus != nil {
		s := int(*r.LastStatus)
		p.LastStatus = &s
	}
	if r.LastError != nil {
		p.LastError = *r.LastError
	}
	return p
}

func apiPending(p PendingDelivery) Delivery {
	v := Delivery{
		ID: p.ID, EndpointID: p.EndpointID, MessageID: p.MessageID, MessageReceivedAt: p.MessageReceivedAt,
		State: DeliveryPending, OrderingKey: p.OrderingKey, Ordered: p.Ordered, Attempts: p.Attempt,
		LastError: p.LastError, At: p.CreatedAt,
	}
	if !NeverDue(p.VisibleAt) {
		t := p.VisibleAt
		v.NextAttemptAt = &t
	}
	if p.LastStatus != nil {
		v.LastStatus = *p.LastStatus
	}
	return v
}

func apiDead(d DeadLetter) Delivery {
	v := Delivery{
		ID: d.ID, EndpointID: d.EndpointID, MessageID: d.MessageID, MessageReceivedAt: d.MessageReceivedAt,
		State: DeliveryDead, OrderingKey: d.OrderingKey, Ordered: true, Attempts: d.Attempts,
		LastError: d.LastError, At: d.CreatedAt,
	}
	if d.LastStatus != nil {
		v.LastStatus = *d.LastStatus
	}
	return v
}

// apiDelivered is the delivery that a successful attempt a delivered.
func apiDelivered(a Attempt) Delivery {
	return Delivery{
		ID: a.DeliveryID, EndpointID: a.EndpointID, MessageID: a.MessageID, MessageReceivedAt: a.MessageReceivedAt,
		State: DeliveryDelivered, Attempts: a.Attempt, LastStatus: a.StatusCode, At: a.AttemptedAt,
	}
}

// pendingList returns up to limit pending deliveries of an endpoint by id,
// ascending after cursorID or, with newest, descending below it.
func (db *DB) pendingList(ctx context.Context, endpointID int64, newest bool, cursorID int64, limit int) ([]PendingDelivery, error) {
	rows, err := db.q.DeliveryListByEndpoint(ctx, dbsqlc.DeliveryListByEndpointParams{
		EndpointID: endpointID, Newest: newest, CursorID: cursorID, Lim: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list pending deliveries: %w", unavailable(err))
	}
	out := make([]PendingDelivery, len(rows))
	for i, r := range rows {
		out[i] = pendingFrom(dbsqlc.Delivery(r))
	}
	return out, nil
}

// DeliveryListPending returns up to limit pending deliveries of an endpoint
// with ids above afterID, by id.
func (db *DB) DeliveryListPending(ctx context.Context, endpointID, afterID int64, limit int) ([]Delivery, error) {
	rows, err := db.pendingList(ctx, endpointID, false, afterID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, len(rows))
	for i, p := range rows {
		out[i] = apiPending(p)
	}
	return out, nil
}

// DeliveryListDelivered returns up to limit delivered deliveries of an
// endpoint, newest first, older than (beforeAt, beforeID); pass the zero
// time for the first page.
func (db *DB) DeliveryListDelivered(ctx context.Context, endpointID int64, beforeAt time.Time, beforeID int64, limit int) ([]Delivery, error) {
	if beforeAt.IsZero() {
		beforeAt, beforeID = farFuture, 0
	}
	rows, err := db.q.AttemptListDeliveredByEndpoint(ctx, dbsqlc.AttemptListDeliveredByEndpointParams{
		EndpointID: endpointID, BeforeAt: beforeAt, BeforeID: beforeID, Lim: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list delivered deliveries: %w", unavailable(err))
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = apiDelivered(attemptFrom(r.DeliveryAttempt))
		out[i].OrderingKey = r.OrderingKey
	}
	return out, nil
}

// DeliveryListDead returns up to limit dead letters of an endpoint as
// deliveries, oldest first, after (afterAt, afterID); pass the zero time for
// the first page.
func (db *DB) DeliveryListDead(ctx context.Context, endpointID int64, afterAt time.Time, afterID int64, limit int) ([]Delivery, error) {
	rows, err := db.DeadLetterList(ctx, DeadLetterFilter{EndpointID: endpointID}, DeadLetterPage{At: afterAt, ID: afterID}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, len(rows))
	for i, d := range rows {
		out[i] = apiDead(d)
	}
	return out, nil
}

// deliveryRows is what is stored about one delivery: its row in the queue
// or its dead letter (neither once delivered, or gone), and its attempts.
type deliveryRows struct {
	pending  *PendingDelivery
	dead     *DeadLetter
	attempts []Attempt
}

// deliveryRead reads the record of delivery id with its first attemptLimit
// attempts.
//
// Its reads share one snapshot: a delivery that finishes between two of them
// (its row deleted and its attempt written in one transaction) would
// otherwise be in none of them and answer "not found".
func (db *DB) deliveryRead(ctx context.Context, id int64, attemptLimit int32) (deliveryRows, error) {
	var rec deliveryRows
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return rec, fmt.Errorf("get delivery: %w", unavailable(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := dbsqlc.New(tx)
	if rec.attempts, err = attemptsOf(ctx, q, id, attemptLimit); err != nil {
		return rec, err
	}
	if db.hooks.deliveryGetRead != nil {
		db.hooks.deliveryGetRead()
	}
	if r, err := q.DeliveryGet(ctx, id); err == nil {
		p := pendingFrom(r)
		rec.pending = &p
		return rec, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return rec, fmt.Errorf("get delivery: %w", unavailable(err))
	}
	if r, err := q.DeadLetterGet(ctx, id); err == nil {
		d := deadLetterFrom(r)
		rec.dead = &d
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return rec, fmt.Errorf("get dead letter: %w", unavailable(err))
	}
	return rec, nil
}

// DeliveryGet returns delivery id in whatever state it is (pending, dead,
// or delivered according to its history) with every attempt, or
// hookrelay.ENOTFOUND.
func (db *DB) DeliveryGet(ctx context.Context, id int64) (Delivery, []Attempt, error) {
	rec, err := db.deliveryRead(ctx, id, allAttempts)
	switch {
	case err != nil:
		return Delivery{}, nil, err
	case rec.pending != nil:
		return apiPending(*rec.pending), rec.attempts, nil
	case rec.dead != nil:
		return apiDead(*rec.dead), rec.attempts, nil
	}
	for i := len(rec.attempts) - 1; i >= 0; i-- {
		if a := rec.attempts[i]; a.Outcome == "success" {
			return apiDelivered(a), rec.attempts, nil
		}
	}
	return Delivery{}, nil, hookrelay.Errorf(hookrelay.ENOTFOUND, "delivery not found")
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

// DeliveryExtend extends by lease the leases of the rows ids still held under
// tokens and returns how many were still ours.
func (db *DB) DeliveryExtend(ctx context.Context, ids, tokens []int64, lease time.Duration) (int64, error) {
	n, err := db.q.DeliveryExtend(ctx, dbsqlc.DeliveryExtendParams{Lease: lease, IDs: ids, Tokens: tokens})
	if err != nil {
		return 0, fmt.Errorf("extend leases: %w", unavailable(err))
	}
	return n, nil
}

// DeliveryCountByEndpoint counts the pending deliveries of each endpoint
// up to limit, in one query; the map has an entry per id.
func (db *DB) DeliveryCountByEndpoint(ctx context.Context, endpointIDs []int64, limit int) (map[int64]int64, error) {
	rows, err := db.q.DeliveryCountByEndpoints(ctx, dbsqlc.DeliveryCountByEndpointsParams{EndpointIDs: endpointIDs, Cap: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("count pending: %w", unavailable(err))
	}
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		out[r.EndpointID] = r.N
	}
	return out, nil
}

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

// DeliveryListPendingNewest returns the newest pending deliveries of an
// endpoint (at most limit), newest first.
func (db *DB) DeliveryListPendingNewest(ctx context.Context, endpointID int64, limit int) ([]PendingDelivery, error) {
	return db.pendingList(ctx, endpointID, true, math.MaxInt64, limit)
}
