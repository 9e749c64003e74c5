package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// APIDeadLetter is a delivery that used up its retries.
type APIDeadLetter struct {
	ID                int64 // the delivery id
	MessageID         int64
	MessageReceivedAt time.Time
	EndpointID        int64
	MerchantID        int64
	CarrierID         int64
	OrderingKey       string
	EventType         string
	Attempts          int
	LastStatus        int
	LastError         string
	CreatedAt         time.Time
}

// DeadLetterFilter selects dead letters; zero fields match everything.
type DeadLetterFilter struct {
	EndpointID int64
	CarrierID  int64
	MerchantID int64
	Since      time.Time
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

// DeadLetterList returns up to limit dead letters matching f after the
// keyset position (afterAt, afterID), oldest first.
func (db *DB) DeadLetterList(ctx context.Context, f DeadLetterFilter, afterAt time.Time, afterID int64, limit int) ([]APIDeadLetter, error) {
	if afterAt.IsZero() {
		afterAt = time.Unix(0, 0)
	}
	rows, err := db.q.DeadLetterList(ctx, dbsqlc.DeadLetterListParams{
		EndpointID: optID(f.EndpointID), CarrierID: optID(f.CarrierID), MerchantID: optID(f.MerchantID),
		Since: optTime(f.Since), AfterAt: afterAt, AfterID: afterID, Lim: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", unavailable(err))
	}
	out := make([]APIDeadLetter, len(rows))
	for i, r := range rows {
		out[i] = APIDeadLetter{
			ID: r.ID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt, EndpointID: r.EndpointID,
			MerchantID: r.MerchantID, CarrierID: r.CarrierID, OrderingKey: r.OrderingKey, EventType: r.EventType,
			Attempts: int(r.Attempts), LastError: r.LastError, CreatedAt: r.CreatedAt,
		}
		if r.LastStatus != nil {
			out[i].LastStatus = int(*r.LastStatus)
		}
	}
	return out, nil
}

// DeadLetterRetry moves dead letters back into deliveries (same id,
// unordered, attempt 0, visible now) in one statement: the given ids when
// ids is not nil, else those matching f. Dead letters of deleted endpoints
// are left alone. It returns how many it moved.
func (db *DB) DeadLetterRetry(ctx context.Context, ids []int64, f DeadLetterFilter) (int64, error) {
	n, err := db.q.DeadLetterRetry(ctx, dbsqlc.DeadLetterRetryParams{
		ByIDs: ids != nil, IDs: nonNil(ids), EndpointID: optID(f.EndpointID), CarrierID: optID(f.CarrierID),
		MerchantID: optID(f.MerchantID), Since: optTime(f.Since),
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
		MerchantID: optID(f.MerchantID), Since: optTime(f.Since),
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

// DeadLetterCountForEndpoint counts an endpoint's dead letters.
func (db *DB) DeadLetterCountForEndpoint(ctx context.Context, endpointID int64) (int64, error) {
	n, err := db.q.DeadLetterCountByEndpoint(ctx, endpointID)
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", unavailable(err))
	}
	return n, nil
}
