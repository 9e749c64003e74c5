package main

import (
	"context"
	"slices"
	"time"

	"github.com/hookrelay/hookrelay/ingest"
)

// startAPI wires the api role: the ingest server's routes on the shared
// router, its error handler (the one handler of the whole router) and its
// loop (group-commit batcher and configuration cache).
//
// Role settings (besides the common ones):
//   - HOOKRELAY_INGEST_BATCH_WAIT (default 2ms): how long a group-commit
//     batch stays open after its first callback.
//   - HOOKRELAY_INGEST_BATCH_ROWS (default 500): rows (messages + deliveries)
//     that close a batch at once.
//   - HOOKRELAY_INGEST_FLUSHERS (default 4): batches committing at once.
//   - HOOKRELAY_INGEST_CACHE_TTL (default 1s): how stale the carrier/endpoint
//     cache may be in other processes after a change.
//   - HOOKRELAY_INGEST_NOTIFY_INTERVAL (default 10ms): with HOOKRELAY_NOTIFY,
//     the pause between two announcements of stored callbacks (above 500
//     deliveries a second it doubles, up to 20 times).
func startAPI(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	env := s.cfg.env
	cfg := ingest.Config{
		Queues:              s.cfg.Queues,
		MaxBodyBytes:        s.cfg.MaxBodyBytes,
		OffloadBytes:        s.cfg.OffloadBytes,
		AllowPrivateTargets: s.cfg.AllowPrivateTargets,
		RequireHTTPS:        s.cfg.RequireHTTPS,
		CacheTTL:            env.duration("HOOKRELAY_INGEST_CACHE_TTL", time.Second, 100*time.Millisecond, time.Minute),
		Batcher: ingest.BatcherConfig{
			MaxWait:  env.duration("HOOKRELAY_INGEST_BATCH_WAIT", 2*time.Millisecond, 100*time.Microsecond, time.Second),
			MaxRows:  env.int("HOOKRELAY_INGEST_BATCH_ROWS", 500, 1, 10000),
			Flushers: env.int("HOOKRELAY_INGEST_FLUSHERS", 4, 1, 64),
		},
		// Dispatchers in other processes (and this one's, which ignores
		// it) hear of stored callbacks at once rather than at their next poll.
		Announce:         s.cfg.Notify,
		AnnounceInterval: env.duration("HOOKRELAY_INGEST_NOTIFY_INTERVAL", 10*time.Millisecond, 100*time.Microsecond, time.Second),
		AnnounceToken:    s.announceToken,
	}
	if slices.Contains(s.roles, "dispatch") {
		// The dispatcher of this process claims what the API stores at once
		// instead of after its idle pause (other processes hear of it by
		// NOTIFY, or poll).
		d := s.dispatcher()
		cfg.Batcher.OnStored = func(_ int, queues []int) { d.WakeQueues(queues) }
	}
	srv := ingest.New(s.logger, cfg, s.db, s.store, s.registry, s.operations())
	srv.Register(s.echo)
	return srv.Run, nil
}
