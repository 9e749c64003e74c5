package main

import (
	"context"
	"time"

	"github.com/hookrelay/hookrelay/db"
	"github.com/hookrelay/hookrelay/maintenance"
)

// startMaintenance wires the maintenance role: partitions and retention,
// hot-table VACUUM, the health and stat samplers. Every process with the role
// runs it; one at a time holds it (advisory lock), the others stand by.
func startMaintenance(ctx context.Context, s *service) (func(ctx context.Context) error, error) {
	p := s.cfg.env
	cfg := maintenance.Config{
		Retention:          s.cfg.Retention,
		PartitionsAhead:    p.int("HOOKRELAY_PARTITIONS_AHEAD", 3, 2, 60),
		RetentionInterval:  p.duration("HOOKRELAY_RETENTION_INTERVAL", time.Hour, time.Second, 24*time.Hour),
		VacuumInterval:     p.duration("HOOKRELAY_VACUUM_INTERVAL", 50*time.Millisecond, 10*time.Millisecond, time.Hour),
		VacuumMinGap:       p.duration("HOOKRELAY_VACUUM_MIN_GAP", 150*time.Millisecond, 50*time.Millisecond, time.Hour),
		VacuumChurnWindow:  p.duration("HOOKRELAY_VACUUM_CHURN_WINDOW", 2*time.Second, 100*time.Millisecond, time.Hour),
		VacuumDeadSpace:    float64(p.int("HOOKRELAY_VACUUM_DEAD_SPACE_PERMILLE", 50, 1, 500)) / 1000,
		VacuumMaxGap:       p.duration("HOOKRELAY_VACUUM_MAX_GAP", time.Second, 50*time.Millisecond, time.Hour),
		VacuumHeapBudget:   float64(p.int("HOOKRELAY_VACUUM_HEAP_BUDGET_PERCENT", 50, 1, 100)) / 100,
		VacuumFullGap:      p.duration("HOOKRELAY_VACUUM_FULL_GAP", 5*time.Second, 50*time.Millisecond, time.Hour),
		VacuumDeadTuples:   int64(p.int("HOOKRELAY_VACUUM_DEAD_TUPLES", 10_000, 100, 1<<30)),
		VacuumDeadRatio:    float64(p.int("HOOKRELAY_VACUUM_DEAD_PERCENT", 10, 1, 1000)) / 100,
		VacuumMinDead:      int64(p.int("HOOKRELAY_VACUUM_MIN_DEAD", 1_000, 1, 1<<30)),
		HistoryAnalyzeRows: int64(p.int("HOOKRELAY_HISTORY_ANALYZE_ROWS", 100_000, 1_000, 1<<30)),
		ReindexInterval:    p.duration("HOOKRELAY_REINDEX_INTERVAL", time.Minute, time.Second, 24*time.Hour),
		HealthInterval:     p.duration("HOOKRELAY_HEALTH_INTERVAL", 10*time.Second, 50*time.Millisecond, time.Hour),
		LongTransaction:    p.duration("HOOKRELAY_LONG_TRANSACTION", 5*time.Minute, 100*time.Millisecond, 24*time.Hour),
		StatInterval:       p.duration("HOOKRELAY_STAT_INTERVAL", 10*time.Second, 50*time.Millisecond, time.Hour),
		Queues:             s.cfg.Queues,
		LockRetry:          p.duration("HOOKRELAY_MAINTENANCE_LOCK_RETRY", 5*time.Second, 50*time.Millisecond, 5*time.Minute),
		Session: db.SessionConfig{
			StatementTimeout:         p.duration("HOOKRELAY_MAINTENANCE_STATEMENT_TIMEOUT", 10*time.Minute, time.Second, 24*time.Hour),
			LockTimeout:              p.duration("HOOKRELAY_MAINTENANCE_LOCK_TIMEOUT", 5*time.Second, 10*time.Millisecond, time.Hour),
			IdleInTransactionTimeout: s.cfg.IdleInTxTimeout,
		},
	}
	mt := maintenance.New(s.logger, cfg, s.db, s.store, s.registry)
	return mt.Run, nil
}
