package api

import (
	"context"
	"time"
)

// watchConfig reloads the cache as soon as another process announces a
// configuration change (db.ListenConfig) until ctx ends, so fan-out and key
// checks follow a change made elsewhere within a notification's latency
// rather than the TTL. A lost session is opened again after a pause
// (doubling up to 30 s); the cache is reloaded then too, since changes made
// while it was away were not announced to it, and the TTL refresh goes on
// regardless.
func (s *Server) watchConfig(ctx context.Context) {
	const first = 500 * time.Millisecond
	pause := first
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		l, err := s.db.ListenConfig(ctx, "hookrelay-api-config")
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.logger.Warn("LISTEN for configuration changes failed; the cache follows them by its TTL until it is back", "error", err, "retry", pause)
			retry.Reset(pause)
			pause = min(2*pause, 30*time.Second)
			continue
		}
		pause = first
		_, _ = s.cache.refresh(ctx)
		for {
			if _, err = l.Wait(ctx); err != nil {
				break
			}
			_, _ = s.cache.refresh(ctx)
		}
		l.Close()
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("LISTEN session for configuration changes lost", "error", err, "retry", pause)
		retry.Reset(pause)
	}
}
