package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// A carrier's status.
const (
	CarrierActive   = "active"
	CarrierDisabled = "disabled"
)

// CarrierStatus is "active" or "disabled".
func CarrierStatus(c db.Carrier) string {
	if c.Disabled() {
		return CarrierDisabled
	}
	return CarrierActive
}

// MaxCarrierKeyOverlap bounds how long a rotated carrier key keeps working.
const MaxCarrierKeyOverlap = 30 * 24 * time.Hour

// maxPendingCount bounds the count of a carrier's undelivered callbacks
// DeleteCarrier reads.
const maxPendingCount = 10_000

// CarrierUpdate is a change to a carrier; nil fields stay as they are.
type CarrierUpdate struct {
	Name             *string
	OrderingKeyField *string
	EventTypeField   *string
	MerchantField    *string
	// Signature replaces the carrier's signature declaration. A signed
	// scheme without a secret keeps the carrier's current secret (but for
	// a change to or from standard-webhooks, whose secrets differ).
	Signature *hookrelay.InboundSignature
	// SigningSecret declares the original scheme with this secret (""
	// removes the signature).
	SigningSecret   *string
	AllowedCIDRs    *[]string
	RateLimitPerSec *int
	// Status is "active" or "disabled".
	Status *string
}

// Carrier returns carrier id. Operators only.
func (s *Service) Carrier(ctx context.Context, id int64) (db.Carrier, error) {
	return s.db.CarrierGet(ctx, id)
}

// UpdateCarrier validates in and applies it to carrier id. Operators only.
// Errors name the field at fault.
func (s *Service) UpdateCarrier(ctx context.Context, id int64, in CarrierUpdate) (after db.Carrier, err error) {
	var before *db.Carrier
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "carrier.update", TargetType: targetCarrier, TargetID: audit.ID(id), Before: before, After: after}, err)
	}()
	c, err := s.db.CarrierGet(ctx, id)
	if err != nil {
		return db.Carrier{}, err
	}
	was := c
	before = &was
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.Name, in.Name)
	set(&c.OrderingKeyField, in.OrderingKeyField)
	set(&c.EventTypeField, in.EventTypeField)
	set(&c.MerchantField, in.MerchantField)
	if in.RateLimitPerSec != nil {
		c.RateLimitPerSec = *in.RateLimitPerSec
	}
	switch {
	case in.Signature != nil && in.SigningSecret != nil:
		return db.Carrier{}, invalidf("signing_secret and signature exclude each other: give the secret in signature.secret")
	case in.Signature != nil:
		sig := *in.Signature
		if sig.Secret == "" && sig.Signed() && sameSecretKind(sig.Scheme, c.Signature.Scheme) {
			sig.Secret = c.Signature.Secret
		}
		c.Signature = sig
	case in.SigningSecret != nil && *in.SigningSecret == "":
		c.Signature = hookrelay.InboundSignature{}
	case in.SigningSecret != nil:
		if err := checkLegacySecret(*in.SigningSecret); err != nil {
			return db.Carrier{}, err
		}
		c.Signature = hookrelay.LegacyInboundSignature(*in.SigningSecret)
	}
	if in.AllowedCIDRs != nil {
		if c.AllowedCIDRs, err = parseCIDRs(*in.AllowedCIDRs); err != nil {
			return db.Carrier{}, err
		}
	}
	if in.Status != nil {
		switch *in.Status {
		case CarrierActive:
			c.DisabledAt = nil
		case CarrierDisabled:
			if c.DisabledAt == nil {
				now := s.now()
				c.DisabledAt = &now
			}
		default:
			return db.Carrier{}, invalidf("status must be %q or %q", CarrierActive, CarrierDisabled)
		}
	}
	if err := checkCarrier(&c); err != nil {
		return db.Carrier{}, err
	}
	return s.db.CarrierUpdate(ctx, c, in.Status != nil)
}

// SetCarrierEnabled enables or disables carrier id. A disabled carrier's
// callbacks are refused (403) until it is enabled; nothing else changes.
// Operators only.
func (s *Service) SetCarrierEnabled(ctx context.Context, id int64, enabled bool) (after db.Carrier, err error) {
	action := map[bool]string{true: "carrier.enable", false: "carrier.disable"}[enabled]
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: action, TargetType: targetCarrier, TargetID: audit.ID(id), After: after}, err)
	}()
	return s.db.CarrierSetDisabled(ctx, id, !enabled)
}

// DeleteCarrier deletes carrier id: its keys stop working at once and it
// leaves the lists. While deliveries of callbacks it sent are not finished
// the deletion is refused (ECONFLICT, with their count) unless force is
// set; either way those deliveries go on, under the carrier's name. It
// returns how many there were (counted up to 10,000). Operators only.
func (s *Service) DeleteCarrier(ctx context.Context, id int64, force bool) (pending int64, err error) {
	var before *db.Carrier
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "carrier.delete", TargetType: targetCarrier, TargetID: audit.ID(id), Before: before,
			After: map[string]any{"force": force, "undelivered": pending}}, err)
	}()
	c, err := s.db.CarrierGet(ctx, id)
	if err != nil {
		return 0, err
	}
	before = &c
	n, err := s.db.CarrierPendingCount(ctx, id, maxPendingCount)
	if err != nil {
		return 0, err
	}
	if n > 0 && !force {
		more := ""
		if n >= maxPendingCount {
			more = "at least "
		}
		return n, hookrelay.Errorf(hookrelay.ECONFLICT,
			"carrier has %s%d undelivered callbacks; delete with force=true to delete it anyway (they are still delivered)", more, n)
	}
	return n, s.db.CarrierDelete(ctx, id)
}

// CarrierKeyRotation is a carrier's new API key.
type CarrierKeyRotation struct {
	Key string // shown once
	// PreviousExpireAt is when the key it replaced stops working.
	PreviousExpireAt time.Time
}

// RotateCarrierKey gives carrier id a new API key. The key it replaces
// keeps working for overlap (0: it stops at once); keys replaced earlier
// stop by the end of the overlap at the latest. Operators only.
func (s *Service) RotateCarrierKey(ctx context.Context, id int64, overlap time.Duration) (out CarrierKeyRotation, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "carrier.rotate_key", TargetType: targetCarrier, TargetID: audit.ID(id),
			After: map[string]any{"overlap": overlap.String(), "previous_expire_at": out.PreviousExpireAt, "key": out.Key}}, err)
	}()
	if overlap < 0 || overlap > MaxCarrierKeyOverlap {
		return CarrierKeyRotation{}, invalidf("overlap must be between 0s and %s", MaxCarrierKeyOverlap)
	}
	key := hookrelay.NewKey(hookrelay.CarrierKeyPrefix)
	rot, err := s.db.CarrierKeyRotate(ctx, id, hookrelay.HashKey(key), hookrelay.KeyDisplayPrefix(key), overlap)
	if err != nil {
		return CarrierKeyRotation{}, err
	}
	return CarrierKeyRotation{Key: key, PreviousExpireAt: rot.PreviousExpireAt.UTC()}, nil
}

// sameSecretKind reports whether a secret of scheme old serves scheme new:
// a Standard Webhooks secret (whsec_) serves only that scheme.
func sameSecretKind(new, old string) bool {
	sw := hookrelay.InboundStandardWebhooks
	return (new == sw) == (old == sw) && old != "" && old != hookrelay.InboundNone
}
