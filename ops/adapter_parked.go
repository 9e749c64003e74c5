package ops

import (
	"context"
	"net/http"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ingest"
)

// MaxParkedPage bounds a page of parked callbacks, and the callbacks one
// unpark pass takes.
const MaxParkedPage = 1000

// ParkedCallbacks returns up to limit of the carrier's parked callbacks
// (its adapter failed on them and it parks such callbacks), oldest first,
// after the one at (afterAt, afterID). Operators only.
func (s *Service) ParkedCallbacks(ctx context.Context, carrierID int64, afterAt time.Time, afterID int64, limit int) ([]db.StoredCallback, error) {
	if limit < 1 || limit > MaxParkedPage+1 { // one more: whether a next page exists
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "limit must be 1 to %d", MaxParkedPage)
	}
	if _, err := s.db.CarrierGet(ctx, carrierID); err != nil {
		return nil, err
	}
	return s.db.MessageParkedList(ctx, carrierID, afterAt, afterID, limit)
}

// UnparkResult counts what an unpark pass did.
type UnparkResult struct {
	// Unparked callbacks now have their event, delivered to the canonical
	// endpoints they reach; Failed ones still fail (and stay parked).
	Unparked   int
	Failed     int
	Deliveries int
	// LastError is the error of the last callback that still failed.
	LastError string
}

// UnparkCallbacks runs the carrier's active adapter again over up to limit
// of its parked callbacks, oldest first (after the adapter was fixed and
// the fix activated). A callback it now makes an event of (or drops)
// leaves the parked list: its event is stored and delivered to the
// canonical endpoints it reaches, unordered (its ordering key's later
// callbacks went before it). One that still fails stays parked. Operators
// only.
func (s *Service) UnparkCallbacks(ctx context.Context, carrierID int64, limit int) (res UnparkResult, err error) {
	defer func() {
		err = s.record(ctx, audit.Entry{Action: "carrier.unpark", TargetType: targetCarrier, TargetID: audit.ID(carrierID),
			After: res}, err)
	}()
	if limit < 1 || limit > MaxParkedPage {
		return UnparkResult{}, hookrelay.Errorf(hookrelay.EINVALID, "limit must be 1 to %d", MaxParkedPage)
	}
	snap, err := s.routes.Refresh(ctx)
	if err != nil {
		return UnparkResult{}, err
	}
	car, ok := snap.CarrierByID(carrierID)
	if !ok {
		return UnparkResult{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "carrier not found")
	}
	if car.AdapterVersion == 0 {
		return UnparkResult{}, hookrelay.Errorf(hookrelay.EPRECONDITION, "the carrier has no active adapter")
	}
	car.AdapterOnFailure = db.AdapterRefuse // a failure is an error here
	// Those past retention go first: there is nothing left to unpark.
	if _, err := s.db.ParkedCallbackPurgeGone(ctx, carrierID); err != nil {
		return UnparkResult{}, err
	}
	msgs, err := s.db.MessageParkedList(ctx, carrierID, time.Time{}, 0, limit)
	if err != nil {
		return UnparkResult{}, err
	}
	var out UnparkResult
	for _, m := range msgs {
		body, err := s.storedBody(ctx, m)
		if err != nil {
			return out, err
		}
		r, err := ingest.Route(ctx, snap, car, ingest.Callback{Header: http.Header{}, Body: body, ReceivedAt: m.ReceivedAt})
		if hookrelay.HTTPStatus(err) >= 500 {
			return out, err
		}
		if err != nil {
			out.Failed++
			out.LastError = hookrelay.ErrorMessage(err)
			continue
		}
		n, ok, err := s.db.MessageUnpark(ctx, db.UnparkParams{ID: m.ID, ReceivedAt: m.ReceivedAt, AdapterVersion: r.Adapter.Version,
			CanonicalType: r.CanonicalType, CanonicalEvent: r.CanonicalEvent, EndpointIDs: r.CanonicalEndpointIDs})
		if err != nil {
			return out, err
		}
		if ok {
			out.Unparked++
			out.Deliveries += n
		}
	}
	return out, nil
}
