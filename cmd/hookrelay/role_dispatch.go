package main

import (
	"context"

	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/ops"
)

// startDispatch wires the dispatch role: a dispatcher that shares the
// logical queues with the other live dispatchers and delivers their rows.
// Its settings are read by loadConfig (loadDispatch).
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
// the dashboard alike, with the endpoint URL policy of the configuration;
// its test events are signed and sent by the dispatcher's sender exactly as
// deliveries are.
func (s *service) operations() *ops.Service {
	s.opsOnce.Do(func() {
		cfg := s.cfg.Ops
		cfg.Pinger = s.dispatcher()
		cfg.Payloads = s.store
		s.ops = ops.New(s.db, cfg)
	})
	return s.ops
}

func newDispatcher(s *service) *dispatch.Dispatcher {
	cfg := s.cfg.Dispatch
	cfg.UserAgent = "hookrelay/" + version
	cfg.SelfToken = s.announceToken
	cfg.Tracer = s.tracer
	return dispatch.New(s.logger, cfg, s.db, s.store, s.registry)
}
