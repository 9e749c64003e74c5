package dbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/db/internal/opsevent"
)

// The functions of this file read (and write) what a test checks behind a
// store's back: counts, rows and events that no product package asks the
// store for. They use the queries of db/queries/dbtest.sql on a small pool
// of their own on the store's database, so package db's surface holds only
// what the product calls. They work on the stores that New and Open return.

// sides holds the side pool of each store Open returned.
var sides sync.Map // *db.DB -> *sidePool

// sidePool is a store's side pool, opened at its first use.
type sidePool struct {
	url  string
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

func (s *sidePool) get(ctx context.Context) (*pgxpool.Pool, error) {
	s.once.Do(func() {
		cfg, err := pgxpool.ParseConfig(s.url)
		if err != nil {
			s.err = err
			return
		}
		cfg.MaxConns, cfg.MinConns = 2, 0
		s.pool, s.err = pgxpool.NewWithConfig(ctx, cfg)
	})
	return s.pool, s.err
}

// close closes the pool if it was opened; the store's test ends.
func (s *sidePool) close() {
	s.once.Do(func() {}) // no opening from now on
	if s.pool != nil {
		s.pool.Close()
	}
}

// queries returns the queries on store's side pool.
func queries(ctx context.Context, store *db.DB) (*dbsqlc.Queries, error) {
	v, ok := sides.Load(store)
	if !ok {
		return nil, errors.New("dbtest: the store was not opened by dbtest.New or dbtest.Open")
	}
	pool, err := v.(*sidePool).get(ctx)
	if err != nil {
		return nil, fmt.Errorf("dbtest: side pool: %w", err)
	}
	return dbsqlc.New(pool), nil
}

// notFound maps pgx.ErrNoRows to a hookrelay not-found error naming what, as
// the store does.
func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return hookrelay.Errorf(hookrelay.ENOTFOUND, "%s not found", what)
	}
	return err
}

// DeliveryClaim claims up to batch due deliveries of the logical queues (at
// most perQueue from each) for owner, leasing them for lease under token,
// exactly as a dispatcher does (db.DB.DeliveryClaim) with no round-robin
// cursor and no endpoint skipped.
func DeliveryClaim(ctx context.Context, store *db.DB, queues []int, perQueue, batch int, owner, token int64, lease time.Duration) ([]db.ClaimedDelivery, error) {
	out, _, err := store.DeliveryClaim(ctx, db.ClaimParams{Queues: queues, PerQueue: perQueue, Batch: batch,
		Owner: owner, Token: token, Lease: lease})
	return out, err
}

// AttemptsForDelivery returns every attempt of a delivery, oldest first.
func AttemptsForDelivery(ctx context.Context, store *db.DB, deliveryID int64) ([]db.Attempt, error) {
	q, err := queries(ctx, store)
	if err != nil {
		return nil, err
	}
	rows, err := q.AttemptListByDelivery(ctx, dbsqlc.AttemptListByDeliveryParams{DeliveryID: deliveryID, Lim: 1 << 30})
	if err != nil {
		return nil, fmt.Errorf("attempts of delivery %d: %w", deliveryID, err)
	}
	out := make([]db.Attempt, len(rows))
	for i, r := range rows {
		out[i] = db.Attempt{
			DeliveryID: r.DeliveryID, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
			EndpointID: r.EndpointID, Attempt: int(r.Attempt), AttemptedAt: r.AttemptedAt, Outcome: r.Outcome,
			StatusCode: int(r.StatusCode), Latency: time.Duration(r.LatencyMs) * time.Millisecond,
			Error: r.Error, ResponseExcerpt: r.ResponseExcerpt,
		}
		if r.DispatcherID != nil {
			out[i].DispatcherID = *r.DispatcherID
		}
	}
	return out, nil
}

// DeadLetterCountForEndpoint counts an endpoint's dead letters.
func DeadLetterCountForEndpoint(ctx context.Context, store *db.DB, endpointID int64) (int64, error) {
	q, err := queries(ctx, store)
	if err != nil {
		return 0, err
	}
	return q.DeadLetterCountByEndpoint(ctx, endpointID)
}

// QueueCounts is the backlog of one logical queue.
type QueueCounts struct {
	Queue   int
	Due     int64 // visible now
	Waiting int64 // leased, retrying or held
	Parked  int64 // behind their predecessor
}

// DeliveryQueueCounts returns the backlog per logical queue that has rows.
func DeliveryQueueCounts(ctx context.Context, store *db.DB) ([]QueueCounts, error) {
	q, err := queries(ctx, store)
	if err != nil {
		return nil, err
	}
	rows, err := q.DeliveryCountByState(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue counts: %w", err)
	}
	out := make([]QueueCounts, len(rows))
	for i, r := range rows {
		out[i] = QueueCounts{Queue: int(r.Queue), Due: r.Due, Waiting: r.Waiting, Parked: r.Parked}
	}
	return out, nil
}

