package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// unitKey marks a context whose statements on one store run in a unit of
// work's transaction (BeginUnit); keyed by the store, so another store's
// statements are not drawn in.
type unitKey struct{ db *DB }

// unitTx returns the transaction of the unit of work ctx carries for db,
// if any.
func (db *DB) unitTx(ctx context.Context) pgx.Tx {
	tx, _ := ctx.Value(unitKey{db}).(pgx.Tx)
	return tx
}

// unitDBTX runs each statement of the generated queries in the unit of
// work's transaction the context carries, else on the pool.
type unitDBTX struct {
	db   *DB
	pool *pgxpool.Pool
}

func (u unitDBTX) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if tx := u.db.unitTx(ctx); tx != nil {
		return tx.Exec(ctx, sql, args...)
	}
	return u.pool.Exec(ctx, sql, args...)
}

func (u unitDBTX) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if tx := u.db.unitTx(ctx); tx != nil {
		return tx.Query(ctx, sql, args...)
	}
	return u.pool.Query(ctx, sql, args...)
}

func (u unitDBTX) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if tx := u.db.unitTx(ctx); tx != nil {
		return tx.QueryRow(ctx, sql, args...)
	}
	return u.pool.QueryRow(ctx, sql, args...)
}

// Unit is a unit of work: the statements of the store's methods called
// with its context, in one transaction (the transactions of those methods
// become savepoints in it). The statements that read on a snapshot of
// their own (DeliveryGet, the message search and read) stay outside.
type Unit struct {
	tx pgx.Tx
}

// BeginUnit starts a unit of work and returns the context that runs the
// store's statements in it. The caller ends it with Commit or Rollback,
// and uses the context from one goroutine at a time (one connection).
// Within a unit it returns the same unit, which the outer caller ends
// (Commit and Rollback of the inner one do nothing).
func (db *DB) BeginUnit(ctx context.Context) (context.Context, *Unit, error) {
	if db.unitTx(ctx) != nil {
		return ctx, &Unit{}, nil
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return ctx, nil, unavailable(err)
	}
	return context.WithValue(ctx, unitKey{db}, tx), &Unit{tx: tx}, nil
}

// Commit commits the unit's statements.
func (u *Unit) Commit(ctx context.Context) error {
	if u.tx == nil {
		return nil
	}
	return unavailable(u.tx.Commit(ctx))
}

// Rollback undoes the unit's statements (nothing once committed).
func (u *Unit) Rollback(ctx context.Context) {
	if u.tx != nil {
		_ = u.tx.Rollback(context.WithoutCancel(ctx))
	}
}
