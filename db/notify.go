package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// DueNotify announces on the wake-up channel that deliveries were just
// committed; token names the sending process (see DueListener.Wait). It runs
// in its own transaction (never call it inside a group commit: notifying
// commits are serialised cluster-wide) and does not wait for a WAL flush.
func (db *DB) DueNotify(ctx context.Context, token string) error {
	if err := db.q.DueNotify(ctx, token); err != nil {
		return fmt.Errorf("notify dispatchers: %w", unavailable(err))
	}
	return nil
}

// DueListener is a dedicated session LISTENing on the wake-up channel: one
// connection of its own, outside the pool (it stays connected and idle, never
// inside a transaction). It is not safe for concurrent use.
type DueListener struct {
	conn *pgx.Conn
}

// ListenDue opens a session that receives DueNotify's announcements from
// now on. appName is its application_name.
func (db *DB) ListenDue(ctx context.Context, appName string) (*DueListener, error) {
	cc, err := pgx.ParseConfig(db.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	rp := cc.RuntimeParams
	rp["application_name"] = appName
	rp["statement_timeout"] = ms(db.cfg.StatementTimeout)
	rp["idle_in_transaction_session_timeout"] = ms(db.cfg.IdleInTransactionTimeout)
	rp["lock_timeout"] = ms(db.cfg.LockTimeout)
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", unavailable(err))
	}
	if err := dbsqlc.New(conn).DueListen(ctx); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listen: %w", unavailable(err))
	}
	return &DueListener{conn: conn}, nil
}

// Wait blocks until an announcement arrives and returns its sender's token.
// An error means the session is lost (or ctx ended): close the listener and
// open another.
func (l *DueListener) Wait(ctx context.Context) (string, error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return "", fmt.Errorf("wait for notification: %w", unavailable(err))
	}
	return n.Payload, nil
}

// PID returns the server process id of the listening session.
func (l *DueListener) PID() uint32 { return l.conn.PgConn().PID() }

// Close closes the session.
func (l *DueListener) Close(ctx context.Context) { _ = l.conn.Close(ctx) }
