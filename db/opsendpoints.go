package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/db/internal/opsevent"
)

// OpsEndpoint is an operator's receiver of operational webhooks.
type OpsEndpoint struct {
	ID          int64
	URL         string
	Events      []string // empty: every event type
	Description string
	Secret      string
	CreatedAt   time.Time
}

// opsEndpointFrom turns a row into an OpsEndpoint, opening its secret.
func (db *DB) opsEndpointFrom(r dbsqlc.OpsEndpoint) (OpsEndpoint, error) {
	secret, err := db.open(purposeOpsSecret, r.Secret)
	if err != nil {
		return OpsEndpoint{}, fmt.Errorf("ops endpoint %d secret: %w", r.ID, err)
	}
	return OpsEndpoint{ID: r.ID, URL: r.URL, Events: r.Events, Description: r.Description,
		Secret: secret, CreatedAt: r.CreatedAt}, nil
}

// OpsEndpointCreate stores an ops endpoint.
func (db *DB) OpsEndpointCreate(ctx context.Context, url string, events []string, description, secret string) (OpsEndpoint, error) {
	if events == nil {
		events = []string{}
	}
	sealed, err := db.seal(purposeOpsSecret, secret)
	if err != nil {
		return OpsEndpoint{}, fmt.Errorf("create ops endpoint: %w", err)
	}
	r, err := db.q.OpsEndpointInsert(ctx, dbsqlc.OpsEndpointInsertParams{URL: url, Events: events,
		Description: description, Secret: sealed})
	if err != nil {
		return OpsEndpoint{}, fmt.Errorf("create ops endpoint: %w", unavailable(err))
	}
	return db.opsEndpointFrom(r)
}

// OpsEndpointList returns every ops endpoint, oldest first.
func (db *DB) OpsEndpointList(ctx context.Context) ([]OpsEndpoint, error) {
	rows, err := db.q.OpsEndpointList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ops endpoints: %w", unavailable(err))
	}
	out := make([]OpsEndpoint, len(rows))
	for i, r := range rows {
		if out[i], err = db.opsEndpointFrom(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// OpsEndpointDelete deletes ops endpoint id and the messages waiting for it.
func (db *DB) OpsEndpointDelete(ctx context.Context, id int64) error {
	n, err := db.q.OpsEndpointDelete(ctx, id)
	if err != nil {
		return fmt.Errorf("delete ops endpoint: %w", unavailable(err))
	}
	if n == 0 {
		return hookrelay.Errorf(hookrelay.ENOTFOUND, "ops endpoint not found")
	}
	return nil
}

// opsEventAdd puts an operational webhook event into the outbox (nothing
// when no ops endpoint wants its type). data is the event's "data" object;
// endpointID, when not 0, names the endpoint it is about.
func opsEventAdd(ctx context.Context, q *dbsqlc.Queries, typ string, endpointID int64, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("ops event %s: %w", typ, err)
	}
	p := dbsqlc.OpsEventAddParams{Type: typ, Count: 1, Data: b}
	if endpointID != 0 {
		p.EndpointID = &endpointID
	}
	if err := q.OpsEventAdd(ctx, p); err != nil {
		return fmt.Errorf("ops event %s: %w", typ, unavailable(err))
	}
	return nil
}

// opsReplayFinished reports a replay that reached its final state
// (ReplayFinished or ReplayCancelled) to the ops endpoints that want
// replay.finished, with q, the queries of the replay's own statements, so
// the event is written in their transaction.
func opsReplayFinished(ctx context.Context, q *dbsqlc.Queries, r Replay) error {
	return opsEventAdd(ctx, q, hookrelay.OpsEventReplayFinished, r.EndpointID,
		opsevent.ReplayFinished(r.ID, r.EndpointID, r.State, r.Total, r.Done, r.Failed))
}

// LongTransaction is the data of a database.long_transaction event.
type LongTransaction struct {
	PID             int       `json:"pid"`
	Database        string    `json:"database"`
	User            string    `json:"user"`
	ApplicationName string    `json:"application_name"`
	ClientAddr      string    `json:"client_addr"`
	State           string    `json:"state"`
	XactStart       time.Time `json:"xact_start"`
	XactSeconds     float64   `json:"xact_seconds"`
	XminAge         int       `json:"xmin_age"`
	SameDatabase    bool      `json:"same_database"`
}

// OpsLongTransaction reports a long transaction to the ops endpoints that
// want database.long_transaction.
func (db *DB) OpsLongTransaction(ctx context.Context, lt LongTransaction) error {
	return opsEventAdd(ctx, db.q, hookrelay.OpsEventDatabaseLongXact, 0, lt)
}

// OpsOutboxEvent is an outbox row taken to be sent.
type OpsOutboxEvent struct {
	ID         int64
	Type       string
	EndpointID int64 // 0: none
	Count      int
	Data       json.RawMessage
	CreatedAt  time.Time
}

// OpsMessage is a signed message to queue for every ops endpoint that wants
// its type.
type OpsMessage struct {
	Type    string
	MsgID   string
	Payload []byte
}

// OpsFanout takes the outbox rows ready to be sent (dead letters once their
// endpoint's first one is older than coalesce), lets build turn them into
// messages and queues those for the ops endpoints, in one transaction. One
// process at a time does it: in another, it returns at once (false).
func (db *DB) OpsFanout(ctx context.Context, coalesce time.Duration, maxRows int,
	build func([]OpsOutboxEvent) []OpsMessage) (bool, error) {
	ran := false
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		locked, err := q.OpsFanoutLock(ctx)
		if err != nil || !locked {
			return unavailable(err)
		}
		ran = true
		rows, err := q.OpsEventTake(ctx, dbsqlc.OpsEventTakeParams{Coalesce: coalesce, MaxRows: int32(maxRows)})
		if err != nil || len(rows) == 0 {
			return unavailable(err)
		}
		evs := make([]OpsOutboxEvent, len(rows))
		for i, r := range rows {
			evs[i] = OpsOutboxEvent{ID: r.ID, Type: r.Type, Count: int(r.Count), Data: r.Data, CreatedAt: r.CreatedAt}
			if r.EndpointID != nil {
				evs[i].EndpointID = *r.EndpointID
			}
		}
		var p dbsqlc.OpsDeliveryInsertParams
		for _, m := range build(evs) {
			p.Types = append(p.Types, m.Type)
			p.MsgIDs = append(p.MsgIDs, m.MsgID)
			p.Payloads = append(p.Payloads, string(m.Payload))
		}
		if len(p.Types) == 0 {
			return nil
		}
		return unavailable(q.OpsDeliveryInsert(ctx, p))
	})
	if err != nil {
		return ran, fmt.Errorf("ops fan-out: %w", err)
	}
	return ran, nil
}

