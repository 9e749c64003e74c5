package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// Delivery returns delivery id with its attempts if a may act on it: the
// operator always, a merchant while the delivery's endpoint is its own and
// not deleted. A dead letter is also one the principal in ctx may see
// (scopedDeadLetters: an operator scoped to carriers sees those of its
// carriers' messages only).
func (s *Service) Delivery(ctx context.Context, a Actor, id int64) (db.Delivery, []db.Attempt, error) {
	d, attempts, err := s.db.DeliveryGet(ctx, id)
	if err != nil {
		return db.Delivery{}, nil, err
	}
	if a.limited() {
		if _, err := s.Endpoint(ctx, a, d.EndpointID); err != nil {
			return db.Delivery{}, nil, errDeliveryNotFound
		}
	}
	lim := scopedDeadLetters(ctx, db.DeadLetterFilter{})
	if d.State == db.DeliveryDead && (lim.MerchantIDs != nil || lim.CarrierIDs != nil) {
		dl, err := s.db.DeadLetterGet(ctx, d.ID)
		switch {
		case hookrelay.CodeOf(err) == hookrelay.ENOTFOUND:
			// Retried or discarded since: what DeliveryGet read stands.
		case err != nil:
			return db.Delivery{}, nil, err
		case !scopeHolds(lim, dl):
			return db.Delivery{}, nil, errDeliveryNotFound
		}
	}
	return d, attempts, nil
}

var errDeliveryNotFound = hookrelay.Errorf(hookrelay.ENOTFOUND, "delivery not found")

// RetryDelivery asks for delivery id to be attempted as soon as possible. A
// dead letter goes back into the queue (unordered: it does not hold back the
// newer deliveries of its key, which went on without it); a pending delivery
// waiting for its next attempt becomes due now, and one already due, in
// flight or held is left as it is (it is attempted as soon as it can be). A
// delivered one is a conflict.
func (s *Service) RetryDelivery(ctx context.Context, a Actor, id int64) (err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "delivery.retry", TargetType: targetDelivery, TargetID: audit.ID(id)}, err)
	}()
	d, _, err := s.Delivery(ctx, a, id)
	if err != nil {
		return err
	}
	switch d.State {
	case db.DeliveryDelivered:
		return hookrelay.Errorf(hookrelay.ECONFLICT, "delivery already delivered")
	case db.DeliveryDead:
		n, err := s.db.DeadLetterRetry(ctx, []int64{d.ID}, scopedDeadLetters(ctx, db.DeadLetterFilter{}))
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

// DeliveryPage is a page of an endpoint's deliveries in one state: Status
// is pending (also ""), delivered or dead; a page starts after the
// delivery At and ID where the previous one ended (zero: the first page);
// Limit bounds it.
type DeliveryPage struct {
	Status string
	At     time.Time
	ID     int64
	Limit  int
}

// Deliveries returns a page of endpoint ep's deliveries: pending ones by id,
// delivered and dead ones newest first. ep is as Endpoint returned it to
// the actor (who may see it, then).
func (s *Service) Deliveries(ctx context.Context, ep db.Endpoint, p DeliveryPage) ([]db.Delivery, error) {
	switch p.Status {
	case "", db.DeliveryPending:
		return s.db.DeliveryListPending(ctx, ep.ID, p.ID, p.Limit)
	case db.DeliveryDelivered:
		return s.db.DeliveryListDelivered(ctx, ep.ID, p.At, p.ID, p.Limit)
	case db.DeliveryDead:
		return s.db.DeliveryListDead(ctx, ep.ID, p.At, p.ID, p.Limit)
	}
	return nil, invalidf("status must be pending, delivered or dead")
}
