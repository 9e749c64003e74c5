// Package ops holds the operator and merchant actions: one implementation
// used by the API (package ingest) and the dashboard (package web), so the
// two cannot disagree about what an action does or who may take it.
package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// Actor is on whose behalf an action runs. The zero Actor is the operator
// (the admin token), who may act on every endpoint; an Actor with a
// MerchantID acts only on that merchant's endpoints and their deliveries.
type Actor struct {
	MerchantID int64
}

// Merchant returns the Actor of merchant id.
func Merchant(id int64) Actor { return Actor{MerchantID: id} }

// Owns reports whether a may act on ep.
func (a Actor) Owns(ep db.Endpoint) bool {
	return a.MerchantID == 0 || ep.MerchantID == a.MerchantID
}

// Pinger sends a signed test delivery to an endpoint, enabled or not, and
// reports what came of it (the dispatcher's sender: *dispatch.Dispatcher).
type Pinger interface {
	PingEndpoint(ctx context.Context, endpointID int64) (hookrelay.PingResult, error)
}

// Service carries out the actions on the database.
type Service struct {
	db     *db.DB
	pinger Pinger
	now    func() time.Time
}

// New returns the actions on store; test deliveries go through pinger, and
// answer hookrelay.EUNAVAILABLE when it is nil.
func New(store *db.DB, pinger Pinger) *Service {
	return &Service{db: store, pinger: pinger, now: time.Now}
}

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

// Delivery returns delivery id with its attempts if a may act on it: the
// operator always, a merchant while the delivery's endpoint is its own and
// not deleted.
func (s *Service) Delivery(ctx context.Context, a Actor, id int64) (db.Delivery, []db.Attempt, error) {
	d, attempts, err := s.db.DeliveryGet(ctx, id)
	if err != nil {
		return db.Delivery{}, nil, err
	}
	if a.MerchantID != 0 {
		if _, err := s.Endpoint(ctx, a, d.EndpointID); err != nil {
			return db.Delivery{}, nil, hookrelay.Errorf(hookrelay.ENOTFOUND, "delivery not found")
		}
	}
	return d, attempts, nil
}
