package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// A step runs generated statements on tx: a closure that calls dbsqlc
// methods (or Exec) on it and keeps their results.
type step func(tx dbsqlc.DBTX) error

// runPipeline sends the statements of steps in ONE round trip, as one
// implicit transaction: PostgreSQL runs a pipeline's statements up to its
// Sync as a single transaction, so they commit together or not at all, and
// (at READ COMMITTED) each statement takes its own snapshot after the one
// before it has finished, as it would inside BEGIN … COMMIT. Nothing of the
// caller runs between them, so the transaction cannot stall on the caller.
//
// Each step runs twice. First against a recorder, which queues the SQL and
// arguments of every statement the step issues instead of running it; then,
// once the batch has been sent, against a replayer, which hands each
// statement the result of its queued copy. The generated code thus decides
// both the arguments and how rows are scanned, and the results land where
// the step keeps them. Steps must issue the same statements both times and
// must not depend on each other's results (they are queued before any runs).
func runPipeline(ctx context.Context, sender interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, steps ...step) error {
	b := &pgx.Batch{}
	rec := recorder{b}
	for _, s := range steps {
		if err := s(rec); err != nil && !errors.Is(err, errQueued) {
			return err
		}
	}
	if b.Len() == 0 {
		return nil
	}
	br := sender.SendBatch(ctx, b)
	rep := replayer{br}
	var first error
	for _, s := range steps {
		if err := s(rep); err != nil && first == nil {
			first = err
		}
	}
	if err := br.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// errQueued is what a recorded statement returns: it was queued, not run.
var errQueued = errors.New("statement queued in a pipeline")

// recorder queues each statement in a batch.
type recorder struct{ b *pgx.Batch }

func (r recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.b.Queue(sql, args...)
	return pgconn.CommandTag{}, errQueued
}

func (r recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.b.Queue(sql, args...)
	return nil, errQueued
}

func (r recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.b.Queue(sql, args...)
	return queuedRow{}
}

type queuedRow struct{}

func (queuedRow) Scan(...any) error { return errQueued }

// replayer answers each statement, in order, with the result of the queued
// one.
type replayer struct{ br pgx.BatchResults }

func (r replayer) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return r.br.Exec()
}

func (r replayer) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return r.br.Query()
}

func (r replayer) QueryRow(context.Context, string, ...any) pgx.Row {
	return r.br.QueryRow()
}
