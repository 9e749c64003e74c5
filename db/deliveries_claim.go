package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// ClaimedDelivery is a leased delivery with what the sender needs.
type ClaimedDelivery struct {
	ID         int64
	Queue      int
	EndpointID int64
	// OrderingKey is the message's ordering key (X-Hookrelay-Ordering-Key).
	OrderingKey string
	// Chain is the row's chain value (the column deliveries.ordering_key
	// holds chains, not keys): the ordering key for a live delivery,
	// hookrelay.ReplayChain of it for a replayed one. The acknowledgement
	// promotes the chain's next row by it.
	Chain             string
	Ordered           bool
	MessageID         int64
	MessageReceivedAt time.Time
	Attempt           int // attempts spent so far; this try is Attempt+1
	CreatedAt         time.Time
	CarrierID         int64
	CarrierName       string
	EventType         string
	Payload           []byte // nil when offloaded
	PayloadKey        string // S3 object key when offloaded
	PayloadSize       int
	PayloadSHA256     []byte
	// MessageFound is false when the message row is gone (its partition
	// dropped): there is nothing to send.
	MessageFound bool
	LeaseToken   int64
	// ConfigVersion is the configuration version the claim saw (migration
	// 00120): settings cached before it must be reloaded before sending.
	ConfigVersion int64
	// Traceparent is the trace context the message was stored with
	// (NewMessage.Traceparent), "" when none.
	Traceparent string
	// CanonicalType and CanonicalEvent are the canonical event of the
	// message (NewMessage), what a canonical endpoint receives; nil when
	// it has none.
	CanonicalType  string
	CanonicalEvent []byte
}

// defaultClaimPeek is the claim's small-queue bound: a logical queue with
// fewer rows than this in the claim index (in flight, due and waiting
// retries together) is claimed from one scan of its due rows, ranked as
// the walk would take them; a larger one is walked, one index descent per
// endpoint (DeliveryClaim in deliveries.sql). At full load a queue holds a
// handful of rows, and the walk's descents cost more than reading them all;
// a backlog makes a queue large, where the walk's bound matters.
const defaultClaimPeek = 32

// ClaimTiming splits the time of one claim.
type ClaimTiming struct {
	// Wait is the time spent waiting for a pool connection.
	Wait time.Duration
	// Exec is the statement on its connection: round trip and rows read.
	Exec time.Duration
	// Server is the statement's time in PostgreSQL, from the start of its
	// transaction (the receipt of Bind: locks, plan, execution) to its
	// last row: Exec less Server is time spent waiting to run (backend and
	// caller) and on the network. 0 when no row was claimed.
	Server time.Duration
}

// ClaimParams say what DeliveryClaim claims, for whom and for how long.
type ClaimParams struct {
	// Queues are the logical queues to claim from, in the order they are
	// served (callers rotate it).
	Queues []int
	// After[i] (nil: all 0) is queue i's round-robin cursor: its endpoints
	// are served from the first above After[i], wrapping round; callers pass
	// the last endpoint they were served in the queue.
	After []int64
	// Skip are endpoints passed over (their rows stay where they are):
	// callers name those whose max_in_flight they have in flight already.
	Skip []int64
	// PerQueue caps the rows of one queue, shared fairly across the
	// endpoints with due rows in it; Batch caps the claim.
	PerQueue, Batch int
	// Owner is the claiming dispatcher; Token fences the leases (an
	// acknowledgement must present it).
	Owner, Token int64
	// Lease is how long the claimed rows stay leased.
	Lease time.Duration
}

// DeliveryClaim claims up to p.Batch due deliveries of the logical queues
// p.Queues for p.Owner, leasing them for p.Lease under p.Token (see
// DeliveryClaim in deliveries.sql: only chain heads are returned; non-heads
// are parked, heads of disabled endpoints held, heads of open circuits
// deferred), and reports how long it waited for a connection and how long
// the statement took.
func (db *DB) DeliveryClaim(ctx context.Context, p ClaimParams) ([]ClaimedDelivery, ClaimTiming, error) {
	var timing ClaimTiming
	qs := make([]int16, len(p.Queues))
	afters := make([]int64, len(p.Queues))
	for i, q := range p.Queues {
		qs[i] = int16(q)
		if i < len(p.After) {
			afters[i] = p.After[i]
		}
	}
	start := time.Now()
	conn, err := db.claimConns.get(ctx)
	timing.Wait = time.Since(start)
	if err != nil {
		return nil, timing, fmt.Errorf("claim queues %v: %w", p.Queues, unavailable(err))
	}
	start = time.Now()
	rows, err := dbsqlc.New(conn.conn).DeliveryClaim(ctx, dbsqlc.DeliveryClaimParams{
		Queues: qs, Afters: afters, Skip: p.Skip, PerQueue: int32(p.PerQueue), Batch: int32(p.Batch), Peek: db.claimPeek,
		Lease: p.Lease, Owner: p.Owner, Token: p.Token,
	})
	timing.Exec = time.Since(start)
	db.claimConns.put(conn, err)
	if err != nil {
		return nil, timing, fmt.Errorf("claim queues %v: %w", p.Queues, unavailable(err))
	}
	out := make([]ClaimedDelivery, len(rows))
	for i, r := range rows {
		out[i] = ClaimedDelivery{
			ID: r.ID, Queue: int(r.Queue), EndpointID: r.EndpointID, Chain: r.OrderingKey,
			Ordered: r.Ordered, MessageID: r.MessageID, MessageReceivedAt: r.MessageReceivedAt,
			Attempt: int(r.Attempt), CreatedAt: r.CreatedAt, CarrierID: r.CarrierID,
			CarrierName: r.CarrierName, EventType: r.EventType, Payload: r.Payload,
			PayloadSize: int(r.PayloadSize), PayloadSHA256: r.PayloadSHA256, MessageFound: r.MessageFound,
			LeaseToken: p.Token, ConfigVersion: r.ConfigVersion,
		}
		timing.Server = max(timing.Server, time.Duration(r.ServerUs)*time.Microsecond)
		if r.PayloadKey != nil {
			out[i].PayloadKey = *r.PayloadKey
		}
		if r.Traceparent != nil {
			out[i].Traceparent = *r.Traceparent
		}
		out[i].CanonicalType, out[i].CanonicalEvent = deref(r.CanonicalType), r.CanonicalEvent
		out[i].OrderingKey, _ = hookrelay.ChainKey(r.OrderingKey)
		if r.MessageOrderingKey != nil {
			out[i].OrderingKey = *r.MessageOrderingKey
		}
	}
	return out, timing, nil
}
