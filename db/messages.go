package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// NewMessage is an accepted callback to store with one delivery per endpoint.
type NewMessage struct {
	// ID is the message id when already reserved (MessageIDsReserve: an
	// offloaded payload's object key names it); 0 takes one from the sequence.
	ID int64
	// ReceivedAt is when the callback arrived (the partition key). Zero = now.
	ReceivedAt     time.Time
	CarrierID      int64
	EventType      string
	OrderingKey    string
	MerchantRef    string
	Queue          int
	IdempotencyKey string // "" = none
	// Payload holds the bytes inline; or PayloadKey names the S3 object.
	Payload       []byte
	PayloadKey    string
	PayloadSize   int
	PayloadSHA256 []byte
	// EndpointIDs get one delivery each, visible now.
	EndpointIDs []int64
	// Unordered, when not nil, runs parallel to EndpointIDs: true stores
	// that endpoint's delivery unordered (its ordering is "none": it neither
	// waits for nor holds back the key's other deliveries). Nil: every
	// delivery is ordered.
	Unordered []bool
	// Traceparent is the W3C trace context of the request that stored the
	// message (tracing on), so its deliveries' spans are children of that
	// request's; "" stores none (NULL).
	Traceparent string
	// AdapterVersion is the version of the carrier's adapter that ran on
	// the callback (0: none). CanonicalType and CanonicalEvent are the event
	// it made (the body canonical endpoints receive); none when it dropped
	// the callback or failed. AdapterError, when not "", parks the callback
	// (parked_callbacks) with this error.
	AdapterVersion int
	CanonicalType  string
	CanonicalEvent []byte
	AdapterError   string
}

// StoredMessage reports what MessageInsertMany did with one NewMessage.
type StoredMessage struct {
	ID          int64
	ReceivedAt  time.Time
	Deliveries  int
	DeliveryIDs []int64 // nil for a duplicate
	// Duplicate reports whether the idempotency key was seen within 24 h:
	// nothing was inserted and ID/ReceivedAt/Deliveries are the first message's.
	Duplicate bool
	// Err, when not nil, says this message was not stored (the others were).
	Err error
}

// MessageIDsReserve takes n ids from the message sequence.
func (db *DB) MessageIDsReserve(ctx context.Context, n int) ([]int64, error) {
	ids, err := db.q.MessageIDsReserve(ctx, int32(n))
	if err != nil {
		return nil, fmt.Errorf("reserve message ids: %w", unavailable(err))
	}
	return ids, nil
}

// cancelGrace is how long MessageInsertMany's statements have to answer a
// cancel request before their connection is dropped.
const cancelGrace = 5 * time.Second

var errCancelSent = errors.New("cancel request sent")

type idemKey struct {
	carrier int64
	key     string
}

