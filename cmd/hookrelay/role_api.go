package main

import (
	"context"
	"slices"

	"github.com/hookrelay/hookrelay/api"
)

// startAPI wires the api role: the API server's routes on the shared
// router and its loop (group-commit batcher and configuration cache). Its
// settings are read by loadConfig (loadAPI).
func startAPI(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	cfg := s.cfg.API
	cfg.AnnounceToken = s.announceToken
	cfg.Throttle = s.throttle
	cfg.Tracer = s.tracer
	if slices.Contains(s.roles, "dispatch") {
		// The dispatcher of this process claims what the API stores at once
		// instead of after its idle pause (other processes hear of it by
		// NOTIFY, or poll).
		d := s.dispatcher()
		cfg.Batcher.OnStored = d.Stored
	}
	cfg.EventTypes = s.eventTypes()
	srv := api.New(s.logger, cfg, s.db, s.store, s.registry, s.operations())
	srv.Register(s.echo)
	return srv.Run, nil
}
