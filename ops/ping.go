package ops

import (
	"context"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// A ping is a test delivery: a signed {"type":"ping"} sent to an endpoint
// the way a delivery is, recorded nowhere (POST /v1/endpoints/{id}/test, the
// portal's "Send a test event").

// Pinger sends a ping to an endpoint, enabled or not, and reports what came
// of it (the dispatcher's sender: *dispatch.Dispatcher).
type Pinger interface {
	Ping(ctx context.Context, endpointID int64) (hookrelay.PingResult, error)
}

// CanPing reports whether Ping has a sender (Config.Pinger).
func (s *Service) CanPing() bool { return s.cfg.Pinger != nil }

// Ping sends a ping to endpoint id (enabled or not) the way a delivery is
// sent, and reports the attempt; nothing is recorded and the endpoint's
// health is unchanged. The error is for a ping that could not be made; an
// endpoint that failed it is a result with Success false.
func (s *Service) Ping(ctx context.Context, a Actor, id int64) (out hookrelay.PingResult, err error) {
	defer func() {
		err = s.record(ctx, audit.Entry{Action: "endpoint.ping", TargetType: targetEndpoint, TargetID: audit.ID(id)}, err)
	}()
	ep, err := s.Endpoint(ctx, a, id)
	if err != nil {
		return hookrelay.PingResult{}, err
	}
	if ep.Type == db.EndpointPoll {
		return hookrelay.PingResult{}, hookrelay.Errorf(hookrelay.ECONFLICT,
			"endpoint %d is a poll endpoint: nothing is sent to it (fetch its events with GET /v1/endpoints/%d/events)", ep.ID, ep.ID)
	}
	if s.cfg.Pinger == nil {
		return hookrelay.PingResult{}, hookrelay.Errorf(hookrelay.EUNAVAILABLE, "test events are not available in this process")
	}
	return s.cfg.Pinger.Ping(ctx, ep.ID)
}
