package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// Endpoint returns endpoint id if a may act on it. Another merchant's
// endpoint is "not found", never "forbidden", so ids cannot be probed.
func (s *Service) Endpoint(ctx context.Context, a Actor, id int64) (db.Endpoint, error) {
	ep, err := s.db.EndpointGet(ctx, id)
	if err != nil {
		return db.Endpoint{}, err
	}
	if !a.Owns(ep) {
		return db.Endpoint{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "endpoint not found")
	}
	return ep, nil
}

// NewEndpoint is an endpoint saved, with the new HMAC secret it got (shown
// once): on creation, and on an update that switched it to hmac. Secret is
// "" otherwise: an ed25519 key is never shown (Endpoint.PublicKey is).
type NewEndpoint struct {
	Endpoint db.Endpoint
	Secret   string
}

// shownSecret is secret as an answer may show it: an HMAC secret, never a
// private key.
func shownSecret(secret string) string {
	if hookrelay.PublicKeyOf(secret) != "" {
		return ""
	}
	return secret
}

// CreateEndpoint validates in and creates an enabled endpoint of merchant
// merchantID with a fresh signing secret or key pair. A merchant creates
// only its own (another merchant named is EFORBIDDEN); the operator names an
// existing merchant. A push endpoint (the default type) needs a URL; a
// poll endpoint has none.
func (s *Service) CreateEndpoint(ctx context.Context, a Actor, merchantID int64, in EndpointInput) (out NewEndpoint, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "endpoint.create", TargetType: targetEndpoint, TargetID: audit.ID(out.Endpoint.ID), After: out}, err)
	}()
	if !a.allowsMerchant(merchantID) {
		return NewEndpoint{}, hookrelay.Errorf(hookrelay.EFORBIDDEN, "merchant_id names another merchant")
	}
	if a.MerchantID == 0 {
		if _, err := s.db.MerchantGet(ctx, merchantID); err != nil {
			if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
				return NewEndpoint{}, fieldErrorf(fieldMerchantID, "merchant_id: no such merchant")
			}
			return NewEndpoint{}, err
		}
	}
	f := db.EndpointFields{Signature: hookrelay.SignatureHMAC}
	if err := applyType(in, &f); err != nil {
		return NewEndpoint{}, err
	}
	if f.Type == db.EndpointPoll {
		in.URL = nil
	}
	if err := s.ApplyEndpoint(ctx, in, &f); err != nil {
		return NewEndpoint{}, err
	}
	secret := hookrelay.NewSigningSecret(f.Signature)
	ep, err := s.db.EndpointCreate(ctx, merchantID, f, secret)
	if err != nil {
		return NewEndpoint{}, fmt.Errorf("create endpoint: %w", err)
	}
	return NewEndpoint{Endpoint: ep, Secret: shownSecret(secret)}, nil
}

// UpdateEndpoint validates in and applies it to endpoint id, if a may act
// on it; absent fields stay as they are (values this process cannot open
// included: replaceUnreadable). A change of signature scheme
// rotates in a new secret or key pair of the new scheme: the old one keeps
// signing beside it for db.SecretOverlap.
func (s *Service) UpdateEndpoint(ctx context.Context, a Actor, id int64, in EndpointInput) (out NewEndpoint, err error) {
	var before *db.Endpoint
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "endpoint.update", TargetType: targetEndpoint, TargetID: audit.ID(id), Before: before, After: out}, err)
	}()
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return NewEndpoint{}, err
	}
	before = &ep
	if in.Type != nil && *in.Type != ep.Type {
		return NewEndpoint{}, fieldErrorf(fieldType, "type cannot be changed: create another endpoint")
	}
	if ep.Type == db.EndpointPoll && in.URL != nil && *in.URL != "" {
		return NewEndpoint{}, fieldErrorf(fieldURL, "a poll endpoint has no url: its deliveries are fetched, not sent")
	}
	if ep.Type == db.EndpointPoll {
		in.URL = nil
	}
	f := db.EndpointFieldsOf(ep)
	if err := s.ApplyEndpoint(ctx, in, &f); err != nil {
		return NewEndpoint{}, err
	}
	if err := replaceUnreadable(ep.Unreadable, in, &f); err != nil {
		return NewEndpoint{}, err
	}
	var secret string
	if f.Signature != ep.Signature {
		secret = hookrelay.NewSigningSecret(f.Signature)
	}
	up, err := s.db.EndpointUpdate(ctx, ep.ID, f, secret)
	if err != nil {
		return NewEndpoint{}, err
	}
	if ep.Unreadable != nil && up.Unreadable == nil {
		s.resume(ctx, ep.ID)
	}
	return NewEndpoint{Endpoint: up, Secret: shownSecret(secret)}, nil
}

