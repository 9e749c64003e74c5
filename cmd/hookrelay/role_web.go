package main

import (
	"context"
	"fmt"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/web"
)

// startWeb mounts the dashboard under /ui/ on the shared router. It has no
// loop of its own. Its settings are read by loadConfig.
func startWeb(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	replica, err := openReplica(ctx, s.cfg)
	if err != nil {
		return nil, err
	}
	var replicaStore web.ReplicaStore
	if replica != nil {
		replicaStore = replica
	}
	dash, err := web.New(ctx, web.Config{
		Replica:              replicaStore,
		Logger:               s.logger.With("role", "web"),
		Store:                s.db,
		Ops:                  s.operations(),
		Presigner:            s.store,
		Queues:               s.cfg.Web.Queues,
		SecureCookie:         s.cfg.Web.SecureCookie,
		PortalFrameAncestors: s.cfg.Web.PortalFrameAncestors,
		Throttle:             s.throttle,
		SSO:                  s.cfg.Web.SSO,
	})
	if err != nil {
		if replica != nil {
			replica.Close()
		}
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	dash.Mount(s.echo, "/ui", s.errs)
	if replica == nil {
		return nil, nil
	}
	return func(ctx context.Context) error {
		<-ctx.Done()
		replica.Close()
		return nil
	}, nil
}

// openReplica opens the read replica of HOOKRELAY_DATABASE_REPLICA_URL (nil
// when unset): a small pool with the primary's timeouts. It is not
// migrated (a standby follows its primary's schema) and nothing writes
// through it.
func openReplica(ctx context.Context, cfg config) (*db.DB, error) {
	if cfg.ReplicaURL == "" {
		return nil, nil
	}
	rc := cfg.DB
	rc.URL = cfg.ReplicaURL
	rc.AppName = "hookrelay-web-replica"
	rc.MaxConns, rc.MinConns = min(cfg.DB.MaxConns, 4), 1
	replica, err := db.Open(ctx, rc)
	if err != nil {
		return nil, fmt.Errorf("read replica (HOOKRELAY_DATABASE_REPLICA_URL): %w", err)
	}
	return replica, nil
}
