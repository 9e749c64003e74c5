package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Carrier is an upstream sender of callbacks.
type Carrier struct {
	ID               int64
	Name             string
	APIKeyHash       []byte // SHA-256 of the API key (hookrelay.HashKey)
	APIKeyPrefix     string // the displayable start of the key
	OrderingKeyField string // dot path of the ordering key in the callback JSON
	EventTypeField   string // dot path of the event type
	MerchantField    string // dot path of the merchant reference
	SigningSecret    string // "" when callbacks are not signed
	RateLimitPerSec  int    // 0 = unlimited
	CreatedAt        time.Time
}

// CarrierCreateParams are the fields of a new carrier; empty field paths get
// the schema defaults (tracking_no, status, merchant_id).
type CarrierCreateParams struct {
	Name             string
	APIKeyHash       []byte
	APIKeyPrefix     string
	OrderingKeyField string
	EventTypeField   string
	MerchantField    string
	SigningSecret    string
	RateLimitPerSec  int
}

// carrierFrom turns a row into a Carrier, opening its signing secret.
func (db *DB) carrierFrom(r dbsqlc.Carrier) (Carrier, error) {
	c := Carrier{
		ID: r.ID, Name: r.Name, APIKeyHash: r.APIKeyHash, APIKeyPrefix: r.APIKeyPrefix,
		OrderingKeyField: r.OrderingKeyField, EventTypeField: r.EventTypeField,
		MerchantField: r.MerchantField, RateLimitPerSec: int(r.RateLimitPerSec), CreatedAt: r.CreatedAt,
	}
	if r.SigningSecret != nil {
		s, err := db.open(purposeCarrierSecret, *r.SigningSecret)
		if err != nil {
			return Carrier{}, fmt.Errorf("carrier %d signing secret: %w", r.ID, err)
		}
		c.SigningSecret = s
	}
	return c, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// CarrierCreate inserts a carrier. A name already taken is hookrelay.ECONFLICT.
func (db *DB) CarrierCreate(ctx context.Context, p CarrierCreateParams) (Carrier, error) {
	var secret *string
	if p.SigningSecret != "" {
		sealed, err := db.seal(purposeCarrierSecret, p.SigningSecret)
		if err != nil {
			return Carrier{}, fmt.Errorf("insert carrier: %w", err)
		}
		secret = &sealed
	}
	r, err := db.q.CarrierInsert(ctx, dbsqlc.CarrierInsertParams{
		Name: p.Name, APIKeyHash: p.APIKeyHash, APIKeyPrefix: p.APIKeyPrefix,
		OrderingKeyField: orDefault(p.OrderingKeyField, "tracking_no"),
		EventTypeField:   orDefault(p.EventTypeField, "status"),
		MerchantField:    orDefault(p.MerchantField, "merchant_id"),
		SigningSecret:    secret, RateLimitPerSec: int32(p.RateLimitPerSec),
	})
	if isCode(err, "23505") {
		return Carrier{}, hookrelay.Errorf(hookrelay.ECONFLICT, "a carrier named %q exists", p.Name)
	}
	if err != nil {
		return Carrier{}, fmt.Errorf("insert carrier: %w", unavailable(err))
	}
	return db.carrierFrom(r)
}

// CarrierByKeyHash returns the carrier whose API key hashes to hash, or
// hookrelay.ENOTFOUND.
func (db *DB) CarrierByKeyHash(ctx context.Context, hash []byte) (Carrier, error) {
	r, err := db.q.CarrierGetByKeyHash(ctx, hash)
	if err != nil {
		return Carrier{}, notFound(unavailableUnlessNoRows(err), "carrier")
	}
	return db.carrierFrom(r)
}

// CarrierList returns up to limit carriers with ids above afterID, by id.
func (db *DB) CarrierList(ctx context.Context, afterID int64, limit int) ([]Carrier, error) {
	rows, err := db.q.CarrierList(ctx, dbsqlc.CarrierListParams{AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list carriers: %w", unavailable(err))
	}
	out := make([]Carrier, len(rows))
	for i, r := range rows {
		if out[i], err = db.carrierFrom(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CarrierAll returns every carrier (a small table), for caches.
func (db *DB) CarrierAll(ctx context.Context) ([]Carrier, error) {
	rows, err := db.q.CarrierListAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("list carriers: %w", unavailable(err))
	}
	out := make([]Carrier, len(rows))
	for i, r := range rows {
		if out[i], err = db.carrierFrom(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}
