package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// unitKey marks a context whose statements on one store run in a unit of
// work's transaction (BeginUnit); keyed by the store, so another store's
// statements are not drawn in.
type unitKey struct{ db *DB }

// unitOf returns the unit of work ctx carries for db, if any.
func (db *DB) unitOf(ctx context.Context) *Unit {
	u, _ := ctx.Value(unitKey{db}).(*Unit)
	return u
}

// unitDBTX runs each statement of the generated queries in the unit of
// work's transaction the context carries, else on the pool.
type unitDBTX struct {
	db   *DB
	pool *pgxpool.Pool
}

func (d unitDBTX) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if u := d.db.unitOf(ctx); u != nil {
		return u.exec(ctx, sql, args)
	}
	return d.pool.Exec(ctx, sql, args...)
}

func (d unitDBTX) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if u := d.db.unitOf(ctx); u != nil {
		return u.query(ctx, sql, args)
	}
	return d.pool.Query(ctx, sql, args...)
}

func (d unitDBTX) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if u := d.db.unitOf(ctx); u != nil {
		return u.queryRow(ctx, sql, args)
	}
	return d.pool.QueryRow(ctx, sql, args...)
}

// Unit is a unit of work: the statements of the store's methods called
// with its context, in one transaction on one connection. The statements
// that read on a snapshot of their own (DeliveryGet, the message search
// and read) stay outside.
//
// A unit costs no round trip of its own: BEGIN goes in one pipeline with
// its first statement, and COMMIT with the statements queued for it
// (atCommit, such as the audit entry that records the change). The store's
// methods that run a transaction of their own run theirs inside the unit
// without a savepoint: a statement that fails fails the unit (PostgreSQL
// refuses the statements after it and the commit), which the caller then
// rolls back.
type Unit struct {
	conn  *pgxpool.Conn
	began bool // BEGIN sent
	ended bool
	// final are the statements sent with the COMMIT.
	final []finalStmt
}

// finalStmt is a statement queued for the unit's commit.
type finalStmt struct {
	sql  string
	args []any
}

// BeginUnit starts a unit of work and returns the context that runs the
// store's statements in it. The caller ends it with Commit or Rollback,
// and uses the context from one goroutine at a time (one connection).
// Within a unit it returns the same unit, which the outer caller ends
// (Commit and Rollback of the inner one do nothing).
func (db *DB) BeginUnit(ctx context.Context) (context.Context, *Unit, error) {
	if db.unitOf(ctx) != nil {
		return ctx, &Unit{ended: true}, nil
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return ctx, nil, unavailable(err)
	}
	u := &Unit{conn: conn}
	return context.WithValue(ctx, unitKey{db}, u), u, nil
}

// beginWith sends BEGIN and sql in one pipeline and returns the batch's
// results positioned at sql's, or BEGIN's error (the batch closed).
func (u *Unit) beginWith(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sql, args...)
	u.began = true
	br := u.conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	return br, nil
}

// begin sends BEGIN on its own, for what cannot ride with a statement.
func (u *Unit) begin(ctx context.Context) error {
	if u.began {
		return nil
	}
	u.began = true
	_, err := u.conn.Exec(ctx, "BEGIN")
	return err
}

func (u *Unit) exec(ctx context.Context, sql string, args []any) (pgconn.CommandTag, error) {
	if u.began {
		return u.conn.Exec(ctx, sql, args...)
	}
	br, err := u.beginWith(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	return tag, errors.Join(err, br.Close())
}

func (u *Unit) query(ctx context.Context, sql string, args []any) (pgx.Rows, error) {
	if u.began {
		return u.conn.Query(ctx, sql, args...)
	}
	br, err := u.beginWith(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, br.Close())
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (u *Unit) queryRow(ctx context.Context, sql string, args []any) pgx.Row {
	if u.began {
		return u.conn.QueryRow(ctx, sql, args...)
	}
	br, err := u.beginWith(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// atCommit returns the queries' connection whose Exec queues its
// statement to be sent with the unit's COMMIT (its error is the commit's);
// statements that return rows cannot wait for it.
func (u *Unit) atCommit() commitQueue { return commitQueue{u} }

type commitQueue struct{ u *Unit }

// errReturnsRows refuses a statement whose rows are read to wait for the
// commit.
var errReturnsRows = errors.New("db: a statement queued for the commit returns no rows")

func (c commitQueue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.u.final = append(c.u.final, finalStmt{sql: sql, args: args})
	return pgconn.CommandTag{}, nil
}

func (c commitQueue) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errReturnsRows
}

func (c commitQueue) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{errReturnsRows} }

// Commit sends the statements queued for the commit and COMMIT in one
// pipeline, and ends the unit. A unit that ran no statement commits the
// queued ones alone (one implicit transaction).
func (u *Unit) Commit(ctx context.Context) error {
	if u.ended {
		return nil
	}
	u.ended = true
	defer u.conn.Release()
	if !u.began && len(u.final) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, f := range u.final {
		b.Queue(f.sql, f.args...)
	}
	if u.began {
		b.Queue("COMMIT")
	}
	br := u.conn.SendBatch(ctx, b)
	err := func() error {
		for range u.final {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if u.began {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			if tag.String() == "ROLLBACK" {
				// A statement of the unit had failed.
				return pgx.ErrTxCommitRollback
			}
		}
		return nil
	}()
	err = errors.Join(err, br.Close())
	if err != nil && u.began {
		// The pipeline stopped at the failed statement, inside the
		// transaction: end it, or the pool drops the connection.
		_, _ = u.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return unavailable(err)
}

// Rollback undoes the unit's statements and ends it (nothing once ended).
func (u *Unit) Rollback(ctx context.Context) {
	if u.ended {
		return
	}
	u.ended = true
	if u.began {
		_, _ = u.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	u.conn.Release()
}

// tx is the unit as the store's transactions see it: a transaction begun
// in it is the unit itself (no savepoint), whose Commit and Rollback are
// left to the unit's owner.
func (u *Unit) tx() pgx.Tx { return unitTx{u} }

type unitTx struct{ u *Unit }

func (t unitTx) Begin(context.Context) (pgx.Tx, error) { return t, nil }
func (t unitTx) Commit(context.Context) error          { return nil }
func (t unitTx) Rollback(context.Context) error        { return nil }

func (t unitTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.u.exec(ctx, sql, args)
}

func (t unitTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.u.query(ctx, sql, args)
}

func (t unitTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.u.queryRow(ctx, sql, args)
}

func (t unitTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.u.begin(ctx); err != nil {
		return 0, err
	}
	return t.u.conn.CopyFrom(ctx, table, cols, src)
}

func (t unitTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.u.begin(ctx); err != nil {
		return errBatch{err}
	}
	return t.u.conn.SendBatch(ctx, b)
}

// LargeObjects is not offered in a unit (the zero value fails).
func (t unitTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t unitTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.u.conn.Conn().Prepare(ctx, name, sql)
}

func (t unitTx) Conn() *pgx.Conn { return t.u.conn.Conn() }

// batchRows are the rows of a pipeline's last statement: once read or
// closed, the pipeline is closed too.
type batchRows struct {
	pgx.Rows
	br   pgx.BatchResults
	done bool
	err  error
}

func (r *batchRows) finish() {
	if !r.done {
		r.done = true
		r.Rows.Close()
		r.err = r.br.Close()
	}
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *batchRows) Close() { r.finish() }

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is the row of a pipeline's last statement; scanning it closes
// the pipeline.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