// OpsDue reports whether a round of operational webhooks has work: an
// outbox row OpsFanout would take (dead letters once their endpoint's
// first one is older than coalesce), or a message due for an attempt.
func (db *DB) OpsDue(ctx context.Context, coalesce time.Duration) (bool, error) {
	due, err := db.q.OpsDue(ctx, coalesce)
	if err != nil {
		return false, fmt.Errorf("ops due: %w", unavailable(err))
	}
	return due, nil
}

// OpsDelivery is a message to an ops endpoint claimed for one attempt.
type OpsDelivery struct {
	ID       int64
	MsgID    string
	Payload  []byte
	Attempts int // this attempt included
	URL      string
	Secret   string
}

// OpsDeliveryClaim takes up to maxRows due messages for one attempt each;
// they stay invisible for lease.
func (db *DB) OpsDeliveryClaim(ctx context.Context, maxRows int, lease time.Duration) ([]OpsDelivery, error) {
	rows, err := db.q.OpsDeliveryClaim(ctx, dbsqlc.OpsDeliveryClaimParams{Lease: lease, MaxRows: int32(maxRows)})
	if err != nil {
		return nil, fmt.Errorf("claim ops deliveries: %w", unavailable(err))
	}
	out := make([]OpsDelivery, len(rows))
	for i, r := range rows {
		secret, err := db.open(purposeOpsSecret, r.Secret)
		if err != nil {
			return nil, fmt.Errorf("ops delivery %d: %w", r.ID, err)
		}
		out[i] = OpsDelivery{ID: r.ID, MsgID: r.MsgID, Payload: []byte(r.Payload), Attempts: int(r.Attempts),
			URL: r.URL, Secret: secret}
	}
	return out, nil
}

// OpsDeliveryDone deletes a message that was delivered or gave up.
func (db *DB) OpsDeliveryDone(ctx context.Context, id int64) error {
	if err := db.q.OpsDeliveryDelete(ctx, id); err != nil {
		return fmt.Errorf("ops delivery done: %w", unavailable(err))
	}
	return nil
}

// OpsDeliveryRetry makes a failed message due again after delay.
func (db *DB) OpsDeliveryRetry(ctx context.Context, id int64, delay time.Duration, lastError string) error {
	if err := db.q.OpsDeliveryRetryLater(ctx, dbsqlc.OpsDeliveryRetryLaterParams{ID: id, Delay: delay, LastError: lastError}); err != nil {
		return fmt.Errorf("ops delivery retry: %w", unavailable(err))
	}
	return nil
}
