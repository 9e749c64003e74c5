package ops

import (
	"context"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// The merchant actions are the operator's: a merchant has no say over its
// own account.

// CreatedMerchant is a merchant just created, with its API key (shown
// once; only its hash is kept).
type CreatedMerchant struct {
	Merchant db.Merchant
	Key      string
}

// CreateMerchant creates merchant name with a new API key.
func (s *Service) CreateMerchant(ctx context.Context, name string) (out CreatedMerchant, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "merchant.create", TargetType: targetMerchant, TargetID: audit.ID(out.Merchant.ID), After: out}, err)
	}()
	if err := checkName(name, "name"); err != nil {
		return CreatedMerchant{}, err
	}
	key := hookrelay.NewKey(hookrelay.MerchantKeyPrefix)
	m, err := s.db.MerchantCreate(ctx, name, hookrelay.HashKey(key), hookrelay.KeyDisplayPrefix(key))
	if err != nil {
		return CreatedMerchant{}, err
	}
	return CreatedMerchant{Merchant: m, Key: key}, nil
}

// Merchants returns up to limit merchants with ids above afterID, by id.
func (s *Service) Merchants(ctx context.Context, afterID int64, limit int) ([]db.Merchant, error) {
	return s.db.MerchantList(ctx, afterID, limit)
}

// KeyRotation is a merchant's new API key.
type KeyRotation struct {
	Merchant db.Merchant
	Key      string // shown once
	// SessionsEnded counts the merchant's dashboard sessions it ended.
	SessionsEnded int64
}

// RotateMerchantKey gives merchant id a new API key: the old one stops
// working at once, and the merchant's dashboard sessions end.
func (s *Service) RotateMerchantKey(ctx context.Context, id int64) (out KeyRotation, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "merchant.rotate_key", TargetType: targetMerchant, TargetID: audit.ID(id), After: out}, err)
	}()
	key := hookrelay.NewKey(hookrelay.MerchantKeyPrefix)
	m, n, err := s.db.MerchantKeyRotate(ctx, id, hookrelay.HashKey(key), hookrelay.KeyDisplayPrefix(key), s.now())
	if err != nil {
		return KeyRotation{}, err
	}
	return KeyRotation{Merchant: m, Key: key, SessionsEnded: n}, nil
}
