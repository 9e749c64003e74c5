package db

import (
	"context"
	"fmt"
	"time"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// QueueLease is a held logical queue.
type QueueLease struct {
	Queue int
	Epoch int64 // grows on every change of owner
}

// QueueLeasesEnsure creates the lease rows of queues 0..queues-1.
func (db *DB) QueueLeasesEnsure(ctx context.Context, queues int) error {
	if err := db.q.QueueLeaseEnsure(ctx, int32(queues)); err != nil {
		return fmt.Errorf("create queue leases: %w", unavailable(err))
	}
	return nil
}

// QueueLeasesRenew extends every lease owner holds and returns them.
func (db *DB) QueueLeasesRenew(ctx context.Context, owner int64, queues int, lease time.Duration) ([]QueueLease, error) {
	rows, err := db.q.QueueLeaseRenew(ctx, dbsqlc.QueueLeaseRenewParams{Owner: owner, Queues: int32(queues), Lease: lease})
	if err != nil {
		return nil, fmt.Errorf("renew queue leases: %w", unavailable(err))
	}
	out := make([]QueueLease, len(rows))
	for i, r := range rows {
		out[i] = QueueLease{Queue: int(r.Queue), Epoch: r.Epoch}
	}
	return out, nil
}

// QueueLeaseParams say which queue leases QueueLeasesAcquire takes.
type QueueLeaseParams struct {
	Owner  int64 // the dispatcher taking them
	Queues int   // the number of logical queues (0..Queues-1)
	N      int   // how many leases to take at most
	Lease  time.Duration
	// LiveWithin: a dispatcher silent for longer has its leases taken.
	LiveWithin time.Duration
}

// QueueLeasesAcquire takes up to p.N leases for p.Owner: free ones, expired
// ones and those of dispatchers silent for longer than p.LiveWithin.
func (db *DB) QueueLeasesAcquire(ctx context.Context, p QueueLeaseParams) ([]QueueLease, error) {
	rows, err := db.q.QueueLeaseAcquire(ctx, dbsqlc.QueueLeaseAcquireParams{
		Owner: p.Owner, Lease: p.Lease, Queues: int32(p.Queues), N: int32(p.N), LiveWithin: p.LiveWithin,
	})
	if err != nil {
		return nil, fmt.Errorf("acquire queue leases: %w", unavailable(err))
	}
	out := make([]QueueLease, len(rows))
	for i, r := range rows {
		out[i] = QueueLease{Queue: int(r.Queue), Epoch: r.Epoch}
	}
	return out, nil
}

// QueueLeasesRelease gives up n of owner's leases (the highest queues), or all
// of them when n < 0, and returns how many it released.
func (db *DB) QueueLeasesRelease(ctx context.Context, owner int64, n int) (int64, error) {
	c, err := db.q.QueueLeaseRelease(ctx, dbsqlc.QueueLeaseReleaseParams{Owner: owner, N: int32(n)})
	if err != nil {
		return 0, fmt.Errorf("release queue leases: %w", unavailable(err))
	}
	return c, nil
}
