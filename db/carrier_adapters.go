package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Adapter failure modes of a carrier (carriers.adapter_on_failure).
const (
	// AdapterRefuse answers a callback its adapter fails on with 422 and
	// records the refusal.
	AdapterRefuse = "refuse"
	// AdapterPark accepts it: the message is stored with the adapter's
	// error, delivered to raw endpoints only, until an operator unparks it.
	AdapterPark = "park"
)

// CarrierAdapter is one version of a carrier's adapter.
type CarrierAdapter struct {
	CarrierID int64
	Version   int
	// Source is the program; empty in lists (SourceSize has its length).
	Source     string
	SourceSize int
	Note       string
	CreatedAt  time.Time
}

func carrierAdapterFrom(r dbsqlc.CarrierAdapter) CarrierAdapter {
	return CarrierAdapter{CarrierID: r.CarrierID, Version: int(r.Version), Source: r.Source, SourceSize: len(r.Source),
		Note: r.Note, CreatedAt: r.CreatedAt}
}

// CarrierAdapterCreate stores a new version of the carrier's adapter, the
// one after its last. An unknown carrier is hookrelay.ENOTFOUND.
func (db *DB) CarrierAdapterCreate(ctx context.Context, carrierID int64, source, note string) (CarrierAdapter, error) {
	// Each failure means another insert for the carrier committed (it held
	// the carrier's lock): a creator fails at most once per concurrent one.
	for try := 0; ; try++ {
		r, err := db.q.CarrierAdapterInsert(ctx, dbsqlc.CarrierAdapterInsertParams{CarrierID: carrierID, Source: source, Note: note})
		if isCode(err, "23505") && try < 50 {
			continue // a concurrent insert took the number
		}
		if err != nil {
			return CarrierAdapter{}, fmt.Errorf("insert adapter of carrier %d: %w", carrierID, notFound(unavailableUnlessNoRows(err), "carrier"))
		}
		return carrierAdapterFrom(r), nil
	}
}

