package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

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
func (s *Service) RotateSecret(ctx context.Context, a Actor, id int64) (Rotation, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return Rotation{}, err
	}
	secret := hookrelay.NewSigningSecret(ep.Signature)
	if err := s.db.EndpointSecretRotate(ctx, ep.ID, secret); err != nil {
		return Rotation{}, err
	}
	return Rotation{Secret: shownSecret(secret), PublicKey: hookrelay.PublicKeyOf(secret),
		PreviousExpireAt: s.now().Add(db.SecretOverlap).UTC().Truncate(time.Second)}, nil
}

// EnableEndpoint enables endpoint id: its health is reset and its held
// deliveries become due.
func (s *Service) EnableEndpoint(ctx context.Context, a Actor, id int64) (db.Endpoint, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return db.Endpoint{}, err
	}
	return s.db.EndpointEnable(ctx, ep.ID)
}

// DisableEndpoint disables endpoint id for reason; its deliveries are held,
// not sent, until it is enabled.
func (s *Service) DisableEndpoint(ctx context.Context, a Actor, id int64, reason string) (db.Endpoint, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return db.Endpoint{}, err
	}
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
func (s *Service) DeleteEndpoint(ctx context.Context, a Actor, id int64) (int64, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return 0, err
	}
	return s.db.EndpointDelete(ctx, ep.ID)
}

// CanSendTest reports whether SendTest has a sender.
func (s *Service) CanSendTest() bool { return s.cfg.Pinger != nil }

// SendTest sends a signed test event to endpoint id (enabled or not) the way
// a delivery is sent, and reports the attempt; nothing is recorded and the
// endpoint's health is unchanged. The error is for a test that could not be
// made; an endpoint that failed it is a result with Success false.
func (s *Service) SendTest(ctx context.Context, a Actor, id int64) (hookrelay.PingResult, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return hookrelay.PingResult{}, err
	}
	if s.cfg.Pinger == nil {
		return hookrelay.PingResult{}, hookrelay.Errorf(hookrelay.EUNAVAILABLE, "test events are not available in this process")
	}
	return s.cfg.Pinger.PingEndpoint(ctx, ep.ID)
}
