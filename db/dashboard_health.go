package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TableHealth is the size and vacuum state of one table.
type TableHealth struct {
	Name           string
	TotalBytes     int64 // with indexes and TOAST
	Live, Dead     int64 // tuples, from the statistics collector
	LastAutovacuum *time.Time
	LastVacuum     *time.Time
	LastAnalyze    *time.Time // last autoanalyze
}

// DeadRatio is dead / (live + dead), 0 when empty.
func (t TableHealth) DeadRatio() float64 {
	if t.Live+t.Dead == 0 {
		return 0
	}
	return float64(t.Dead) / float64(t.Live+t.Dead)
}

// PartitionHealth is one day partition of a history table.
type PartitionHealth struct {
	Parent     string
	Name       string
	TotalBytes int64
	EstRows    int64 // planner estimate
}

// OldestTransaction describes the oldest open transaction of the cluster.
type OldestTransaction struct {
	PID             int
	Database        string
	ApplicationName string
	State           string
	Started         time.Time
}

// DashboardHealth is the database health page.
type DashboardHealth struct {
	Tables      []TableHealth
	Partitions  []PartitionHealth
	Oldest      *OldestTransaction // nil: no open transaction besides ours
	Connections int64              // client backends in the cluster
	MaxConns    int64              // max_connections
	PoolInUse   int32              // this process's pool: acquired connections
	PoolMax     int32
}

// DashboardHealth reads table sizes, vacuum state, partitions, the oldest
// open transaction and connection usage.
func (db *DB) DashboardHealth(ctx context.Context) (DashboardHealth, error) {
	var h DashboardHealth
	tables, err := db.q.DashboardTableStats(ctx)
	if err != nil {
		return h, fmt.Errorf("table stats: %w", unavailable(err))
	}
	for _, t := range tables {
		h.Tables = append(h.Tables, TableHealth{
			Name: t.Name, TotalBytes: t.TotalBytes, Live: t.Live, Dead: t.Dead,
			LastAutovacuum: t.LastAutovacuum, LastVacuum: t.LastVacuum, LastAnalyze: t.LastAutoanalyze,
		})
	}
	parts, err := db.q.DashboardPartitions(ctx)
	if err != nil {
		return h, fmt.Errorf("partitions: %w", unavailable(err))
	}
	for _, p := range parts {
		h.Partitions = append(h.Partitions, PartitionHealth{Parent: p.Parent, Name: p.Name, TotalBytes: p.TotalBytes, EstRows: p.EstRows})
	}
	old, err := db.q.DashboardOldestTransaction(ctx)
	switch {
	case err == nil && old.XactStart != nil:
		h.Oldest = &OldestTransaction{PID: int(old.Pid), Database: old.Datname, ApplicationName: old.ApplicationName,
			State: old.State, Started: *old.XactStart}
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return h, fmt.Errorf("oldest transaction: %w", unavailable(err))
	}
	conns, err := db.q.DashboardConnections(ctx)
	if err != nil {
		return h, fmt.Errorf("connections: %w", unavailable(err))
	}
	h.Connections, h.MaxConns = conns.Used, conns.MaxConns
	h.PoolInUse, _, h.PoolMax = db.PoolStats()
	return h, nil
}
