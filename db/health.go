package db

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// HotTables are the tables that churn: rows are updated and deleted all the
// time, so dead tuples pile up unless vacuum keeps pace.
var HotTables = []string{"deliveries", "endpoint_health", "queue_leases", "dispatchers"}

// HealthOptions tunes HealthSnapshotWith.
type HealthOptions struct {
	// LongTransaction is the age from which a transaction counts as long.
	// Default 5m.
	LongTransaction time.Duration
}

// Health is a snapshot of table and cluster health, for /metrics and the
// dashboard's database page.
type Health struct {
	TakenAt time.Time     `json:"taken_at"`
	Tables  []HealthTable `json:"tables"` // the hot tables
	// Autovacuum is the server's autovacuum setting. Off, nothing vacuums
	// or analyzes the history partitions or freezes their rows (the
	// maintenance role vacuums only the hot tables): a server that must
	// not run that way.
	Autovacuum bool `json:"autovacuum"`
	// Connections is the number of client sessions in the cluster;
	// MaxConnections the server's limit.
	Connections    int `json:"connections"`
	MaxConnections int `json:"max_connections"`
	// IdleInTransaction counts sessions idle inside an open transaction.
	IdleInTransaction int `json:"idle_in_transaction"`
	// OldestXactSeconds is the age of the oldest open transaction of a
	// client session in the cluster (0 when none).
	OldestXactSeconds float64 `json:"oldest_xact_seconds"`
	// LongTransactions counts transactions older than the threshold.
	LongTransactions int `json:"long_transactions"`
	// LongTransactionSeconds is that threshold.
	LongTransactionSeconds float64 `json:"long_transaction_seconds"`
	// OldestXminAge is the age, in transactions, of the oldest snapshot
	// (backend_xmin) any session holds: vacuum cannot remove newer dead rows.
	OldestXminAge int `json:"oldest_xmin_age"`
	// PreparedXacts counts two-phase transactions left prepared; they hold
	// xmin like open ones.
	PreparedXacts         int `json:"prepared_xacts"`
	OldestPreparedXactAge int `json:"oldest_prepared_xact_age"`
	// Sessions lists the sessions idle in a transaction or in a long one,
	// oldest first.
	Sessions []HealthSession `json:"sessions"`
	// ReplicationSlots lists the slots holding xmin or catalog_xmin.
	ReplicationSlots []HealthSlot `json:"replication_slots"`
	// Partitions lists the day tables of the history tables.
	Partitions []Partition `json:"partitions"`
}

// HealthTable is one table's size, tuples and vacuum history.
type HealthTable struct {
	Name       string `json:"name"`
	TableBytes int64  `json:"table_bytes"` // heap + TOAST + maps
	IndexBytes int64  `json:"index_bytes"`
	Live       int64  `json:"live_tuples"`
	Dead       int64  `json:"dead_tuples"`
	// DeadRatio is dead / (live + dead), 0 for an empty table.
	DeadRatio       float64    `json:"dead_ratio"`
	LastVacuum      *time.Time `json:"last_vacuum,omitempty"`
	LastAutovacuum  *time.Time `json:"last_autovacuum,omitempty"`
	VacuumCount     int64      `json:"vacuum_count"`
	AutovacuumCount int64      `json:"autovacuum_count"`
}

// HealthSession is a session worth an operator's attention.
type HealthSession struct {
	PID      int    `json:"pid"`
	Database string `json:"database"`
	// SameDatabase: the session is in hookrelay's database, so its
	// snapshot holds back the VACUUMs of hookrelay's tables. A session of
	// another database of the cluster holds back only those of the shared
	// catalogs.
	SameDatabase    bool       `json:"same_database"`
	Username        string     `json:"username"`
	ApplicationName string     `json:"application_name"`
	ClientAddr      string     `json:"client_addr"`
	State           string     `json:"state"`
	XactStart       *time.Time `json:"xact_start,omitempty"`
	XactSeconds     float64    `json:"xact_seconds"`
	XminAge         int        `json:"xmin_age"`
	// Query is the start of the session's current or last statement.
	Query string `json:"query"`
}