// MessageInsertMany stores msgs and their deliveries atomically (one
// statement, synchronous commit) and returns one result per message, in
// order. Messages with an idempotency key already used by the same carrier
// within 24 h (in an earlier batch, or earlier in msgs) are duplicates and
// store nothing. hookrelay.EINVALID means nothing was stored: the database
// refused a value of one of msgs (the others may be stored without it).
// hookrelay.EUNAVAILABLE means the outcome is unknown: the connection was
// lost at the commit, or the synchronous standby did not confirm it
// (syncrep.go); the client retries with its idempotency key. A result's Err
// means that message alone was not stored (its key's holder vanished
// concurrently). A duplicate is reported only once its holder is on the
// synchronous standby too (IdempotencyKeyLookupMany locks the key, so its
// transaction commits, and waits for the standby, like a write).
func (db *DB) MessageInsertMany(ctx context.Context, msgs []NewMessage) ([]StoredMessage, error) {
	out := make([]StoredMessage, len(msgs))
	if len(msgs) == 0 {
		return out, nil
	}
	now := time.Now()
	// In-batch duplicates point at the first message with the key.
	first := map[idemKey]int{}
	dupOf := make([]int, len(msgs))
	for i, m := range msgs {
		dupOf[i] = -1
		if m.IdempotencyKey != "" {
			k := idemKey{m.CarrierID, m.IdempotencyKey}
			if j, ok := first[k]; ok {
				dupOf[i] = j
				continue
			}
			first[k] = i
		}
	}
	conn, err := db.storeConns.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("store %d messages: %w", len(msgs), unavailable(err))
	}
	defer func() { db.storeConns.put(conn, err) }()
	pc := conn.conn.Conn().PgConn()
	warned, _ := db.warnings.count(pc)
	// When ctx ends, the server is asked to cancel the statement rather than
	// the connection dropped: a commit waiting for a synchronous standby
	// then ends at once (committed locally, with a warning: refused below)
	// instead of holding its session until the standby is back. The
	// statements get cancelGrace more to answer the cancel before the
	// connection is dropped after all (a server that is gone). A connection
	// that was sent a cancel is not used again: a late one could hit its
	// next statement.
	qctx, qcancel := context.WithCancel(context.WithoutCancel(ctx))
	finished, cancelled := make(chan struct{}), make(chan struct{})
	stopCancel := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		cctx, ccancel := context.WithTimeout(context.Background(), cancelGrace)
		defer ccancel()
		_ = pc.CancelRequest(cctx)
		select {
		case <-cctx.Done():
		case <-finished:
		}
		qcancel()
	})
	defer func() {
		close(finished)
		if !stopCancel() {
			<-cancelled
			if err == nil {
				err = errCancelSent // for storeConns.put: not kept
			}
		}
		qcancel()
	}()
	ctx = qctx
	q := dbsqlc.New(conn.conn)
	var p dbsqlc.MessageInsertManyParams
	var sent []int // msgs index of each message sent, by its place in the input
	// Traceparents go only when some message has one (tracing on): an empty
	// array stores NULL for every message.
	traced, adapted := false, false
	for _, m := range msgs {
		traced = traced || m.Traceparent != ""
		adapted = adapted || m.AdapterVersion != 0
	}
	for i, m := range msgs {
		if dupOf[i] >= 0 {
			continue
		}
		if m.ReceivedAt.IsZero() {
			m.ReceivedAt = now
		}
		payload := m.Payload
		if m.PayloadKey == "" && payload == nil {
			payload = []byte{}
		} else if m.PayloadKey != "" {
			payload = nil
		}
		sent = append(sent, i)
		ord := int32(len(sent)) // 1-based
		p.Ords = append(p.Ords, ord)
		p.IDs = append(p.IDs, m.ID) // 0: the statement takes one
		p.ReceivedAts = append(p.ReceivedAts, m.ReceivedAt)
		p.CarrierIDs = append(p.CarrierIDs, m.CarrierID)
		p.EventTypes = append(p.EventTypes, m.EventType)
		p.OrderingKeys = append(p.OrderingKeys, m.OrderingKey)
		p.MerchantRefs = append(p.MerchantRefs, m.MerchantRef)
		p.Queues = append(p.Queues, int16(m.Queue))
		p.IdemKeys = append(p.IdemKeys, m.IdempotencyKey)
		p.Payloads = append(p.Payloads, payload)
		p.PayloadKeys = append(p.PayloadKeys, m.PayloadKey)
		p.PayloadSizes = append(p.PayloadSizes, int32(m.PayloadSize))
		p.PayloadSHA256s = append(p.PayloadSHA256s, m.PayloadSHA256)
		p.DeliveryCounts = append(p.DeliveryCounts, int32(len(m.EndpointIDs)))
		if traced {
			p.Traceparents = append(p.Traceparents, m.Traceparent)
		}
		if adapted {
			p.AdapterVersions = append(p.AdapterVersions, int32(m.AdapterVersion))
			p.CanonicalTypes = append(p.CanonicalTypes, m.CanonicalType)
			p.CanonicalEvents = append(p.CanonicalEvents, m.CanonicalEvent)
			p.AdapterErrors = append(p.AdapterErrors, m.AdapterError)
		}
		for k, ep := range m.EndpointIDs {
			p.DeliveryOrds = append(p.DeliveryOrds, int32(len(p.DeliveryOrds)+1))
			p.DeliveryMessageOrds = append(p.DeliveryMessageOrds, ord)
			p.DeliveryEndpointIDs = append(p.DeliveryEndpointIDs, ep)
			p.DeliveryOrdered = append(p.DeliveryOrdered, m.Unordered == nil || !m.Unordered[k])
		}
		out[i] = StoredMessage{ReceivedAt: m.ReceivedAt, Deliveries: len(m.EndpointIDs)}
	}
	rows, err := q.MessageInsertMany(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("store %d messages: %w", len(p.IDs), rowDataError(unavailable(err)))
	}
	stored := make([]bool, len(sent))
	for _, r := range rows {
		i := sent[r.Ord-1]
		out[i].ID, out[i].DeliveryIDs = r.ID, r.DeliveryIDs
		stored[r.Ord-1] = true
	}
	if len(rows) < len(sent) {
		// On the same connection: waiting for a second one while holding
		// this one could wait forever in a small pool.
		var lost []int
		for k, ok := range stored {
			if !ok {
				lost = append(lost, sent[k])
			}
		}
		if err = resolveDuplicates(ctx, q, msgs, out, lost); err != nil {
			return nil, err
		}
	}
	if n, last := db.warnings.count(pc); n != warned {
		// A commit the synchronous standby did not confirm (syncrep.go).
		err = hookrelay.WrapError(hookrelay.EUNAVAILABLE, "the commit was not confirmed by the synchronous standby; retry",
			fmt.Errorf("server warning: %s", last))
		return nil, fmt.Errorf("store %d messages: %w", len(p.IDs), err)
	}
	for i := range msgs {
		if j := dupOf[i]; j >= 0 {
			out[i] = StoredMessage{ID: out[j].ID, ReceivedAt: out[j].ReceivedAt, Deliveries: out[j].Deliveries, Duplicate: true, Err: out[j].Err}
		}
	}
	return out, nil
}

