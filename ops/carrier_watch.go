package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ingest"
)

// RefusalRetention is how long the refusal log is kept (at most
// HOOKRELAY_RETENTION): the maintenance role drops its day tables after
// it (maintenance.Config.RefusalRetention).
const RefusalRetention = 7 * 24 * time.Hour

// RefusalQuery selects a carrier's refusals, newest first.
type RefusalQuery struct {
	CarrierID int64
	// Reason is one of hookrelay.Reasons, or "" for all.
	Reason hookrelay.Reason
	// Since and Until bound the time received ([Since, Until)); zero
	// values mean the retention window and now.
	Since, Until time.Time
	// BeforeAt and BeforeID continue a page below that refusal.
	BeforeAt time.Time
	BeforeID int64
	Limit    int
}

// watchedCarrier returns the carrier of id and the routes' snapshot it is
// in, or hookrelay.ENOTFOUND: for what reads the carrier as the intake does
// (TryCallback). An existence check alone reads the store (Carrier).
func (s *Service) watchedCarrier(ctx context.Context, id int64) (db.Carrier, *ingest.Snapshot, error) {
	snap, err := s.routes.Snapshot(ctx)
	if err != nil {
		return db.Carrier{}, nil, err
	}
	c, ok := snap.CarrierByID(id)
	if !ok {
		// Created a moment ago, maybe in another process.
		if snap, err = s.routes.Refresh(ctx); err != nil {
			return db.Carrier{}, nil, err
		}
		if c, ok = snap.CarrierByID(id); !ok {
			return db.Carrier{}, nil, hookrelay.Errorf(hookrelay.ENOTFOUND, "carrier not found")
		}
	}
	return c, snap, nil
}

// CarrierRefusals returns the refusals of q from the refusal log. Operators
// only.
func (s *Service) CarrierRefusals(ctx context.Context, q RefusalQuery) ([]db.CarrierRefusal, error) {
	if _, err := s.Carrier(ctx, q.CarrierID); err != nil {
		return nil, err
	}
	if q.Reason != "" && !hookrelay.ValidReason(q.Reason) {
		return nil, invalidf("reason must be one of the refusal reasons (docs/api.md), such as %q", hookrelay.ReasonParse)
	}
	now := s.now()
	if q.Until.IsZero() {
		q.Until = now.Add(time.Minute) // a clock a little ahead in another process
	}
	if q.Since.IsZero() {
		q.Since = now.Add(-RefusalRetention)
	}
	if !q.Since.Before(q.Until) {
		return nil, invalidf("since must be before until")
	}
	if q.BeforeAt.IsZero() {
		q.BeforeAt, q.BeforeID = q.Until, 0
	}
	return s.db.CarrierRefusals(ctx, db.CarrierRefusalFilter{
		CarrierID: q.CarrierID, Reason: string(q.Reason), Since: q.Since, Until: q.Until,
		BeforeAt: q.BeforeAt, BeforeID: q.BeforeID, Limit: q.Limit,
	})
}
