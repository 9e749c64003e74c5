package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// unreadableLogEvery is how often the warning about one endpoint whose
// secrets cannot be opened is logged again while it stays so (the claims
// that find its deliveries are not each logged).
const unreadableLogEvery = 10 * time.Minute

// markTimeout bounds the statement that records (or clears) an unreadable
// endpoint in its health row, run inline on the rare change of state.
const markTimeout = 5 * time.Second

// unreadableSet is the endpoints whose signing secret, a header value or
// credentials this dispatcher cannot open with the keys it holds: their
// deliveries are parked (released for HoldDelay without an attempt) and
// never wait for, nor hold up, another endpoint's. Its methods are called
// with the cache's mu held.
type unreadableSet struct {
	db     *db.DB
	logger *slog.Logger
	// stale is how long an endpoint stays counted without a delivery of it
	// claimed or a load of it: its parked deliveries come back every
	// HoldDelay, so one no longer seen was deleted (or lost its backlog).
	stale time.Duration
	m     map[int64]*unreadableEntry
}

// unreadableEntry is when an unreadable endpoint's warning was last logged
// and when it was last seen (loaded, or a delivery of it claimed).
type unreadableEntry struct {
	logged, seen time.Time
}

// note records what loading cfg found and returns the database change to
// make once the cache's mu is released (nil for none): record an endpoint
// found unreadable in its health row (and so report
// endpoint.secret_unreadable), or clear that record when it opens again
// (and so make its parked deliveries due).
func (s *unreadableSet) note(cfg db.EndpointConfig, now time.Time) func(ctx context.Context) {
	if cfg.Unreadable == "" {
		if _, was := s.m[cfg.ID]; was {
			delete(s.m, cfg.ID)
			s.logger.Info("endpoint secrets open again; its parked deliveries resume", "endpoint_id", cfg.ID)
		}
		if !cfg.UnreadableMarked {
			return nil
		}
		return func(ctx context.Context) { s.record(ctx, cfg, false) }
	}
	e := s.m[cfg.ID]
	if e == nil {
		e = &unreadableEntry{}
		s.m[cfg.ID] = e
	}
	e.seen = now
	if now.Sub(e.logged) >= unreadableLogEvery {
		e.logged = now
		s.logger.Warn("endpoint secrets cannot be opened with the keys this process holds; its deliveries are parked until they are replaced or the key is back",
			"endpoint_id", cfg.ID, "reason", cfg.Unreadable)
	}
	if cfg.UnreadableMarked {
		return nil
	}
	return func(ctx context.Context) { s.record(ctx, cfg, true) }
}

// parked reports whether endpoint id is in the set, and counts it as seen.
func (s *unreadableSet) parked(id int64, now time.Time) bool {
	e := s.m[id]
	if e == nil {
		return false
	}
	e.seen = now
	return true
}

// count returns how many endpoints are in the set, dropping those not seen
// for s.stale (the gauge hookrelay_endpoints_unreadable).
func (s *unreadableSet) count(now time.Time) int {
	for id, e := range s.m {
		if now.Sub(e.seen) >= s.stale {
			delete(s.m, id)
		}
	}
	return len(s.m)
}

// forget drops id from the set (the endpoint is gone).
func (s *unreadableSet) forget(id int64) { delete(s.m, id) }

// record marks (unreadable) or clears cfg's endpoint in its health row. A
// failure is only logged: the next load of the endpoint tries again.
func (s *unreadableSet) record(ctx context.Context, cfg db.EndpointConfig, unreadable bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	var err error
	if unreadable {
		_, err = s.db.EndpointUnreadableMark(ctx, cfg.ID, cfg.Unreadable)
	} else {
		_, err = s.db.EndpointUnreadableClear(ctx, cfg.ID)
	}
	if err != nil {
		s.logger.Warn("could not record whether the endpoint's secrets open", "endpoint_id", cfg.ID, "unreadable", unreadable, "error", err)
	}
}
