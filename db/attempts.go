package db

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Attempt is one recorded delivery attempt.
type Attempt struct {
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
	DispatcherID      int64 // 0 when not recorded
}

func attemptFrom(r dbsqlc.DeliveryAttempt) Attempt {
	a := Attempt{
		DeliveryID: r.DeliveryID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
		EndpointID: r.EndpointID, Attempt: int(r.Attempt), AttemptedAt: r.AttemptedAt, Outcome: r.Outcome,
		StatusCode: int(r.StatusCode), Latency: time.Duration(r.LatencyMs) * time.Millisecond,
		Error: r.Error, ResponseExcerpt: r.ResponseExcerpt,
	}
	if r.DispatcherID != nil {
		a.DispatcherID = *r.DispatcherID
	}
	return a
}

func attemptsFrom(rows []dbsqlc.DeliveryAttempt) []Attempt {
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		out[i] = attemptFrom(r)
	}
	return out
}

// allAttempts as a limit reads every attempt of a delivery.
const allAttempts = math.MaxInt32

// attemptsOf returns the first limit attempts of delivery id, oldest first.
func attemptsOf(ctx context.Context, q *dbsqlc.Queries, id int64, limit int32) ([]Attempt, error) {
	rows, err := q.AttemptListByDelivery(ctx, dbsqlc.AttemptListByDeliveryParams{DeliveryID: id, Lim: limit})
	if err != nil {
		return nil, fmt.Errorf("attempts of delivery %d: %w", id, unavailable(err))
	}
	return attemptsFrom(rows), nil
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
