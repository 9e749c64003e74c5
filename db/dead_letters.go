package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// DeadLetter is a delivery that used up its retries.
type DeadLetter struct {
	ID                int64 // the delivery id
	MessageID         int64
	MessageReceivedAt time.Time
	EndpointID        int64
	MerchantID        int64
	CarrierID         int64
	Queue             int
	OrderingKey       string
	EventType         string
	Attempts          int
	LastStatus        *int // nil when none was recorded
	LastError         string
	CreatedAt         time.Time // when it died
}

func deadLetterFrom(r dbsqlc.DeadLetter) DeadLetter {
	d := DeadLetter{
		ID: r.ID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt, EndpointID: r.EndpointID,
		MerchantID: r.MerchantID, CarrierID: r.CarrierID, Queue: int(r.Queue), OrderingKey: r.OrderingKey,
		EventType: r.EventType, Attempts: int(r.Attempts), LastError: r.LastError, CreatedAt: r.CreatedAt,
	}
	if r.LastStatus != nil {
		s := int(*r.LastStatus)
		d.LastStatus = &s
	}
	return d
}

// DeadLetterFilter selects dead letters; zero fields match everything.
type DeadLetterFilter struct {
	EndpointID int64
	CarrierID  int64
	MerchantID int64
	Since      time.Time // died at or after
	// MerchantIDs and CarrierIDs, when not nil, keep the dead letters of
	// these merchants (of the endpoint) and carriers (of the message) only:
	// an empty, non-nil set matches none. They carry an operator's scope.
	MerchantIDs []int64
	CarrierIDs  []int64
}

func optID(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// DeadLetterPage is where a page of dead letters starts: strictly after
// (At, ID) in the order of the list, oldest first, or with Newest newest
// first. A zero At starts at the oldest (at the newest with Newest).
type DeadLetterPage struct {
	Newest bool
	At     time.Time
	ID     int64
}

// DeadLetterGet returns one dead letter, or hookrelay.ENOTFOUND.
func (db *DB) DeadLetterGet(ctx context.Context, id int64) (DeadLetter, error) {
	r, err := db.q.DeadLetterGet(ctx, id)
	if err != nil {
		return DeadLetter{}, notFound(unavailableUnlessNoRows(err), "dead letter")
	}
	return deadLetterFrom(r), nil
}

// DeadLetterList returns up to limit dead letters matching f from page on.
func (db *DB) DeadLetterList(ctx context.Context, f DeadLetterFilter, page DeadLetterPage, limit int) ([]DeadLetter, error) {
	at, id := page.At, page.ID
	switch {
	case !at.IsZero():
	case page.Newest:
		at, id = farFuture, 0
	default:
		at, id = time.Unix(0, 0), 0
	}
	rows, err := db.q.DeadLetterList(ctx, dbsqlc.DeadLetterListParams{
		EndpointID: optID(f.EndpointID), CarrierID: optID(f.CarrierID), MerchantID: optID(f.MerchantID),
		MerchantIDs: f.MerchantIDs, CarrierIDs: f.CarrierIDs, Since: optTime(f.Since), Newest: page.Newest, CursorAt: at, CursorID: id, Lim: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", unavailable(err))
	}
	out := make([]DeadLetter, len(rows))
	for i, r := range rows {
		out[i] = deadLetterFrom(dbsqlc.DeadLetter(r))
	}
	return out, nil
}

// DeadLetterCount counts the dead letters matching f up to limit.
func (db *DB) DeadLetterCount(ctx context.Context, f DeadLetterFilter, limit int) (int64, error) {
	n, err := db.q.DeadLetterCountCapped(ctx, dbsqlc.DeadLetterCountCappedParams{
		EndpointID: optID(f.EndpointID), CarrierID: optID(f.CarrierID), MerchantID: optID(f.MerchantID),
		MerchantIDs: f.MerchantIDs, CarrierIDs: f.CarrierIDs, Since: optTime(f.Since), Cap: int32(limit),
	})
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", unavailable(err))
	}
	return n, nil
}

// DeadLetterRetry moves dead letters back into deliveries (same id,
// unordered, attempt 0, visible now) in one statement: the given ids when
// ids is not nil, else those matching f. Dead letters of deleted endpoints
// are left alone. It returns how many it moved.
func (db *DB) DeadLetterRetry(ctx context.Context, ids []int64, f DeadLetterFilter) (int64, error) {
	n, err := db.q.DeadLetterRetry(ctx, dbsqlc.DeadLetterRetryParams{
		ByIDs: ids != nil, IDs: nonNil(ids), EndpointID: optID(f.EndpointID), CarrierID: optID(f.CarrierID),
		MerchantID: optID(f.MerchantID), MerchantIDs: f.MerchantIDs, CarrierIDs: f.CarrierIDs, Since: optTime(f.Since),
	})
	if err != nil {
		return 0, fmt.Errorf("retry dead letters: %w", unavailable(err))
	}
	return n, nil
}

// DeadLetterDiscard deletes dead letters: the given ids when ids is not nil,
// else those matching f. It returns how many it deleted.
func (db *DB) DeadLetterDiscard(ctx context.Context, ids []int64, f DeadLetterFilter) (int64, error) {
	n, err := db.q.DeadLetterDiscard(ctx, dbsqlc.DeadLetterDiscardParams{
		ByIDs: ids != nil, IDs: nonNil(ids), EndpointID: optID(f.EndpointID), CarrierID: optID(f.CarrierID),
		MerchantID: optID(f.MerchantID), MerchantIDs: f.MerchantIDs, CarrierIDs: f.CarrierIDs, Since: optTime(f.Since),
	})
	if err != nil {
		return 0, fmt.Errorf("discard dead letters: %w", unavailable(err))
	}
	return n, nil
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