// rowDataError marks a statement refused for the data of a row (SQLSTATE
// class 22, data exception, or 23, integrity constraint violation) as
// hookrelay.EINVALID, so that a caller storing many rows at once can tell it
// from an outage and find the row by storing fewer. A row that no partition
// takes (23514 without a constraint: the day's partition is missing) stays
// as it is: every row of that day fails alike, and a retry succeeds once
// maintenance has created the partition.
func rowDataError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch {
	case pgErr.Code == "23514" && pgErr.ConstraintName == "":
		return err
	case strings.HasPrefix(pgErr.Code, "22"), strings.HasPrefix(pgErr.Code, "23"):
		return hookrelay.WrapError(hookrelay.EINVALID,
			fmt.Sprintf("a value of this callback cannot be stored (SQLSTATE %s)", pgErr.Code), err)
	}
	return err
}

// resolveDuplicates marks the messages lost (msgs indexes), whose
// idempotency key someone else holds, as duplicates of the holder's message.
func resolveDuplicates(ctx context.Context, q *dbsqlc.Queries, msgs []NewMessage, out []StoredMessage, lost []int) error {
	byKey := make(map[idemKey]int, len(lost))
	var lp dbsqlc.IdempotencyKeyLookupManyParams
	for _, i := range lost {
		m := msgs[i]
		k := idemKey{m.CarrierID, m.IdempotencyKey}
		byKey[k] = i
		lp.CarrierIDs = append(lp.CarrierIDs, k.carrier)
		lp.IdemKeys = append(lp.IdemKeys, k.key)
		out[i] = StoredMessage{Err: hookrelay.Errorf(hookrelay.EUNAVAILABLE, "idempotency key changed concurrently; retry")}
	}
	holders, err := q.IdempotencyKeyLookupMany(ctx, lp)
	if err != nil {
		err = fmt.Errorf("look up idempotency keys: %w", unavailable(err))
		for _, i := range lost {
			out[i].Err = err
		}
		return nil
	}
	for _, h := range holders {
		if i, ok := byKey[idemKey{h.CarrierID, h.IdemKey}]; ok {
			out[i] = StoredMessage{ID: h.MessageID, ReceivedAt: h.MessageReceivedAt, Deliveries: int(h.Deliveries), Duplicate: true}
		}
	}
	return nil
}

// Message is a stored callback.
type Message struct {
	ID             int64
	ReceivedAt     time.Time
	CarrierID      int64
	EventType      string
	OrderingKey    string
	MerchantRef    string
	Queue          int
	IdempotencyKey string
	Payload        []byte // nil when offloaded
	PayloadKey     string // "" when inline
	PayloadSize    int
	PayloadSHA256  []byte
	Deliveries     int
	// AdapterVersion, CanonicalType and CanonicalEvent are as in
	// NewMessage.
	AdapterVersion int
	CanonicalType  string
	CanonicalEvent []byte
}

func messageFrom(r dbsqlc.Message) Message {
	m := Message{
		ID: r.ID, ReceivedAt: r.ReceivedAt, CarrierID: r.CarrierID, EventType: r.EventType,
		OrderingKey: r.OrderingKey, MerchantRef: r.MerchantRef, Queue: int(r.Queue), Payload: r.Payload,
		PayloadSize: int(r.PayloadSize), PayloadSHA256: r.PayloadSHA256, Deliveries: int(r.Deliveries),
		AdapterVersion: int(deref(r.AdapterVersion)), CanonicalType: deref(r.CanonicalType), CanonicalEvent: r.CanonicalEvent,
	}
	if r.IdempotencyKey != nil {
		m.IdempotencyKey = *r.IdempotencyKey
	}
	if r.PayloadKey != nil {
		m.PayloadKey = *r.PayloadKey
	}
	return m
}
