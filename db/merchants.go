package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// Merchant owns endpoints.
type Merchant struct {
	ID           int64
	Name         string
	APIKeyHash   []byte // SHA-256 of the API key (hookrelay.HashKey)
	APIKeyPrefix string // the displayable start of the key
	CreatedAt    time.Time
}

func merchantFrom(r dbsqlc.Merchant) Merchant {
	return Merchant{ID: r.ID, Name: r.Name, APIKeyHash: r.APIKeyHash, APIKeyPrefix: r.APIKeyPrefix, CreatedAt: r.CreatedAt}
}

// MerchantCreate inserts a merchant with the given key hash.
func (db *DB) MerchantCreate(ctx context.Context, name string, keyHash []byte, keyPrefix string) (Merchant, error) {
	r, err := db.q.MerchantInsert(ctx, dbsqlc.MerchantInsertParams{Name: name, APIKeyHash: keyHash, APIKeyPrefix: keyPrefix})
	if err != nil {
		return Merchant{}, fmt.Errorf("insert merchant: %w", unavailable(err))
	}
	return merchantFrom(r), nil
}

// MerchantGet returns the merchant with id, or hookrelay.ENOTFOUND.
func (db *DB) MerchantGet(ctx context.Context, id int64) (Merchant, error) {
	r, err := db.q.MerchantGet(ctx, id)
	if err != nil {
		return Merchant{}, notFound(unavailableUnlessNoRows(err), "merchant")
	}
	return merchantFrom(r), nil
}

// MerchantByKeyHash returns the merchant whose API key hashes to hash, or
// hookrelay.ENOTFOUND.
func (db *DB) MerchantByKeyHash(ctx context.Context, hash []byte) (Merchant, error) {
	r, err := db.q.MerchantGetByKeyHash(ctx, hash)
	if err != nil {
		return Merchant{}, notFound(unavailableUnlessNoRows(err), "merchant")
	}
	return merchantFrom(r), nil
}

// MerchantList returns up to limit merchants with ids above afterID, by id.
func (db *DB) MerchantList(ctx context.Context, afterID int64, limit int) ([]Merchant, error) {
	rows, err := db.q.MerchantList(ctx, dbsqlc.MerchantListParams{AfterID: afterID, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list merchants: %w", unavailable(err))
	}
	out := make([]Merchant, len(rows))
	for i, r := range rows {
		out[i] = merchantFrom(r)
	}
	return out, nil
}
