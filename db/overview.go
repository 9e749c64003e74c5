package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

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
