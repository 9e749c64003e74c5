package ops

import (
	"context"
	"net/http"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/ingest"
)

// maxTryEndpoints bounds the endpoints a tried sample names (the count is
// whole).
const maxTryEndpoints = 100

// Sample is a callback to try: the headers and body a carrier would send.
type Sample struct {
	Header http.Header
	Body   []byte
}

// TryResult is what the intake would do with a sample: its routing values
// and the endpoints it would reach, or its refusal.
type TryResult struct {
	// Refusal is why it would be refused; nil when it would be taken.
	Refusal *TryRefusal
	// The routing values, the logical queue and the endpoints it would go
	// to (after their carrier, event type, merchant and content filters),
	// when taken. EndpointCount counts them all; Endpoints names the first
	// maxTryEndpoints.
	OrderingKey   string
	EventType     string
	MerchantRef   string
	Queue         int
	EndpointCount int
	Endpoints     []db.Endpoint
	// AdapterVersion is the carrier's active adapter version that ran (0:
	// none); CanonicalType and CanonicalEvent the event it made (the body
	// canonical endpoints would receive), Dropped whether it made none,
	// Parked its error when the carrier parks such callbacks.
	AdapterVersion int
	CanonicalType  string
	CanonicalEvent []byte
	Dropped        bool
	Parked         string
}

// TryRefusal is a refusal as the carrier would get it.
type TryRefusal struct {
	Reason  hookrelay.Reason
	Status  int
	Message string
}

// TryCallback answers what a callback of the carrier with this sample's
// headers and body would become, with the rules of the intake itself
// (ingest.Route): its routing values and the endpoints it would reach, or
// its refusal. The key, the signature, the size and the rate are not
// checked: the sample is not the carrier's request. It stores and delivers
// nothing. Operators only.
func (s *Service) TryCallback(ctx context.Context, carrierID int64, sample Sample) (TryResult, error) {
	// The configuration as it is now: an endpoint made a moment ago counts.
	if _, err := s.routes.Refresh(ctx); err != nil {
		return TryResult{}, err
	}
	car, snap, err := s.watchedCarrier(ctx, carrierID)
	if err != nil {
		return TryResult{}, err
	}
	if sample.Header == nil {
		sample.Header = http.Header{}
	}
	refused := func(err error) (TryResult, error) {
		return TryResult{Refusal: &TryRefusal{
			Reason: hookrelay.ReasonOf(err), Status: hookrelay.HTTPStatus(err), Message: hookrelay.ErrorMessage(err),
		}}, nil
	}
	if err := hookrelay.CheckText("Idempotency-Key", sample.Header.Get("Idempotency-Key"), ingest.MaxIdempotencyKey); err != nil {
		return refused(hookrelay.WithReason(err, hookrelay.ReasonInvalidField))
	}
	r, err := ingest.Route(ctx, snap, car, ingest.Callback{Header: sample.Header, Body: sample.Body})
	if err != nil {
		if hookrelay.HTTPStatus(err) >= 500 {
			return TryResult{}, err
		}
		return refused(err)
	}
	out := TryResult{
		OrderingKey: r.OrderingKey, EventType: r.EventType, MerchantRef: r.MerchantRef,
		Queue: hookrelay.QueueFor(r.OrderingKey, s.cfg.Queues), EndpointCount: len(r.EndpointIDs),
		AdapterVersion: r.Adapter.Version, Dropped: r.Adapter.Dropped, Parked: r.Parked,
		CanonicalType: r.CanonicalType, CanonicalEvent: r.CanonicalEvent,
	}
	for _, id := range r.EndpointIDs[:min(len(r.EndpointIDs), maxTryEndpoints)] {
		ep, err := s.db.EndpointGet(ctx, id)
		if hookrelay.CodeOf(err) == hookrelay.ENOTFOUND {
			continue // deleted since the snapshot
		}
		if err != nil {
			return TryResult{}, err
		}
		out.Endpoints = append(out.Endpoints, ep)
	}
	return out, nil
}
