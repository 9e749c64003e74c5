package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/hookrelay/hookrelay/db"
)

// PayloadStore is the part of the S3 payload store retention uses.
type PayloadStore interface {
	// DeletePrefix removes every object under prefix and returns how many.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
}

// Maintainer runs the maintenance role. Run it in every process that has the
// role; only one at a time does the work.
type Maintainer struct {
	cfg      Config
	logger   *slog.Logger
	db       *db.DB
	payloads PayloadStore // nil: no S3 store, nothing to purge
	m        *metrics
	kick     chan struct{} // asks the holder for a retention pass now
	// test lets this package's tests see inside the loops.
	test testSignals
}

// testSignals are points in the maintainer's loops that a test of this
// package observes. A test sets them before Run; nil does nothing, and the
// product never sets them.
type testSignals struct {
	// vacuumChecked runs after each check of the hot tables (and the
	// VACUUMs it ran) that started at now.
	vacuumChecked func(now time.Time)
}

// New returns a Maintainer. payloads may be nil; reg receives the metrics
// (nil: a private registry).
func New(logger *slog.Logger, cfg Config, store *db.DB, payloads PayloadStore, reg prometheus.Registerer) *Maintainer {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &Maintainer{cfg: cfg.WithDefaults(), logger: logger, db: store, payloads: payloads, m: newMetrics(reg),
		kick: make(chan struct{}, 1)}
}

// Run takes the role when it is free and does the work until ctx ends; while
// another process holds it, Run stands by and retries every LockRetry. It
// returns nil when ctx ends.
func (mt *Maintainer) Run(ctx context.Context) error {
	for {
		err := mt.lead(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			mt.logger.Warn("maintenance: role lost or not taken; retrying", "error", err, "retry_in", mt.cfg.LockRetry)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(mt.cfg.LockRetry):
		}
	}
}

// lead opens the leadership session, waits until it holds the lock and then
// runs the loops until ctx ends or the session is lost.
func (mt *Maintainer) lead(ctx context.Context) error {
	sess, err := mt.db.OpenSession(ctx, mt.cfg.Session)
	if err != nil {
		return err
	}
	defer sess.Close()
	for {
		ok, err := sess.TryLock(ctx, LockKey)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(mt.cfg.LockRetry):
		}
	}
	mt.logger.Info("maintenance: holding the role", "session_pid", sess.PID())
	mt.m.leader.WithLabelValues().Set(1)
	defer func() {
		mt.m.leader.WithLabelValues().Set(0)
		mt.m.resetHealth()
	}()

	g, gctx := errgroup.WithContext(ctx)
	if mt.cfg.VacuumInterval > 0 {
		g.Go(func() error { mt.vacuumLoop(gctx); return nil })
	}
	if mt.cfg.HealthInterval > 0 {
		g.Go(func() error { mt.healthLoop(gctx); return nil })
	}
	if mt.cfg.StatInterval > 0 {
		g.Go(func() error { mt.statLoop(gctx); return nil })
	}
	if mt.cfg.Replay.Interval >= 0 {
		runner := NewReplayRunner(mt.logger, mt.cfg.Replay, mt.db)
		g.Go(func() error { return runner.Run(gctx) })
	}
	// The leadership loop owns sess; when it fails, the others stop.
	g.Go(func() error { return mt.keep(gctx, sess) })
	err = g.Wait()
	if ctx.Err() == nil {
		return err
	}
	// Clean hand-over on shutdown: release before closing.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = sess.Unlock(uctx, LockKey)
	mt.logger.Info("maintenance: role released")
	return nil
}

// Kick asks the process holding the role (if it is this one) for a retention
// pass now instead of at the next interval.
func (mt *Maintainer) Kick() {
	select {
	case mt.kick <- struct{}{}:
	default:
	}
}

// errSessionLost ends the holder's loops when its connection goes away: the
// server has released the lock and another process may hold it already.
var errSessionLost = errors.New("maintenance session lost")

// keep runs the retention passes on the leadership session and checks that
// the session is alive in between.
func (mt *Maintainer) keep(ctx context.Context, sess *db.Session) error {
	retain := time.NewTimer(0) // at once: catch up after downtime
	defer retain.Stop()
	ping := time.NewTicker(mt.cfg.LockRetry)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ping.C:
			if err := sess.Ping(ctx); err != nil {
				return fmt.Errorf("%w: %w", errSessionLost, err)
			}
		case <-mt.kick:
			retain.Reset(0)
		case <-retain.C:
			if mt.cfg.RetentionInterval < 0 {
				continue
			}
			if err := mt.retentionPass(ctx, sess); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if perr := sess.Ping(ctx); perr != nil {
					return fmt.Errorf("%w: %w", errSessionLost, err)
				}
			}
			retain.Reset(mt.cfg.RetentionInterval)
		}
	}
}

// retentionPass runs one pass, logs its outcome once and reports it.
func (mt *Maintainer) retentionPass(ctx context.Context, sess *db.Session) error {
	start := time.Now()
	rep, err := mt.retain(ctx, sess, mt.cfg.Now())
	rep.Took = time.Since(start)
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		mt.m.retentionFailures.Inc()
	} else if len(rep.Dropped) == 0 && rep.Created == 0 && len(rep.Blocked) == 0 && len(rep.Vacuumed) == 0 && rep.DeadLettersDiscarded == 0 {
		level = slog.LevelDebug
	}
	mt.logger.Log(ctx, level, "maintenance: retention pass", "created", rep.Created, "dropped", rep.Dropped,
		"blocked", rep.Blocked, "vacuumed", rep.Vacuumed, "dead_letters_discarded", rep.DeadLettersDiscarded,
		"payload_objects_deleted", rep.PayloadObjectsDeleted, "took", rep.Took, "error", err)
	if mt.cfg.OnRetention != nil {
		rep.Err = err
		mt.cfg.OnRetention(rep)
	}
	return err
}