// HealthSlot is a slot holding back vacuum.
type HealthSlot struct {
	Name           string `json:"name"`
	Type           string `json:"type"`
	Active         bool   `json:"active"`
	XminAge        int    `json:"xmin_age"`
	CatalogXminAge int    `json:"catalog_xmin_age"`
}

// deadRatio returns dead / (live + dead), 0 when both are 0.
func deadRatio(live, dead int64) float64 {
	if live+dead <= 0 {
		return 0
	}
	return float64(dead) / float64(live+dead)
}

// HealthSnapshot returns the current table and cluster health with the
// default 5-minute long-transaction threshold. It reads catalog views only
// (a few milliseconds); the dashboard may call it per page view.
func (db *DB) HealthSnapshot(ctx context.Context) (Health, error) {
	return db.HealthSnapshotWith(ctx, HealthOptions{})
}

// HealthSnapshotWith is HealthSnapshot with options.
func (db *DB) HealthSnapshotWith(ctx context.Context, opts HealthOptions) (Health, error) {
	long := cmp.Or(opts.LongTransaction, 5*time.Minute).Seconds()
	h := Health{TakenAt: time.Now().UTC(), LongTransactionSeconds: long}
	tables, err := db.q.HealthTables(ctx, HotTables)
	if err != nil {
		return h, fmt.Errorf("health tables: %w", unavailable(err))
	}
	for _, t := range tables {
		h.Tables = append(h.Tables, HealthTable{Name: t.Name, TableBytes: t.TableBytes, IndexBytes: t.IndexBytes,
			Live: t.Live, Dead: t.Dead, DeadRatio: deadRatio(t.Live, t.Dead), LastVacuum: t.LastVacuum,
			LastAutovacuum: t.LastAutovacuum, VacuumCount: t.VacuumCount, AutovacuumCount: t.AutovacuumCount})
	}
	a, err := db.q.HealthActivity(ctx, long)
	if err != nil {
		return h, fmt.Errorf("health activity: %w", unavailable(err))
	}
	h.Connections, h.MaxConnections = int(a.Connections), int(a.MaxConnections)
	h.IdleInTransaction, h.OldestXactSeconds = int(a.IdleInTransaction), a.OldestXactSeconds
	h.Autovacuum = a.Autovacuum
	h.LongTransactions, h.OldestXminAge = int(a.LongTransactions), int(a.OldestXminAge)
	h.PreparedXacts, h.OldestPreparedXactAge = int(a.PreparedXacts), int(a.OldestPreparedXactAge)
	sessions, err := db.q.HealthSessions(ctx, long)
	if err != nil {
		return h, fmt.Errorf("health sessions: %w", unavailable(err))
	}
	for _, s := range sessions {
		h.Sessions = append(h.Sessions, HealthSession{PID: int(s.PID), Database: s.Database, SameDatabase: s.SameDatabase, Username: s.Username,
			ApplicationName: s.ApplicationName, ClientAddr: s.ClientAddr, State: s.State, XactStart: s.XactStart,
			XactSeconds: s.XactSeconds, XminAge: int(s.XminAge), Query: s.Query})
	}
	slots, err := db.q.HealthReplicationSlots(ctx)
	if err != nil {
		return h, fmt.Errorf("health replication slots: %w", unavailable(err))
	}
	for _, s := range slots {
		h.ReplicationSlots = append(h.ReplicationSlots, HealthSlot{Name: s.SlotName, Type: s.SlotType,
			Active: s.Active, XminAge: int(s.XminAge), CatalogXminAge: int(s.CatalogXminAge)})
	}
	if h.Partitions, err = db.Partitions(ctx); err != nil {
		return h, err
	}
	return h, nil
}
