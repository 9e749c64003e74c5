package main

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/ops"
)

// startDispatch wires the dispatch role: a dispatcher that shares the
// logical queues with the other live dispatchers and delivers their rows.
//
// Role settings (besides HOOKRELAY_QUEUES, HOOKRELAY_LEASE,
// HOOKRELAY_ALLOW_PRIVATE_TARGETS and HOOKRELAY_NOTIFY, with which the
// dispatcher LISTENs for the APIs' announcements of stored callbacks):
//   - HOOKRELAY_DISPATCH_CONCURRENCY (default 256): deliveries in flight in
//     this process.
//   - HOOKRELAY_DISPATCH_BATCH (default 50): rows one claim takes.
//   - HOOKRELAY_DISPATCH_MAX_RATE (default 0, no cap): deliveries this
//     process claims per second at most.
//   - HOOKRELAY_DISPATCH_IDLE_POLL (default 200ms): longest pause between
//     claims when nothing is due.
//   - HOOKRELAY_DISPATCH_BUSY_POLL (default 5ms): pause after a claim that
//     found less than a full batch (longer: bigger batches, less CPU).
//   - HOOKRELAY_DISPATCH_CLAIM_LOOPS (default 2): claim loops sharing the
//     held queues.
//   - HOOKRELAY_DISPATCH_ACK_FLUSHERS (default 4): acknowledgement
//     transactions running at once.
//   - HOOKRELAY_DISPATCH_ACK_INTERVAL (default 10ms) and
//     HOOKRELAY_DISPATCH_ACK_BATCH (default 100): how long a result waits
//     and how many go in one acknowledgement transaction.
//   - HOOKRELAY_DISPATCH_DRAIN_TIMEOUT (default 10s): how long shutdown lets
//     deliveries in flight finish before releasing them.
func startDispatch(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	return s.dispatcher().Run, nil
}

// dispatcher returns the process's one dispatcher, built on first use. The
// dispatch role runs it; the test events of the operations (see
// service.operations) use its sender whether or not the role runs in this
// process.
func (s *service) dispatcher() *dispatch.Dispatcher {
	s.dispatchOnce.Do(func() { s.dispatch = newDispatcher(s) })
	return s.dispatch
}

// operations returns the process's one operations layer, used by the API and
// the dashboard alike; its test events are signed and sent by the
// dispatcher's sender exactly as deliveries are.
func (s *service) operations() *ops.Service {
	s.opsOnce.Do(func() { s.ops = ops.New(s.db, s.dispatcher()) })
	return s.ops
}

func newDispatcher(s *service) *dispatch.Dispatcher {
	env := s.cfg.env
	cfg := dispatch.Config{
		Queues:              s.cfg.Queues,
		Lease:               s.cfg.Lease,
		AllowPrivateTargets: s.cfg.AllowPrivateTargets,
		UserAgent:           "hookrelay/" + version,
		Concurrency:         env.int("HOOKRELAY_DISPATCH_CONCURRENCY", 256, 1, 100000),
		BatchSize:           env.int("HOOKRELAY_DISPATCH_BATCH", 50, 1, 1000),
		MaxRate:             float64(env.int("HOOKRELAY_DISPATCH_MAX_RATE", 0, 0, 10_000_000)),
		IdlePoll:            env.duration("HOOKRELAY_DISPATCH_IDLE_POLL", 200*time.Millisecond, time.Millisecond, 10*time.Second),
		BusyPoll:            env.duration("HOOKRELAY_DISPATCH_BUSY_POLL", 5*time.Millisecond, 100*time.Microsecond, 10*time.Second),
		ClaimLoops:          env.int("HOOKRELAY_DISPATCH_CLAIM_LOOPS", 2, 1, 64),
		AckFlushers:         env.int("HOOKRELAY_DISPATCH_ACK_FLUSHERS", 4, 1, 64),
		AckInterval:         env.duration("HOOKRELAY_DISPATCH_ACK_INTERVAL", 10*time.Millisecond, 100*time.Microsecond, time.Second),
		AckBatch:            env.int("HOOKRELAY_DISPATCH_ACK_BATCH", 100, 1, 10000),
		DrainTimeout:        env.duration("HOOKRELAY_DISPATCH_DRAIN_TIMEOUT", 10*time.Second, time.Millisecond, 10*time.Minute),
		Listen:              s.cfg.Notify,
		SelfToken:           s.announceToken,
	}
	return dispatch.New(s.logger, cfg, s.db, s.store, s.registry)
}