// CarrierAdapterList returns the carrier's adapter versions, newest first,
// without their sources.
func (db *DB) CarrierAdapterList(ctx context.Context, carrierID int64) ([]CarrierAdapter, error) {
	rows, err := db.q.CarrierAdapterList(ctx, carrierID)
	if err != nil {
		return nil, fmt.Errorf("list adapters of carrier %d: %w", carrierID, unavailable(err))
	}
	out := make([]CarrierAdapter, len(rows))
	for i, r := range rows {
		out[i] = CarrierAdapter{CarrierID: r.CarrierID, Version: int(r.Version), SourceSize: int(r.SourceSize), Note: r.Note, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// CarrierAdapterGet returns one version with its source
// (hookrelay.ENOTFOUND when there is none).
func (db *DB) CarrierAdapterGet(ctx context.Context, carrierID int64, version int) (CarrierAdapter, error) {
	r, err := db.q.CarrierAdapterGet(ctx, dbsqlc.CarrierAdapterGetParams{CarrierID: carrierID, Version: int32(version)})
	if err != nil {
		return CarrierAdapter{}, fmt.Errorf("get adapter %d of carrier %d: %w", version, carrierID, notFound(unavailableUnlessNoRows(err), "adapter version"))
	}
	return carrierAdapterFrom(r), nil
}

// CarrierAdapterActiveAll returns the active adapter of every carrier that
// has one, with its source.
func (db *DB) CarrierAdapterActiveAll(ctx context.Context) ([]CarrierAdapter, error) {
	rows, err := db.q.CarrierAdapterActiveAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("list active adapters: %w", unavailable(err))
	}
	out := make([]CarrierAdapter, len(rows))
	for i, r := range rows {
		out[i] = CarrierAdapter{CarrierID: r.CarrierID, Version: int(r.Version), Source: r.Source, SourceSize: len(r.Source)}
	}
	return out, nil
}

// CarrierAdapterActivate makes version the adapter the carrier's callbacks
// go through; 0 turns adapters off. A version the carrier does not have is
// hookrelay.ENOTFOUND.
func (db *DB) CarrierAdapterActivate(ctx context.Context, carrierID int64, version int) (Carrier, error) {
	var v *int32
	if version > 0 {
		x := int32(version)
		v = &x
	}
	r, err := db.q.CarrierAdapterActivate(ctx, dbsqlc.CarrierAdapterActivateParams{ID: carrierID, Version: v})
	if isCode(err, "23503") { // foreign_key_violation
		return Carrier{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "adapter version %d not found", version)
	}
	if err != nil {
		return Carrier{}, fmt.Errorf("activate adapter %d of carrier %d: %w", version, carrierID, notFound(unavailableUnlessNoRows(err), "carrier"))
	}
	return db.carrierFrom(r)
}

// CarrierSetAdapterOnFailure sets what the carrier's callbacks that its
// adapter fails on become (AdapterRefuse or AdapterPark).
func (db *DB) CarrierSetAdapterOnFailure(ctx context.Context, carrierID int64, mode string) (Carrier, error) {
	r, err := db.q.CarrierSetAdapterOnFailure(ctx, dbsqlc.CarrierSetAdapterOnFailureParams{ID: carrierID, OnFailure: mode})
	if err != nil {
		return Carrier{}, fmt.Errorf("set adapter failure mode of carrier %d: %w", carrierID, notFound(unavailableUnlessNoRows(err), "carrier"))
	}
	return db.carrierFrom(r)
}

// StoredCallback is a stored callback as adapters see it again (dry runs,
// parked callbacks): its original body (Payload, or PayloadKey when
// offloaded) and what ingest made of it.
type StoredCallback struct {
	ID          int64
	ReceivedAt  time.Time
	EventType   string
	OrderingKey string
	MerchantRef string
	Queue       int
	Payload     []byte
	PayloadKey  string
	// AdapterVersion is the version that ran at ingest (0: none);
	// CanonicalType and CanonicalEvent what it made (empty: no event);
	// AdapterError why the callback is parked ("" when it is not).
	AdapterVersion int
	CanonicalType  string
	CanonicalEvent []byte
	AdapterError   string
}

// MessageCarrierRecent returns the carrier's last lim callbacks received
// since since, newest first.
func (db *DB) MessageCarrierRecent(ctx context.Context, carrierID int64, since time.Time, lim int) ([]StoredCallback, error) {
	rows, err := db.q.MessageCarrierRecent(ctx, dbsqlc.MessageCarrierRecentParams{CarrierID: carrierID, Since: since, Lim: int32(lim)})
	if err != nil {
		return nil, fmt.Errorf("recent callbacks of carrier %d: %w", carrierID, unavailable(err))
	}
	out := make([]StoredCallback, len(rows))
	for i, r := range rows {
		out[i] = StoredCallback{ID: r.ID, ReceivedAt: r.ReceivedAt, EventType: r.EventType, OrderingKey: r.OrderingKey,
			MerchantRef: r.MerchantRef, Payload: r.Payload, PayloadKey: deref(r.PayloadKey), AdapterVersion: int(deref(r.AdapterVersion)),
			CanonicalType: deref(r.CanonicalType), CanonicalEvent: r.CanonicalEvent}
	}
	return out, nil
}

// MessageParkedList returns up to lim of the carrier's parked callbacks,
// oldest first, after the one at (afterAt, afterID) (zero: from the first).
func (db *DB) MessageParkedList(ctx context.Context, carrierID int64, afterAt time.Time, afterID int64, lim int) ([]StoredCallback, error) {
	rows, err := db.q.MessageParkedList(ctx, dbsqlc.MessageParkedListParams{CarrierID: carrierID, AfterAt: afterAt, AfterID: afterID, Lim: int32(lim)})
	if err != nil {
		return nil, fmt.Errorf("parked callbacks of carrier %d: %w", carrierID, unavailable(err))
	}
	out := make([]StoredCallback, len(rows))
	for i, r := range rows {
		out[i] = StoredCallback{ID: r.ID, ReceivedAt: r.ReceivedAt, EventType: r.EventType, OrderingKey: r.OrderingKey,
			MerchantRef: r.MerchantRef, Queue: int(r.Queue), Payload: r.Payload, PayloadKey: deref(r.PayloadKey),
			AdapterVersion: int(r.AdapterVersion), AdapterError: r.Error}
	}
	return out, nil
}

// UnparkParams is the event a parked message now gets and the canonical
// endpoints it goes to.
type UnparkParams struct {
	ID             int64
	ReceivedAt     time.Time
	AdapterVersion int
	CanonicalType  string
	CanonicalEvent []byte
	EndpointIDs    []int64
}

// MessageUnpark stores the event of a parked message and its deliveries
// (unordered: it arrives after its key's later callbacks). It returns the
// deliveries made and false when the message was no longer parked.
func (db *DB) MessageUnpark(ctx context.Context, p UnparkParams) (int, bool, error) {
	if p.EndpointIDs == nil {
		p.EndpointIDs = []int64{}
	}
	r, err := db.q.MessageUnpark(ctx, dbsqlc.MessageUnparkParams{ID: p.ID, ReceivedAt: p.ReceivedAt, AdapterVersion: int32(p.AdapterVersion),
		CanonicalType: p.CanonicalType, CanonicalEvent: p.CanonicalEvent, EndpointIDs: p.EndpointIDs})
	if err != nil {
		err = unavailableUnlessNoRows(err)
		if hookrelay.CodeOf(notFound(err, "")) == hookrelay.ENOTFOUND {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("unpark message %d: %w", p.ID, err)
	}
	return int(r.Deliveries), true, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ParkedCallbackPurgeGone forgets the carrier's parked callbacks whose
// message is past retention, and returns how many.
func (db *DB) ParkedCallbackPurgeGone(ctx context.Context, carrierID int64) (int64, error) {
	n, err := db.q.ParkedCallbackPurgeGone(ctx, carrierID)
	if err != nil {
		return 0, fmt.Errorf("purge parked callbacks of carrier %d: %w", carrierID, unavailable(err))
	}
	return n, nil
}
