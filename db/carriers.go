package db

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5"

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
	// Signature is how its callbacks are signed, checked (Check called),
	// with its secret opened; scheme none when they are not signed.
	Signature hookrelay.InboundSignature
	// AllowedCIDRs are the source addresses its callbacks may come from;
	// empty: any.
	AllowedCIDRs    []netip.Prefix
	RateLimitPerSec int        // 0 = unlimited
	DisabledAt      *time.Time // set while disabled
	// AdapterVersion is the adapter version its callbacks go through (0:
	// none); AdapterOnFailure what one the adapter fails on becomes
	// (AdapterRefuse or AdapterPark).
	AdapterVersion   int
	AdapterOnFailure string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Disabled reports whether the carrier's callbacks are refused.
func (c *Carrier) Disabled() bool { return c.DisabledAt != nil }

// CarrierCreateParams are the fields of a new carrier; empty field paths get
// the schema defaults (tracking_no, status, merchant_id).
type CarrierCreateParams struct {
	Name             string
	APIKeyHash       []byte
	APIKeyPrefix     string
	OrderingKeyField string
	EventTypeField   string
	MerchantField    string
	// Signature is how its callbacks are signed (validated by the caller).
	Signature hookrelay.InboundSignature
	// SigningSecret, when Signature is not signed, declares the original
	// scheme (hookrelay.LegacyInboundSignature) with this secret.
	SigningSecret   string
	AllowedCIDRs    []netip.Prefix
	RateLimitPerSec int
}

