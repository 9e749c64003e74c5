package db

import (
	"context"
	"fmt"
	"time"
)

// ReplicaStatus is how current a read replica is (HOOKRELAY_DATABASE_REPLICA_URL).
type ReplicaStatus struct {
	// Standby reports whether the server is a standby (in recovery); false
	// means the "replica" is a primary, as current as can be.
	Standby bool
	// Streaming reports whether the standby is receiving WAL from its
	// primary right now.
	Streaming bool
	// Lag is how far its data is behind the primary: 0 when, streaming, it
	// has replayed all it received; otherwise the age of the last
	// transaction it replayed. Negative when unknown (it replayed none yet).
	Lag time.Duration
}

// ReplicaStatus returns how current the server of db is; see ReplicaStatus.
func (db *DB) ReplicaStatus(ctx context.Context) (ReplicaStatus, error) {
	r, err := db.q.ReplicaStatus(ctx)
	if err != nil {
		return ReplicaStatus{}, fmt.Errorf("replica status: %w", unavailable(err))
	}
	lag := time.Duration(r.LagSeconds * float64(time.Second))
	if r.LagSeconds < 0 {
		lag = -1
	}
	return ReplicaStatus{Standby: r.InRecovery, Streaming: r.Streaming, Lag: lag}, nil
}
