package main

import (
	"context"

	"github.com/hookrelay/hookrelay/maintenance"
)

// startMaintenance wires the maintenance role: partitions and retention,
// hot-table VACUUM, the health and stat samplers. Every process with the role
// runs it; one at a time holds it (advisory lock), the others stand by. Its
// settings are read by loadConfig (loadMaintenance).
func startMaintenance(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	cfg := s.cfg.Maintenance
	cfg.Audit = s.auditLog()
	mt := maintenance.New(s.logger, cfg, s.db, s.store, s.registry)
	return mt.Run, nil
}