// carrierFrom turns a row into a Carrier, opening its signing secret.
func (db *DB) carrierFrom(r dbsqlc.Carrier) (Carrier, error) {
	c := Carrier{
		ID: r.ID, Name: r.Name, APIKeyHash: r.APIKeyHash, APIKeyPrefix: r.APIKeyPrefix,
		OrderingKeyField: r.OrderingKeyField, EventTypeField: r.EventTypeField,
		MerchantField: r.MerchantField, RateLimitPerSec: int(r.RateLimitPerSec), CreatedAt: r.CreatedAt,
		DisabledAt: r.DisabledAt, UpdatedAt: r.UpdatedAt,
		AdapterVersion: int(deref(r.AdapterVersion)), AdapterOnFailure: r.AdapterOnFailure,
	}
	var secret string
	if r.SigningSecret != nil {
		s, err := db.open(purposeCarrierSecret, *r.SigningSecret)
		if err != nil {
			return Carrier{}, fmt.Errorf("carrier %d signing secret: %w", r.ID, err)
		}
		secret = s
	}
	switch {
	case r.Signature != nil:
		if err := json.Unmarshal(r.Signature, &c.Signature); err != nil {
			return Carrier{}, fmt.Errorf("carrier %d signature: %w", r.ID, err)
		}
		c.Signature.Secret = secret
	case secret != "":
		c.Signature = hookrelay.LegacyInboundSignature(secret)
	}
	// A stored declaration passed Check when it was written; one that does
	// not now (another version's) refuses every callback (Verify) rather
	// than fail the whole carrier list.
	_ = c.Signature.Check()
	for _, s := range r.AllowedCidrs {
		if p, err := netip.ParsePrefix(s); err == nil {
			c.AllowedCIDRs = append(c.AllowedCIDRs, p)
		}
	}
	return c, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// carrierSignatureColumns returns the stored forms of a signature: its
// declaration (nil for none) and its sealed secret (nil for none).
func (db *DB) carrierSignatureColumns(sig hookrelay.InboundSignature) (decl []byte, secret *string, err error) {
	if !sig.Signed() {
		return nil, nil, nil
	}
	decl, err = json.Marshal(sig)
	if err != nil {
		return nil, nil, err
	}
	if sig.Secret != "" {
		sealed, err := db.seal(purposeCarrierSecret, sig.Secret)
		if err != nil {
			return nil, nil, err
		}
		secret = &sealed
	}
	return decl, secret, nil
}

func cidrStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// CarrierCreate inserts a carrier. A name already taken is hookrelay.ECONFLICT.
func (db *DB) CarrierCreate(ctx context.Context, p CarrierCreateParams) (Carrier, error) {
	sig := p.Signature
	if !sig.Signed() && p.SigningSecret != "" {
		sig = hookrelay.LegacyInboundSignature(p.SigningSecret)
	}
	decl, secret, err := db.carrierSignatureColumns(sig)
	if err != nil {
		return Carrier{}, fmt.Errorf("insert carrier: %w", err)
	}
	r, err := db.q.CarrierInsert(ctx, dbsqlc.CarrierInsertParams{
		Name: p.Name, APIKeyHash: p.APIKeyHash, APIKeyPrefix: p.APIKeyPrefix,
		OrderingKeyField: orDefault(p.OrderingKeyField, "tracking_no"),
		EventTypeField:   orDefault(p.EventTypeField, "status"),
		MerchantField:    orDefault(p.MerchantField, "merchant_id"),
		SigningSecret:    secret, Signature: decl, AllowedCidrs: cidrStrings(p.AllowedCIDRs),
		RateLimitPerSec: int32(p.RateLimitPerSec),
	})
	if isCode(err, "23505") {
		return Carrier{}, hookrelay.Errorf(hookrelay.ECONFLICT, "a carrier named %q exists", p.Name)
	}
	if err != nil {
		return Carrier{}, fmt.Errorf("insert carrier: %w", unavailable(err))
	}
	return db.carrierFrom(r)
}

// CarrierGet returns carrier id (not deleted), or hookrelay.ENOTFOUND.
func (db *DB) CarrierGet(ctx context.Context, id int64) (Carrier, error) {
	r, err := db.q.CarrierGet(ctx, id)
	if err != nil {
		return Carrier{}, notFound(unavailableUnlessNoRows(err), "carrier")
	}
	return db.carrierFrom(r)
}

// CarrierUpdate writes every field of c but its keys and times; its
// disabled state only when setDisabled (a change of other fields does not
// undo a concurrent disable). A name already taken is hookrelay.ECONFLICT.
func (db *DB) CarrierUpdate(ctx context.Context, c Carrier, setDisabled bool) (Carrier, error) {
	decl, secret, err := db.carrierSignatureColumns(c.Signature)
	if err != nil {
		return Carrier{}, fmt.Errorf("update carrier: %w", err)
	}
	r, err := db.q.CarrierUpdate(ctx, dbsqlc.CarrierUpdateParams{
		ID: c.ID, Name: c.Name, OrderingKeyField: c.OrderingKeyField, EventTypeField: c.EventTypeField,
		MerchantField: c.MerchantField, SigningSecret: secret, Signature: decl,
		AllowedCidrs: cidrStrings(c.AllowedCIDRs), RateLimitPerSec: int32(c.RateLimitPerSec), DisabledAt: c.DisabledAt, SetDisabled: setDisabled,
	})
	if isCode(err, "23505") {
		return Carrier{}, hookrelay.Errorf(hookrelay.ECONFLICT, "a carrier named %q exists", c.Name)
	}
	if err != nil {
		return Carrier{}, fmt.Errorf("update carrier %d: %w", c.ID, notFound(unavailableUnlessNoRows(err), "carrier"))
	}
	return db.carrierFrom(r)
}

// CarrierSetDisabled disables or enables carrier id.
func (db *DB) CarrierSetDisabled(ctx context.Context, id int64, disabled bool) (Carrier, error) {
	r, err := db.q.CarrierSetDisabled(ctx, dbsqlc.CarrierSetDisabledParams{ID: id, Disabled: disabled})
	if err != nil {
		return Carrier{}, fmt.Errorf("set carrier %d disabled: %w", id, notFound(unavailableUnlessNoRows(err), "carrier"))
	}
	return db.carrierFrom(r)
}

// CarrierPendingCount counts, up to limit, the deliveries not finished of
// carrier id's messages.
func (db *DB) CarrierPendingCount(ctx context.Context, id int64, limit int) (int64, error) {
	n, err := db.q.CarrierPendingCount(ctx, dbsqlc.CarrierPendingCountParams{CarrierID: id, Lim: int32(limit)})
	if err != nil {
		return 0, fmt.Errorf("count carrier %d's pending deliveries: %w", id, unavailable(err))
	}
	return n, nil
}

// CarrierDelete deletes carrier id: its keys stop working and it leaves
// every list, while its row stays for the name of the messages it sent
// (their deliveries go on). Not found is hookrelay.ENOTFOUND.
func (db *DB) CarrierDelete(ctx context.Context, id int64) error {
	n, err := db.q.CarrierDelete(ctx, id)
	if err != nil {
		return fmt.Errorf("delete carrier %d: %w", id, unavailable(err))
	}
	if n == 0 {
		return hookrelay.Errorf(hookrelay.ENOTFOUND, "carrier not found")
	}
	return nil
}

// CarrierKeyRotation is the outcome of CarrierKeyRotate.
type CarrierKeyRotation struct {
	// PreviousExpireAt is when the replaced key stops working (the
	// rotation's time itself for no overlap).
	PreviousExpireAt time.Time
}

// CarrierKeyRotate gives carrier id a new API key. The key it replaces
// keeps working for overlap (0: not at all), and the keys replaced before
// stop by then at the latest.
func (db *DB) CarrierKeyRotate(ctx context.Context, id int64, keyHash []byte, keyPrefix string, overlap time.Duration) (CarrierKeyRotation, error) {
	var out CarrierKeyRotation
	err := db.inTx(ctx, func(q *dbsqlc.Queries, _ pgx.Tx) error {
		old, err := q.CarrierKeyReplace(ctx, dbsqlc.CarrierKeyReplaceParams{CarrierID: id, APIKeyHash: keyHash, APIKeyPrefix: keyPrefix})
		if err != nil {
			return notFound(unavailableUnlessNoRows(err), "carrier")
		}
		if err := q.CarrierPreviousKeysExpire(ctx, dbsqlc.CarrierPreviousKeysExpireParams{CarrierID: id, Overlap: overlap}); err != nil {
			return unavailable(err)
		}
		if err := q.CarrierPreviousKeysDeleteExpired(ctx, id); err != nil {
			return unavailable(err)
		}
		if overlap <= 0 {
			out.PreviousExpireAt = time.Now()
			return nil
		}
		out.PreviousExpireAt, err = q.CarrierPreviousKeyInsert(ctx, dbsqlc.CarrierPreviousKeyInsertParams{
			APIKeyHash: old.OldHash, CarrierID: id, APIKeyPrefix: old.OldPrefix, Overlap: overlap})
		return unavailable(err)
	})
	if err != nil {
		return CarrierKeyRotation{}, fmt.Errorf("rotate carrier %d's key: %w", id, err)
	}
	return out, nil
}

// CarrierPreviousKey is a replaced API key still accepted until ExpiresAt.
type CarrierPreviousKey struct {
	APIKeyHash   []byte
	CarrierID    int64
	APIKeyPrefix string
	ExpiresAt    time.Time
}

// CarrierPreviousKeysLive returns the replaced keys still accepted, for
// caches.
func (db *DB) CarrierPreviousKeysLive(ctx context.Context) ([]CarrierPreviousKey, error) {
	rows, err := db.q.CarrierPreviousKeysLive(ctx)
	if err != nil {
		return nil, fmt.Errorf("list previous carrier keys: %w", unavailable(err))
	}
	out := make([]CarrierPreviousKey, len(rows))
	for i, r := range rows {
		out[i] = CarrierPreviousKey{APIKeyHash: r.APIKeyHash, CarrierID: r.CarrierID, APIKeyPrefix: r.APIKeyPrefix, ExpiresAt: r.ExpiresAt}
	}
	return out, nil
}

// CarrierByKeyHash returns the carrier whose API key (current, or previous
// within its overlap) hashes to hash, or hookrelay.ENOTFOUND.
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
