package main

import (
	"context"
	"github.com/hookrelay/hookrelay/eventtype"

	"github.com/hookrelay/hookrelay/audit"
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
		cfg.Audit = s.auditLog()
		cfg.Payloads = s.store
		cfg.EventValidator = s.eventTypes()
		s.ops = ops.New(s.db, cfg)
	})
	return s.ops
}

// eventTypes returns the process's event type catalog: the API serves and
// runs it, ingest and the operations' tries and dry runs validate against it.
func (s *service) eventTypes() *eventtype.Catalog {
	s.eventTypesOnce.Do(func() {
		s.eventTypeCatalog = eventtype.NewCatalog(s.db, eventtype.Config{TTL: s.cfg.API.CacheTTL, Logger: s.logger})
	})
	return s.eventTypeCatalog
}

// auditLog returns the process's audit log, which the operations record
// into and the maintenance role prunes.
func (s *service) auditLog() *audit.Log {
	s.auditOnce.Do(func() { s.audit = audit.New(s.db, audit.Config{}) })
	return s.audit
}

func newDispatcher(s *service) *dispatch.Dispatcher {
	cfg := s.cfg.Dispatch
	cfg.UserAgent = "hookrelay/" + version
	cfg.SelfToken = s.announceToken
	cfg.Tracer = s.tracer
	return dispatch.New(s.logger, cfg, s.db, s.store, s.registry)
}
