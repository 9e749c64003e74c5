package ops

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/audit"
	"github.com/hookrelay/hookrelay/db"
)

// MaxReplayWindow bounds the window of one replay: history is kept for days
// (HOOKRELAY_RETENTION), and a wider window would only read empty days.
const MaxReplayWindow = 31 * 24 * time.Hour

// maxOrderingKey is the longest ordering key a callback may carry (package
// (ingest.MaxRoutingValue).
const maxOrderingKey = 1024

// replayCountChunk is how many source rows one statement of the count at
// creation reads.
const replayCountChunk = 20_000

// ReplayRequest is what to re-deliver to an endpoint: its past deliveries in
// [Since, Until) of Status (db.ReplayDelivered, db.ReplayFailed or
// db.ReplayAll), of OrderingKey only when it is not empty.
type ReplayRequest struct {
	Since       time.Time
	Until       time.Time
	Status      string
	OrderingKey string
}

// StartReplay checks req, counts what it covers and stores a running replay
// of endpoint id for the replay runner (maintenance.ReplayRunner) to carry
// out. An Until after now is taken as now: the replay covers what had
// happened when it was asked for, never its own re-deliveries.
func (s *Service) StartReplay(ctx context.Context, a Actor, endpointID int64, req ReplayRequest) (out db.Replay, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "replay.start", TargetType: targetEndpoint, TargetID: audit.ID(endpointID),
			After: map[string]any{"request": req, "replay": out}}, err)
	}()
	sp, err := s.replaySpec(ctx, a, endpointID, req)
	if err != nil {
		return db.Replay{}, err
	}
	total, err := s.db.ReplayCount(ctx, sp, replayCountChunk)
	if err != nil {
		return db.Replay{}, err
	}
	return s.db.ReplayCreate(ctx, sp, total)
}

// CountReplay checks req as StartReplay does and returns how many
// deliveries the replay would re-deliver if it started now, without starting
// it (the dashboard's confirmation).
func (s *Service) CountReplay(ctx context.Context, a Actor, endpointID int64, req ReplayRequest) (int64, error) {
	sp, err := s.replaySpec(ctx, a, endpointID, req)
	if err != nil {
		return 0, err
	}
	return s.db.ReplayCount(ctx, sp, replayCountChunk)
}

// replaySpec checks req against endpoint id as a sees it and returns what
// the replay covers, Until capped at now.
func (s *Service) replaySpec(ctx context.Context, a Actor, endpointID int64, req ReplayRequest) (db.ReplaySpec, error) {
	ep, err := s.Endpoint(ctx, a, endpointID)
	if err != nil {
		return db.ReplaySpec{}, err
	}
	switch req.Status {
	case db.ReplayDelivered, db.ReplayFailed, db.ReplayAll:
	default:
		return db.ReplaySpec{}, hookrelay.Errorf(hookrelay.EINVALID, "status must be delivered, failed or all")
	}
	if req.Since.IsZero() || req.Until.IsZero() {
		return db.ReplaySpec{}, hookrelay.Errorf(hookrelay.EINVALID, "since and until are required")
	}
	now := s.now()
	if req.Until.After(now) {
		req.Until = now
	}
	if !req.Since.Before(req.Until) {
		return db.ReplaySpec{}, hookrelay.Errorf(hookrelay.EINVALID, "since must be before until (and before now)")
	}
	if req.Until.Sub(req.Since) > MaxReplayWindow {
		return db.ReplaySpec{}, hookrelay.Errorf(hookrelay.EINVALID, "the window is longer than %s", MaxReplayWindow)
	}
	if err := hookrelay.CheckOrderingKey("ordering_key", req.OrderingKey, maxOrderingKey); err != nil {
		return db.ReplaySpec{}, err
	}
	return db.ReplaySpec{EndpointID: ep.ID, Status: req.Status, OrderingKey: req.OrderingKey,
		Since: req.Since.UTC(), Until: req.Until.UTC()}, nil
}

// Replay returns replay id if a may see it: the operator always, a merchant
// when the replay's endpoint is its own.
func (s *Service) Replay(ctx context.Context, a Actor, id int64) (db.Replay, error) {
	rp, err := s.db.ReplayGet(ctx, id)
	if err != nil {
		return db.Replay{}, err
	}
	if a.limited() {
		if _, err := s.Endpoint(ctx, a, rp.EndpointID); err != nil {
			return db.Replay{}, hookrelay.Errorf(hookrelay.ENOTFOUND, "replay not found")
		}
	}
	return rp, nil
}

// EndpointReplays returns the latest limit replays of endpoint id, newest
// first, if a may see the endpoint.
func (s *Service) EndpointReplays(ctx context.Context, a Actor, endpointID int64, limit int) ([]db.Replay, error) {
	ep, err := s.Endpoint(ctx, a, endpointID)
	if err != nil {
		return nil, err
	}
	return s.db.ReplayListByEndpoint(ctx, ep.ID, limit)
}

// CancelReplay stops replay id: no batch starts after it returns (the
// deliveries already queued, at most about a batch not yet sent, go out).
// Cancelling a cancelled replay changes nothing; a finished one is a
// conflict.
func (s *Service) CancelReplay(ctx context.Context, a Actor, id int64) (out db.Replay, err error) {
	ctx, done := s.unit(ctx)
	defer func() {
		err = done(audit.Entry{Action: "replay.cancel", TargetType: targetReplay, TargetID: audit.ID(id), After: out}, err)
	}()
	if _, err := s.Replay(ctx, a, id); err != nil {
		return db.Replay{}, err
	}
	rp, _, err := s.db.ReplayCancel(ctx, id)
	if err != nil {
		return db.Replay{}, err
	}
	if rp.State == db.ReplayFinished {
		return rp, hookrelay.Errorf(hookrelay.ECONFLICT, "replay already finished")
	}
	return rp, nil
}
