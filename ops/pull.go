package ops

import (
	"context"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db"
)

// Bounds of a pull (GET /v1/endpoints/{id}/events).
const (
	// DefaultPullLimit is the events a pull returns when it names no limit.
	DefaultPullLimit = 100
	// MaxPullLimit is the most events one pull returns.
	MaxPullLimit = 500
	// pullLagCap bounds the count of a poll endpoint's pending deliveries
	// (PullLag): counting is an index range scan of at most this many.
	pullLagCap = 100000
)

const fieldType = "type"

// PollEndpoint returns poll endpoint id if a may act on it: another
// merchant's is "not found", a push endpoint is EINVALID (it has no events
// to fetch).
func (s *Service) PollEndpoint(ctx context.Context, a Actor, id int64) (db.Endpoint, error) {
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return db.Endpoint{}, err
	}
	if ep.Type != db.EndpointPoll {
		return db.Endpoint{}, hookrelay.Errorf(hookrelay.EINVALID,
			`endpoint %d is a push endpoint: its deliveries are sent to its URL, not fetched (create an endpoint with "type": "poll")`, ep.ID)
	}
	return ep, nil
}

// Pull serves up to limit (1 to MaxPullLimit) of poll endpoint id's pending
// deliveries not covered by after, in the endpoint's delivery order (see
// db.DB.DeliveryPull), if a may act on it. It returns the endpoint too (the
// caller signs the events with its secrets).
func (s *Service) Pull(ctx context.Context, a Actor, id int64, after db.PullPosition, limit int) (db.Endpoint, []db.PulledDelivery, error) {
	if limit < 1 || limit > MaxPullLimit {
		return db.Endpoint{}, nil, hookrelay.Errorf(hookrelay.EINVALID, "limit must be between 1 and %d", MaxPullLimit)
	}
	ep, err := s.PollEndpoint(ctx, a, id)
	if err != nil {
		return db.Endpoint{}, nil, err
	}
	if ep.Status != db.EndpointEnabled {
		return db.Endpoint{}, nil, hookrelay.Errorf(hookrelay.ECONFLICT,
			"endpoint %d is disabled: its deliveries are held until it is enabled", ep.ID)
	}
	rows, err := s.db.DeliveryPull(ctx, ep.ID, after, limit)
	return ep, rows, err
}

// AckPull acknowledges every delivery of poll endpoint id that position at
// covers (served at or before it), if a may act on it: they leave the
// queue as delivered. It returns how many did.
func (s *Service) AckPull(ctx context.Context, a Actor, id int64, at db.PullPosition) (int64, error) {
	ep, err := s.PollEndpoint(ctx, a, id)
	if err != nil {
		return 0, err
	}
	return s.db.DeliveryPullAck(ctx, ep.ID, at)
}

// PullLag returns the lag of the given endpoints (the caller lists those a
// may see): pending deliveries (counted up to 100,000) and the oldest.
func (s *Service) PullLag(ctx context.Context, ids []int64) (map[int64]db.PullLag, error) {
	out := map[int64]db.PullLag{}
	if len(ids) == 0 {
		return out, nil
	}
	lags, err := s.db.DeliveryPullLag(ctx, ids, pullLagCap)
	if err != nil {
		return nil, err
	}
	for _, l := range lags {
		out[l.EndpointID] = l
	}
	return out, nil
}

// applyType checks the endpoint type of a creation: "push" (default) needs
// a URL, "poll" takes none.
func applyType(in EndpointInput, f *db.EndpointFields) error {
	f.Type = db.EndpointPush
	if in.Type != nil {
		switch *in.Type {
		case db.EndpointPush, db.EndpointPoll:
			f.Type = *in.Type
		default:
			return fieldErrorf(fieldType, `type must be "push" (deliveries sent to url) or "poll" (fetched with GET /v1/endpoints/{id}/events)`)
		}
	}
	if f.Type == db.EndpointPoll {
		if in.URL != nil && *in.URL != "" {
			return fieldErrorf(fieldURL, "a poll endpoint has no url: its deliveries are fetched, not sent")
		}
		return nil
	}
	if in.URL == nil {
		return fieldErrorf(fieldURL, "url is required")
	}
	return nil
}
