package maintenance

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/hookrelay/hookrelay/db"
)

// The replays asked for through the API (ops.Service.StartReplay) are
// carried out here, by the holder of the maintenance role.

// Defaults of the replay runner; cmd/hookrelay uses them for its environment
// variables.
const (
	// DefaultReplayBatch is how many rows of a replay's window one batch
	// (one transaction) reads and queues again.
	DefaultReplayBatch = 1000
	// DefaultReplayInterval is how often an idle runner looks for work.
	DefaultReplayInterval = time.Second
)

// ReplayConfig configures the replay runner. Zero fields take their
// defaults.
type ReplayConfig struct {
	// Batch is how many rows of a replay's window one transaction reads and
	// queues again, at most: fewer while transactions run long (adaptBatch).
	// Default DefaultReplayBatch.
	Batch int
	// Interval is how often the runner looks for work when it has none.
	// Default DefaultReplayInterval.
	Interval time.Duration
	// OnBatch, when set, is called after every committed batch with how
	// long the whole batch took (its reads and its transaction; b.Tx is the
	// transaction alone).
	OnBatch func(b db.ReplayBatch, took time.Duration)
}

func (c ReplayConfig) withDefaults() ReplayConfig {
	c.Batch = cmp.Or(c.Batch, DefaultReplayBatch)
	c.Interval = cmp.Or(c.Interval, DefaultReplayInterval)
	return c
}

// maxRunningReplays is how many replays a runner advances side by side.
const maxRunningReplays = 100

// ReplayRunner carries out the running replays, a batch at a time: each
// batch is one short transaction that queues up to Batch deliveries and
// commits the replay's cursor with them, so a runner stopped anywhere (its
// context ended, its process killed) resumes where the last commit left
// off without queueing anything twice. The next batch of a replay waits
// until at least half of its previous one has left the queue: a replay of a
// million rows keeps about a batch of them queued at a time, and live
// callbacks wait behind no more than that. A batch that stops at once to
// wait for a replay chain, its key's or another replay's deliveries still
// queued (db.ReplayStep), is tried again after Interval. Run one per
// deployment (the maintenance role's holder does); two at once are safe (a
// batch locks its replay) but gain nothing.
type ReplayRunner struct {
	cfg    ReplayConfig
	db     *db.DB
	logger *slog.Logger
	// queued is the last batch each replay queued, while it is being sent.
	// A runner that starts anew does not know it and starts a batch at once.
	queued map[int64][]int64
	// stalled holds when each replay whose last batch waited without
	// queueing anything (db.ReplayBatch.Waiting) may try again: its key's
	// replay chain may take long to drain (a disabled endpoint), and each
	// try reads a batch of the window.
	stalled map[int64]time.Time
	// batch is the rows the next batch takes: cfg.Batch, less while the
	// transactions run long (adaptBatch).
	batch int
}

// replayTxTarget is how long a batch's transaction should take: half of
// what it may (a second). minReplayBatch is the fewest rows a batch takes.
const (
	replayTxTarget = 250 * time.Millisecond
	minReplayBatch = 50
)

// NewReplayRunner returns a runner of the replays stored in store.
func NewReplayRunner(logger *slog.Logger, cfg ReplayConfig, store *db.DB) *ReplayRunner {
	cfg = cfg.withDefaults()
	return &ReplayRunner{cfg: cfg, db: store, logger: logger,
		queued: map[int64][]int64{}, stalled: map[int64]time.Time{}, batch: cfg.Batch}
}

// adaptBatch sizes the next batch from how long the last one's transaction
// took: halved (down to minReplayBatch) when it ran past replayTxTarget,
// doubled back (up to cfg.Batch) when it took under a quarter of it. The
// transaction queues its rows and commits, so its time grows with its rows;
// on a starved machine (CPU or disk shared with other work) a full batch can
// run past the second a replay's transaction may hold, and smaller ones
// keep it short.
func (r *ReplayRunner) adaptBatch(tx time.Duration) {
	switch {
	case tx > replayTxTarget:
		r.batch = max(r.batch/2, min(minReplayBatch, r.cfg.Batch))
	case tx < replayTxTarget/4:
		r.batch = min(r.batch*2, r.cfg.Batch)
	}
}

// Run advances the running replays until ctx ends, and returns nil then.
func (r *ReplayRunner) Run(ctx context.Context) error {
	for {
		busy, err := r.Step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			r.logger.Warn("replay: batch failed; retrying", "error", err, "retry_in", r.cfg.Interval)
		}
		wait := r.cfg.Interval
		if busy {
			// Some replay's deliveries are on their way: look again soon.
			wait = min(wait, 20*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Step runs at most one batch of every running replay that may take one,
// and reports whether any replay is still running.
func (r *ReplayRunner) Step(ctx context.Context) (bool, error) {
	running, err := r.db.ReplayListRunning(ctx, maxRunningReplays)
	if err != nil {
		return false, err
	}
	live := make(map[int64][]int64, len(running))
	stalled := map[int64]time.Time{}
	for _, rp := range running {
		if until, ok := r.stalled[rp.ID]; ok && time.Now().Before(until) {
			stalled[rp.ID] = until
			continue
		}
		if prev := r.queued[rp.ID]; len(prev) > 0 {
			n, err := r.db.DeliveryCountQueued(ctx, prev)
			if err != nil {
				return true, err
			}
			if 2*n > int64(len(prev)) {
				live[rp.ID] = prev
				continue
			}
		}
		start := time.Now()
		b, ok, err := r.db.ReplayStep(ctx, rp.ID, r.batch)
		took := time.Since(start)
		if err != nil {
			return true, err
		}
		if !ok {
			continue
		}
		r.adaptBatch(b.Tx)
		if r.cfg.OnBatch != nil {
			r.cfg.OnBatch(b, took)
		}
		r.logger.Debug("replay: batch", "replay_id", rp.ID, "read", b.Read, "queued", len(b.Queued),
			"waiting", b.Waiting, "took", took)
		if b.Replay.State == db.ReplayFinished {
			r.logger.Info("replay: finished", "replay_id", rp.ID, "endpoint_id", b.Replay.EndpointID,
				"total", b.Replay.Total, "done", b.Replay.Done, "failed", b.Replay.Failed)
			continue
		}
		live[rp.ID] = b.Queued
		if b.Waiting && len(b.Queued) == 0 {
			stalled[rp.ID] = time.Now().Add(r.cfg.Interval)
		}
	}
	r.queued, r.stalled = live, stalled
	return len(running) > 0, nil
}
