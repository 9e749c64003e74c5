package db

import (
	"context"
	"fmt"
	"time"
)

// Attempt is one recorded delivery attempt.
type Attempt struct {
	DeliveryID      int64
	MessageID       int64
	EndpointID      int64
	Attempt         int
	AttemptedAt     time.Time
	Outcome         string
	StatusCode      int
	Latency         time.Duration
	Error           string
	ResponseExcerpt string
	DispatcherID    int64
}

// AttemptsForDelivery returns the attempts of a delivery, oldest first.
func (db *DB) AttemptsForDelivery(ctx context.Context, deliveryID int64) ([]Attempt, error) {
	rows, err := db.q.AttemptListByDelivery(ctx, deliveryID)
	if err != nil {
		return nil, fmt.Errorf("attempts of delivery %d: %w", deliveryID, unavailable(err))
	}
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		out[i] = Attempt{
			DeliveryID: r.DeliveryID, MessageID: r.MessageID, EndpointID: r.EndpointID,
			Attempt: int(r.Attempt), AttemptedAt: r.AttemptedAt, Outcome: r.Outcome,
			StatusCode: int(r.StatusCode), Latency: time.Duration(r.LatencyMs) * time.Millisecond,
			Error: r.Error, ResponseExcerpt: r.ResponseExcerpt,
		}
		if r.DispatcherID != nil {
			out[i].DispatcherID = *r.DispatcherID
		}
	}
	return out, nil
}

// AttemptsCountForEndpoint counts the recorded attempts to an endpoint.
func (db *DB) AttemptsCountForEndpoint(ctx context.Context, endpointID int64) (int64, error) {
	n, err := db.q.AttemptCountByEndpoint(ctx, endpointID)
	if err != nil {
		return 0, fmt.Errorf("count attempts: %w", unavailable(err))
	}
	return n, nil
}
