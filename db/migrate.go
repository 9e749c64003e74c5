package db

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/hookrelay/hookrelay"
	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
	"github.com/hookrelay/hookrelay/migrations"
)

// migrationLockID is the advisory lock key serialising migrations across
// processes that start at the same time.
const migrationLockID = 7368211000

// Migrate applies every pending migration, holding a session advisory lock so
// that concurrent start-ups apply each migration once. It then makes sure the
// day partitions around today exist. It returns the versions applied. With
// Config.DirectURL set the migrations run on a connection of their own to
// it: the lock is a session's, which a pooler in transaction mode would
// take on one server session and release (or not) on another.
func (db *DB) Migrate(ctx context.Context, logger *slog.Logger) ([]int64, error) {
	var sqlDB *sql.DB
	if db.cfg.DirectURL != "" {
		cc, err := pgx.ParseConfig(db.cfg.DirectURL)
		if err != nil {
			return nil, hookrelay.WrapError(hookrelay.EINVALID, "invalid direct database URL", err)
		}
		cc.RuntimeParams["application_name"] = db.cfg.AppName + "-migrate"
		cc.RuntimeParams["timezone"] = "UTC"
		// The pool's timeouts, as when the migrations run on the pool.
		cc.RuntimeParams["statement_timeout"] = ms(db.cfg.StatementTimeout)
		cc.RuntimeParams["lock_timeout"] = ms(db.cfg.LockTimeout)
		cc.RuntimeParams["idle_in_transaction_session_timeout"] = ms(db.cfg.IdleInTransactionTimeout)
		sqlDB = stdlib.OpenDB(*cc)
		// The locker holds one connection, the migrations run on another.
		sqlDB.SetMaxOpenConns(2)
	} else {
		sqlDB = stdlib.OpenDBFromPool(db.pool)
	}
	defer sqlDB.Close()
	applied, err := migrate(ctx, sqlDB, logger)
	if err != nil {
		return nil, err
	}
	if _, err := db.EnsurePartitions(ctx, time.Now(), 2); err != nil {
		return applied, err
	}
	return applied, nil
}

func migrate(ctx context.Context, sqlDB *sql.DB, logger *slog.Logger) ([]int64, error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return nil, fmt.Errorf("migration locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("migration provider: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	var versions []int64
	for _, r := range results {
		versions = append(versions, r.Source.Version)
		if logger != nil {
			logger.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	return versions, nil
}

// EnsurePartitions creates the day partitions of the partitioned tables from
// the day before now through `ahead` days after it (UTC). It returns how many
// partitions it created.
func (db *DB) EnsurePartitions(ctx context.Context, now time.Time, ahead int) (int, error) {
	day := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	n, err := db.q.PartitionEnsure(ctx, dbsqlc.PartitionEnsureParams{FromDay: day, Days: int32(ahead + 1)})
	if err != nil {
		return 0, fmt.Errorf("ensure partitions: %w", unavailable(err))
	}
	return int(n), nil
}
