package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
}

// MessageIDsReserve takes n ids from the message sequence.
func (db *DB) MessageIDsReserve(ctx context.Context, n int) ([]int64, error) {
	ids, err := db.q.MessageIDsReserve(ctx, int32(n))
	if err != nil {
		return nil, fmt.Errorf("reserve message ids: %w", unavailable(err))
	}
	return ids, nil
}

type idemKey struct {
	carrier int64
	key     string
}

// MessageInsertMany stores msgs and their deliveries in one transaction
// (synchronous commit) and returns one result per message, in order. Messages
// with an Idempotency key already used by the same carrier within 24 h (in an
// earlier transaction, or earlier in msgs) are duplicates and store nothing.
// Either every message is stored or none is.
func (db *DB) MessageInsertMany(ctx context.Context, msgs []NewMessage) ([]StoredMessage, error) {
	out := make([]StoredMessage, len(msgs))
	if len(msgs) == 0 {
		return out, nil
	}
	now := time.Now()
	needIDs, nDeliveries := 0, 0
	for _, m := range msgs {
		if m.ID == 0 {
			needIDs++
		}
		nDeliveries += len(m.EndpointIDs)
	}
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		// Ids for every message and delivery up front (one round trip);
		// duplicates waste theirs, which sequences allow.
		reserved, err := q.IDsReserve(ctx, dbsqlc.IDsReserveParams{Messages: int32(needIDs), Deliveries: int32(nDeliveries)})
		if err != nil {
			return unavailable(err)
		}
		msgIDs, delIDs := reserved.MessageIds, reserved.DeliveryIds
		// In-batch duplicates point at the first message with the key.
		first := map[idemKey]int{}
		dupOf := make([]int, len(msgs))
		var ip dbsqlc.IdempotencyInsertManyParams
		for i, m := range msgs {
			dupOf[i] = -1
			out[i] = StoredMessage{ID: m.ID, ReceivedAt: m.ReceivedAt, Deliveries: len(m.EndpointIDs)}
			if out[i].ID == 0 {
				out[i].ID, msgIDs = msgIDs[0], msgIDs[1:]
			}
			if out[i].ReceivedAt.IsZero() {
				out[i].ReceivedAt = now
			}
			if m.IdempotencyKey == "" {
				continue
			}
			k := idemKey{m.CarrierID, m.IdempotencyKey}
			if j, ok := first[k]; ok {
				dupOf[i] = j
				continue
			}
			first[k] = i
			ip.CarrierIds = append(ip.CarrierIds, k.carrier)
			ip.IdemKeys = append(ip.IdemKeys, k.key)
			ip.MessageIds = append(ip.MessageIds, out[i].ID)
			ip.ReceivedAts = append(ip.ReceivedAts, out[i].ReceivedAt)
			ip.Deliveries = append(ip.Deliveries, int32(len(m.EndpointIDs)))
		}
		if len(ip.CarrierIds) > 0 {
			if err := resolveIdempotency(ctx, q, ip, first, out, dupOf); err != nil {
				return err
			}
		}
		for i := range msgs {
			if j := dupOf[i]; j >= 0 {
				if out[j].Duplicate {
					out[i] = out[j]
				} else {
					out[i] = StoredMessage{ID: out[j].ID, ReceivedAt: out[j].ReceivedAt, Deliveries: out[j].Deliveries, Duplicate: true}
				}
				nDeliveries -= len(msgs[i].EndpointIDs)
			} else if out[i].Duplicate {
				nDeliveries -= len(msgs[i].EndpointIDs)
			}
		}
		mrows := make([]dbsqlc.MessageCopyParams, 0, len(msgs))
		drows := make([]dbsqlc.DeliveryCopyParams, 0, nDeliveries)
		for i, m := range msgs {
			if out[i].Duplicate {
				continue
			}
			r := dbsqlc.MessageCopyParams{
				ID: out[i].ID, ReceivedAt: out[i].ReceivedAt, CarrierID: m.CarrierID, EventType: m.EventType,
				OrderingKey: m.OrderingKey, MerchantRef: m.MerchantRef, Queue: int16(m.Queue),
				PayloadSize: int32(m.PayloadSize), PayloadSha256: m.PayloadSHA256, Deliveries: int32(len(m.EndpointIDs)),
			}
			if m.IdempotencyKey != "" {
				r.IdempotencyKey = &msgs[i].IdempotencyKey
			}
			if m.PayloadKey != "" {
				r.PayloadKey = &msgs[i].PayloadKey
			} else {
				r.Payload = m.Payload
				if r.Payload == nil {
					r.Payload = []byte{}
				}
			}
			mrows = append(mrows, r)
			out[i].DeliveryIDs = make([]int64, len(m.EndpointIDs))
			for j, ep := range m.EndpointIDs {
				id := delIDs[0]
				delIDs = delIDs[1:]
				out[i].DeliveryIDs[j] = id
				drows = append(drows, dbsqlc.DeliveryCopyParams{
					ID: id, Queue: int16(m.Queue), EndpointID: ep, OrderingKey: m.OrderingKey,
					MessageID: out[i].ID, MessageReceivedAt: out[i].ReceivedAt,
				})
			}
		}
		if len(mrows) > 0 {
			if _, err := q.MessageCopy(ctx, mrows); err != nil {
				return unavailable(err)
			}
		}
		if len(drows) > 0 {
			if _, err := q.DeliveryCopy(ctx, drows); err != nil {
				return unavailable(err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert %d messages: %w", len(msgs), err)
	}
	return out, nil
}

// resolveIdempotency claims the batch's keys and marks out[i].Duplicate (with
// the first message's id) for every key someone else holds.
func resolveIdempotency(ctx context.Context, q *dbsqlc.Queries, ip dbsqlc.IdempotencyInsertManyParams,
	first map[idemKey]int, out []StoredMessage, dupOf []int) error {
	claimed, err := q.IdempotencyInsertMany(ctx, ip)
	if err != nil {
		return unavailable(err)
	}
	if len(claimed) == len(ip.CarrierIds) {
		return nil
	}
	won := make(map[idemKey]bool, len(claimed))
	for _, c := range claimed {
		won[idemKey{c.CarrierID, c.IdemKey}] = true
	}
	var lp dbsqlc.IdempotencyLookupManyParams
	for i, c := range ip.CarrierIds {
		if k := (idemKey{c, ip.IdemKeys[i]}); !won[k] {
			lp.CarrierIds = append(lp.CarrierIds, k.carrier)
			lp.IdemKeys = append(lp.IdemKeys, k.key)
		}
	}
	holders, err := q.IdempotencyLookupMany(ctx, lp)
	if err != nil {
		return unavailable(err)
	}
	found := 0
	for _, h := range holders {
		k := idemKey{h.CarrierID, h.IdemKey}
		i, ok := first[k]
		if !ok || won[k] || out[i].Duplicate {
			continue
		}
		out[i] = StoredMessage{ID: h.MessageID, ReceivedAt: h.MessageReceivedAt, Deliveries: int(h.Deliveries), Duplicate: true}
		found++
	}
	if found != len(lp.CarrierIds) {
		// A key neither claimed nor found: its holder expired between the two
		// statements. Fail the batch; the client's retry will claim it.
		return hookrelay.Errorf(hookrelay.EUNAVAILABLE, "idempotency key changed concurrently; retry")
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
}

func messageFrom(r dbsqlc.Message) Message {
	m := Message{
		ID: r.ID, ReceivedAt: r.ReceivedAt, CarrierID: r.CarrierID, EventType: r.EventType,
		OrderingKey: r.OrderingKey, MerchantRef: r.MerchantRef, Queue: int(r.Queue), Payload: r.Payload,
		PayloadSize: int(r.PayloadSize), PayloadSHA256: r.PayloadSha256, Deliveries: int(r.Deliveries),
	}
	if r.IdempotencyKey != nil {
		m.IdempotencyKey = *r.IdempotencyKey
	}
	if r.PayloadKey != nil {
		m.PayloadKey = *r.PayloadKey
	}
	return m
}

// MessageGet returns the message (id, receivedAt), or hookrelay.ENOTFOUND.
func (db *DB) MessageGet(ctx context.Context, id int64, receivedAt time.Time) (Message, error) {
	r, err := db.q.MessageGet(ctx, dbsqlc.MessageGetParams{ID: id, ReceivedAt: receivedAt})
	if err != nil {
		return Message{}, notFound(unavailableUnlessNoRows(err), "message")
	}
	return messageFrom(r), nil
}

// MessageGetByID returns the message with id, looking in every partition
// (slower than MessageGet), or hookrelay.ENOTFOUND.
func (db *DB) MessageGetByID(ctx context.Context, id int64) (Message, error) {
	r, err := db.q.MessageGetByID(ctx, id)
	if err != nil {
		return Message{}, notFound(unavailableUnlessNoRows(err), "message")
	}
	return messageFrom(r), nil
}
