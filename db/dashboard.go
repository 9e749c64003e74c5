package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Read models for the dashboard (web/). Every query behind them is
// index-driven and bounded (LIMIT, keyset pagination); counts over
// history are estimates from pg_class or capped.

// Overview is the platform's live state as read from the tables rather
// than from the sampled counters: backlog, oldest pending, dead letters.
type Overview struct {
	// Backlog is the number of pending deliveries per logical queue (index =
	// queue number; the slice has at least `queues` entries).
	Backlog []int64
	// OldestPending is when the message of the oldest pending delivery was
	// received; zero when nothing is pending.
	OldestPending time.Time
	// DeadLetters is the number of dead letters: exact up to
	// DeadLettersExact, else the planner's estimate.
	DeadLetters      int64
	DeadLettersExact bool
}

// deadLetterExactCap is how many dead letters are counted exactly before the
// overview switches to the pg_class estimate.
const deadLetterExactCap = 1000

// OverviewGet reads the overview numbers for `queues` logical queues.
// With backlog false it leaves Backlog nil: counting the queue table grows
// with the backlog, so callers that have a fresh sample of it use that.
func (db *DB) OverviewGet(ctx context.Context, queues int, backlog bool) (Overview, error) {
	var o Overview
	if backlog {
		rows, err := db.q.DeliveryCountByQueue(ctx)
		if err != nil {
			return o, fmt.Errorf("backlog by queue: %w", unavailable(err))
		}
		n := queues
		for _, r := range rows {
			n = max(n, int(r.Queue)+1)
		}
		o.Backlog = make([]int64, n)
		for _, r := range rows {
			o.Backlog[r.Queue] = r.N
		}
	}
	at, err := db.q.DeliveryOldestReceivedAt(ctx)
	switch {
	case err == nil:
		o.OldestPending = at
	case !errors.Is(err, pgx.ErrNoRows): // nothing pending
		return o, fmt.Errorf("oldest pending: %w", unavailable(err))
	}
	exact, err := db.DeadLetterCount(ctx, DeadLetterFilter{}, deadLetterExactCap+1)
	if err != nil {
		return o, err
	}
	o.DeadLetters, o.DeadLettersExact = exact, exact <= deadLetterExactCap
	if !o.DeadLettersExact {
		est, err := db.q.HealthRowEstimate(ctx, "dead_letters")
		if err != nil {
			return o, fmt.Errorf("estimate dead letters: %w", unavailable(err))
		}
		o.DeadLetters = max(est, exact)
	}
	return o, nil
}

// EndpointStatus is an endpoint with its delivery health.
type EndpointStatus struct {
	ID                  int64
	MerchantID          int64
	URL                 string
	Description         string
	Status              string // enabled | disabled
	DisabledReason      string
	PayloadMode         string
	Ordering            string // key | none
	Signature           string // hmac | ed25519
	CreatedAt           time.Time
	ConsecutiveFailures int
	CircuitState        string // closed | open | half_open
	CircuitOpenUntil    *time.Time
	FailingSince        *time.Time
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	LastError           string
}

// EndpointStatusList returns up to limit endpoints of merchantID (0 = all)
// with ids above afterID, with their health, by id.
func (db *DB) EndpointStatusList(ctx context.Context, merchantID, afterID int64, limit int) ([]EndpointStatus, error) {
	rows, err := db.q.EndpointListWithHealth(ctx, dbsqlc.EndpointListWithHealthParams{MerchantID: merchantID, AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list endpoints with health: %w", unavailable(err))
	}
	out := make([]EndpointStatus, len(rows))
	for i, r := range rows {
		out[i] = EndpointStatus{
			ID: r.ID, MerchantID: r.MerchantID, URL: r.URL, Description: r.Description, Status: r.Status,
			DisabledReason: r.DisabledReason, PayloadMode: r.PayloadMode, Ordering: r.Ordering,
			Signature: r.Signature, CreatedAt: r.CreatedAt, ConsecutiveFailures: int(r.ConsecutiveFailures), CircuitState: r.CircuitState,
			CircuitOpenUntil: r.CircuitOpenUntil, FailingSince: r.FailingSince,
			LastSuccessAt: r.LastSuccessAt, LastFailureAt: r.LastFailureAt, LastError: r.LastError,
		}
	}
	return out, nil
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
