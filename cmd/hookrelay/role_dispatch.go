package main

import (
	"context"

	"github.com/hookrelay/hookrelay/dispatch"
	"github.com/hookrelay/hookrelay/ingest"
)

// startDispatch wires the dispatch role: a dispatcher that shares the
// logical queues with the other live dispatchers and delivers their rows.
// Its settings are read by loadConfig (loadDispatch).
func startDispatch(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	return s.dispatcher().Run, nil
}

// dispatcher returns the process's one dispatcher, built on first use. The
// dispatch role runs it; the API's and the dashboard's endpoint test pings use
// its sender whether or not the role runs in this process.
func (s *service) dispatcher() *dispatch.Dispatcher {
	s.dispatchOnce.Do(func() { s.dispatch = newDispatcher(s) })
	return s.dispatch
}

func newDispatcher(s *service) *dispatch.Dispatcher {
	cfg := s.cfg.Dispatch
	cfg.UserAgent = "hookrelay/" + version
	cfg.SelfToken = s.announceToken
	return dispatch.New(s.logger, cfg, s.db, s.store, s.registry)
}

// pingAdapter serves ingest's test ping with the dispatcher's sender.
type pingAdapter struct{ d *dispatch.Dispatcher }

func (p pingAdapter) PingEndpoint(ctx context.Context, endpointID int64) (ingest.TestResult, error) {
	r, err := p.d.PingEndpoint(ctx, endpointID)
	if err != nil {
		return ingest.TestResult{}, err
	}
	return ingest.TestResult{
		StatusCode: r.StatusCode, LatencyMS: r.Latency.Milliseconds(), Error: r.Error,
		ResponseExcerpt: r.ResponseExcerpt, Success: r.Outcome == dispatch.OutcomeSuccess,
	}, nil
}
