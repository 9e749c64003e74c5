package main

import (
	"context"
	"fmt"

	"github.com/hookrelay/hookrelay/ingest"
	"github.com/hookrelay/hookrelay/web"
)

// startWeb mounts the dashboard under /ui/ on the shared router. It has no
// loop of its own. Its settings are read by loadConfig.
func startWeb(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	dash, err := web.New(ctx, web.Config{
		Logger:               s.logger.With("role", "web"),
		Store:                s.db,
		Ops:                  s.operations(),
		Presigner:            s.store,
		Queues:               s.cfg.Web.Queues,
		SecureCookie:         s.cfg.Web.SecureCookie,
		PortalFrameAncestors: s.cfg.Web.PortalFrameAncestors,
		Throttle:             s.throttle,
		CheckURL: func(ctx context.Context, raw string) (string, error) {
			return ingest.CheckURL(ctx, ingest.URLRule{AllowPrivateTargets: s.cfg.Ingest.AllowPrivateTargets, RequireHTTPS: s.cfg.Ingest.RequireHTTPS}, raw)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	dash.Mount(s.echo, "/ui", s.errs)
	return nil, nil
}
