package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// MaxDeadLetterIDs bounds how many dead letters one action names by id.
const MaxDeadLetterIDs = 10000

// MaxDisableReason bounds the length of the reason given for disabling.
const MaxDisableReason = 500

// DeadLetters selects dead letters: by IDs when IDs is not nil (an empty
// list selects none), else every one matching Filter (a zero Filter selects
// them all). Dead letters are the operator's: no merchant acts on them.
type DeadLetters struct {
	IDs    []int64
	Filter db.DeadLetterFilter
}

func (sel DeadLetters) check() error {
	if len(sel.IDs) > MaxDeadLetterIDs {
		return hookrelay.Errorf(hookrelay.EINVALID, "at most %d ids at once", MaxDeadLetterIDs)
	}
	return nil
}

// RetryDeadLetters puts the selected dead letters back into the queue,
// unordered and due now; those of deleted endpoints stay. It returns how
// many went back.
func (s *Service) RetryDeadLetters(ctx context.Context, sel DeadLetters) (int64, error) {
	if err := sel.check(); err != nil {
		return 0, err
	}
	return s.db.DeadLetterRetry(ctx, sel.IDs, sel.Filter)
}

// DiscardDeadLetters deletes the selected dead letters and returns how many.
func (s *Service) DiscardDeadLetters(ctx context.Context, sel DeadLetters) (int64, error) {
	if err := sel.check(); err != nil {
		return 0, err
	}
	return s.db.DeadLetterDiscard(ctx, sel.IDs, sel.Filter)
}

// RetryDelivery asks for delivery id to be attempted as soon as possible. A
// dead letter goes back into the queue (unordered: it does not hold back the
// newer deliveries of its key, which went on without it); a pending delivery
// waiting for its next attempt becomes due now, and one already due, in
// flight or held is left as it is (it is attempted as soon as it can be). A
// delivered one is a conflict.
func (s *Service) RetryDelivery(ctx context.Context, a Actor, id int64) error {
	d, _, err := s.Delivery(ctx, a, id)
	if err != nil {
		return err
	}
	switch d.State {
	case db.DeliveryDelivered:
		return hookrelay.Errorf(hookrelay.ECONFLICT, "delivery already delivered")
	case db.DeliveryDead:
		n, err := s.db.DeadLetterRetry(ctx, []int64{d.ID}, db.DeadLetterFilter{})
		if err != nil {
			return err
		}
		if n == 0 {
			return hookrelay.Errorf(hookrelay.ECONFLICT, "delivery changed state or its endpoint was deleted; reload it")
		}
		return nil
	default:
		_, err := s.db.DeliveryRetryPending(ctx, d.ID)
		return err
	}
}

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
func (s *Service) CanSendTest() bool { return s.pinger != nil }

// SendTest sends a signed test event to endpoint id (enabled or not) the way
// a delivery is sent, and reports the attempt; nothing is recorded and the
// endpoint's health is unchanged. The error is for a test that could not be
// made; an endpoint that failed it is a result with Success false.
func (s *Service) SendTest(ctx context.Context, a Actor, id int64) (hookrelay.PingResult, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return hookrelay.PingResult{}, err
	}
	if s.pinger == nil {
		return hookrelay.PingResult{}, hookrelay.Errorf(hookrelay.EUNAVAILABLE, "test events are not available in this process")
	}
	return s.pinger.PingEndpoint(ctx, ep.ID)
}
