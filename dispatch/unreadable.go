package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
// never wait for, nor hold up, another endpoint's.
type unreadableSet struct {
	db     *db.DB
	logger *slog.Logger
	gauge  prometheus.Gauge
	// m holds, per endpoint, when its warning was last logged; guarded by
	// the cache's mu.
	m map[int64]time.Time
}

// note records what loading cfg found, with the cache's mu held by the
// caller for the set, and returns the database change to make once mu is
// released (nil for none): record an endpoint found unreadable in its
// health row (and so report endpoint.secret_unreadable), or clear that
// record when it opens again (and so make its parked deliveries due).
func (s *unreadableSet) note(cfg db.EndpointConfig, now time.Time) func(ctx context.Context) {
	if cfg.Unreadable == "" {
		_, was := s.m[cfg.ID]
		delete(s.m, cfg.ID)
		s.gauge.Set(float64(len(s.m)))
		if !was && !cfg.UnreadableMarked {
			return nil
		}
		if was {
			s.logger.Info("endpoint secrets open again; its parked deliveries resume", "endpoint_id", cfg.ID)
		}
		if !cfg.UnreadableMarked {
			return nil
		}
		return func(ctx context.Context) { s.record(ctx, cfg, false) }
	}
	last, was := s.m[cfg.ID]
	if !was || now.Sub(last) >= unreadableLogEvery {
		s.m[cfg.ID] = now
		s.logger.Warn("endpoint secrets cannot be opened with the keys this process holds; its deliveries are parked until they are replaced or the key is back",
			"endpoint_id", cfg.ID, "reason", cfg.Unreadable)
	}
	s.gauge.Set(float64(len(s.m)))
	if cfg.UnreadableMarked {
		return nil
	}
	return func(ctx context.Context) { s.record(ctx, cfg, true) }
}

// forget drops id from the set (the endpoint is gone); mu held.
func (s *unreadableSet) forget(id int64) {
	if _, ok := s.m[id]; ok {
		delete(s.m, id)
		s.gauge.Set(float64(len(s.m)))
	}
}

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
