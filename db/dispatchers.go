package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// DispatcherRegister records a starting dispatcher process and returns its id.
func (db *DB) DispatcherRegister(ctx context.Context, hostname string, pid int) (int64, error) {
	id, err := db.q.DispatcherRegister(ctx, dbsqlc.DispatcherRegisterParams{Hostname: hostname, PID: int32(pid)})
	if err != nil {
		return 0, fmt.Errorf("register dispatcher: %w", unavailable(err))
	}
	return id, nil
}

// DispatcherHeartbeat records that dispatcher id is alive and returns how
// many dispatchers are live (heartbeat within liveWithin, not stopped),
// counting itself. alive is false when the row is gone or marked stopped.
func (db *DB) DispatcherHeartbeat(ctx context.Context, id int64, liveWithin time.Duration) (live int, alive bool, err error) {
	r, err := db.q.DispatcherHeartbeat(ctx, dbsqlc.DispatcherHeartbeatParams{ID: id, LiveWithin: liveWithin})
	if err != nil {
		return 0, false, fmt.Errorf("dispatcher heartbeat: %w", unavailable(err))
	}
	return int(r.Others) + 1, r.Me == 1, nil
}

// DispatcherStop marks dispatcher id stopped.
func (db *DB) DispatcherStop(ctx context.Context, id int64) error {
	if err := db.q.DispatcherStop(ctx, id); err != nil {
		return fmt.Errorf("stop dispatcher: %w", unavailable(err))
	}
	return nil
}

// DispatchersPrune deletes dispatcher rows stopped or silent for longer than
// olderThan.
func (db *DB) DispatchersPrune(ctx context.Context, olderThan time.Duration) (int64, error) {
	n, err := db.q.DispatcherPrune(ctx, olderThan)
	if err != nil {
		return 0, fmt.Errorf("prune dispatchers: %w", unavailable(err))
	}
	return n, nil
}