// EndpointHealth is an endpoint's delivery health and circuit state.
type EndpointHealth struct {
	EndpointID          int64
	ConsecutiveFailures int
	CircuitState        string
	CircuitOpenUntil    *time.Time
	CircuitBackoff      time.Duration
	FailingSince        *time.Time
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	LastError           string
	// UnreadableSince and UnreadableReason record that a dispatcher could
	// not open the endpoint's secrets (db.EndpointUnreadableMark).
	UnreadableSince  *time.Time
	UnreadableReason string
}

// EndpointHealthGet returns an endpoint's health row (hookrelay.ENOTFOUND
// when it has none: nothing was ever attempted).
func EndpointHealthGet(ctx context.Context, store *db.DB, endpointID int64) (EndpointHealth, error) {
	q, err := queries(ctx, store)
	if err != nil {
		return EndpointHealth{}, err
	}
	r, err := q.EndpointHealthGet(ctx, endpointID)
	if err != nil {
		return EndpointHealth{}, notFound(err, "endpoint health")
	}
	return EndpointHealth{
		EndpointID: r.EndpointID, ConsecutiveFailures: int(r.ConsecutiveFailures),
		CircuitState: r.CircuitState, CircuitOpenUntil: r.CircuitOpenUntil,
		CircuitBackoff: time.Duration(r.CircuitBackoffMs) * time.Millisecond,
		FailingSince:   r.FailingSince, LastSuccessAt: r.LastSuccessAt, LastFailureAt: r.LastFailureAt,
		LastError: r.LastError, UnreadableSince: r.UnreadableSince, UnreadableReason: r.UnreadableReason,
	}, nil
}

// MessageGet returns the message (id, receivedAt), or hookrelay.ENOTFOUND:
// the message of the product's own read (DB.MessageRead).
func MessageGet(ctx context.Context, store *db.DB, id int64, receivedAt time.Time) (db.Message, error) {
	rec, err := store.MessageRead(ctx, id, &receivedAt, 0)
	return rec.Message, err
}

// MessageGetByID returns the message with id, looking in every partition,
// or hookrelay.ENOTFOUND.
func MessageGetByID(ctx context.Context, store *db.DB, id int64) (db.Message, error) {
	rec, err := store.MessageRead(ctx, id, nil, 0)
	return rec.Message, err
}

// OpsDeliveryCount counts the messages waiting for ops endpoints.
func OpsDeliveryCount(ctx context.Context, store *db.DB) (int64, error) {
	q, err := queries(ctx, store)
	if err != nil {
		return 0, err
	}
	return q.OpsDeliveryCount(ctx)
}

// OpsReplayFinished puts the replay.finished event of r into the outbox, as
// a replay reaching its final state does, without running one.
func OpsReplayFinished(ctx context.Context, store *db.DB, r db.Replay) error {
	q, err := queries(ctx, store)
	if err != nil {
		return err
	}
	data, err := json.Marshal(opsevent.ReplayFinished(r.ID, r.EndpointID, r.State, r.Total, r.Done, r.Failed))
	if err != nil {
		return err
	}
	p := dbsqlc.OpsEventAddParams{Type: hookrelay.OpsEventReplayFinished, Count: 1, Data: data}
	if r.EndpointID != 0 {
		p.EndpointID = &r.EndpointID
	}
	return q.OpsEventAdd(ctx, p)
}

// QueueLeaseRow is one logical queue's lease.
type QueueLeaseRow struct {
	Queue     int
	Owner     int64 // 0: free
	Epoch     int64
	ExpiresAt time.Time
}

// QueueLeasesList returns every queue lease.
func QueueLeasesList(ctx context.Context, store *db.DB) ([]QueueLeaseRow, error) {
	q, err := queries(ctx, store)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueueLeaseList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queue leases: %w", err)
	}
	out := make([]QueueLeaseRow, len(rows))
	for i, r := range rows {
		out[i] = QueueLeaseRow{Queue: int(r.Queue), Epoch: r.Epoch, ExpiresAt: r.ExpiresAt}
		if r.Owner != nil {
			out[i].Owner = *r.Owner
		}
	}
	return out, nil
}

// SettingPut stores the setting, replacing any value.
func SettingPut(ctx context.Context, store *db.DB, name, value string) error {
	q, err := queries(ctx, store)
	if err != nil {
		return err
	}
	return q.SettingPut(ctx, dbsqlc.SettingPutParams{Name: name, Value: value})
}