// Endpoints returns up to limit endpoints (not deleted) with ids above
// afterID, by id: a merchant's own, whatever merchantID says; for the
// operator those of merchantID (0: every merchant's).
func (s *Service) Endpoints(ctx context.Context, a Actor, merchantID, afterID int64, limit int) ([]db.Endpoint, error) {
	if a.MerchantID != 0 {
		merchantID = a.MerchantID
	}
	if len(a.Merchants) > 0 && merchantID == 0 {
		if len(a.Merchants) > 1 {
			return nil, errScopeMerchants
		}
		merchantID = a.Merchants[0]
	}
	if !a.allowsMerchant(merchantID) {
		return nil, nil
	}
	return s.db.EndpointList(ctx, merchantID, afterID, limit)
}

// MaxDisableReason bounds the length of the reason given for disabling.
const MaxDisableReason = 500

// Rotation is a new endpoint secret or key pair.
type Rotation struct {
	// Secret is the new HMAC secret ("" for an ed25519 key pair, whose
	// private key is never shown).
	Secret string
	// PublicKey is the new ed25519 key pair's "whpk_" public key ("" for
	// hmac).
	PublicKey string
	// PreviousExpireAt is when the secrets it replaces stop signing.
	PreviousExpireAt time.Time
}

// RotateSecret gives endpoint id a new Standard Webhooks secret, or key
// pair for an ed25519 endpoint; the previous ones keep signing beside it for
// db.SecretOverlap.
func (s *Service) RotateSecret(ctx context.Context, a Actor, id int64) (out Rotation, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "endpoint.rotate_secret", TargetType: targetEndpoint, TargetID: audit.ID(id), After: out}, err)
	}()
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return Rotation{}, err
	}
	secret := hookrelay.NewSigningSecret(ep.Signature)
	if err := s.db.EndpointSecretRotate(ctx, ep.ID, secret); err != nil {
		return Rotation{}, err
	}
	if ep.Unreadable != nil && ep.Unreadable.Secret {
		if now, err := s.db.EndpointGet(ctx, ep.ID); err == nil && now.Unreadable == nil {
			s.resume(ctx, ep.ID)
		}
	}
	return Rotation{Secret: shownSecret(secret), PublicKey: hookrelay.PublicKeyOf(secret),
		PreviousExpireAt: s.now().Add(db.SecretOverlap).UTC().Truncate(time.Second)}, nil
}

// EnableEndpoint enables endpoint id: its health is reset and its held
// deliveries become due.
func (s *Service) EnableEndpoint(ctx context.Context, a Actor, id int64) (after db.Endpoint, err error) {
	var before *db.Endpoint
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "endpoint.enable", TargetType: targetEndpoint, TargetID: audit.ID(id), Before: before, After: after}, err)
	}()
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return db.Endpoint{}, err
	}
	before = &ep
	return s.db.EndpointEnable(ctx, ep.ID)
}

// DisableEndpoint disables endpoint id for reason; its deliveries are held,
// not sent, until it is enabled.
func (s *Service) DisableEndpoint(ctx context.Context, a Actor, id int64, reason string) (after db.Endpoint, err error) {
	var before *db.Endpoint
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "endpoint.disable", TargetType: targetEndpoint, TargetID: audit.ID(id), Before: before, After: after}, err)
	}()
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return db.Endpoint{}, err
	}
	before = &ep
	if len(reason) > MaxDisableReason {
		return db.Endpoint{}, hookrelay.Errorf(hookrelay.EINVALID, "reason longer than %d characters", MaxDisableReason)
	}
	if err := hookrelay.CheckText("reason", reason, 0); err != nil {
		return db.Endpoint{}, err
	}
	return s.db.EndpointDisable(ctx, ep.ID, reason)
}

// DeleteEndpoint deletes endpoint id and its pending deliveries, and returns
// how many deliveries went with it.
func (s *Service) DeleteEndpoint(ctx context.Context, a Actor, id int64) (deleted int64, err error) {
	var before *db.Endpoint
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "endpoint.delete", TargetType: targetEndpoint, TargetID: audit.ID(id), Before: before,
			After: map[string]any{"deliveries_deleted": deleted}}, err)
	}()
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return 0, err
	}
	before = &ep
	return s.db.EndpointDelete(ctx, ep.ID)
}
