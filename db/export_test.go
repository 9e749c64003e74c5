package db

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookrelay/hookrelay/db/internal/dbsqlc"
)

// SetAckStallHook sets what d's DeliveryAckBatch runs between its statements
// when it runs them one by one (not pipelined; nil: nothing). Call it while
// nothing else uses d.
func SetAckStallHook(d *DB, f func()) { d.hooks.ackStall = f }

// SetClaimPeek sets d's claim small-queue bound (0: every queue is walked).
// Call it while nothing else uses d.
func SetClaimPeek(d *DB, n int32) { d.claimPeek = n }

// ClaimHomeLeases takes n connections from the claim statements' home list
// at once, reads each one's backend pid, and gives them back, lease i with
// errs[i] (when errs is that long) as the error its statements ended with.
// It reports the pids, which leases were home connections, and how many
// home connections the list holds afterwards.
func ClaimHomeLeases(ctx context.Context, d *DB, n int, errs []error) (pids []int32, home []bool, held int, err error) {
	leases := make([]lease, 0, n)
	defer func() {
		for i, l := range leases {
			var e error
			if i < len(errs) {
				e = errs[i]
			}
			d.claimConns.put(l, e)
		}
		d.claimConns.mu.Lock()
		held = d.claimConns.held
		d.claimConns.mu.Unlock()
	}()
	for range n {
		l, err := d.claimConns.get(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		leases = append(leases, l)
		var pid int32
		if err := l.conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			return nil, nil, 0, err
		}
		pids, home = append(pids, pid), append(home, l.home)
	}
	return pids, home, 0, nil
}

// ReserveIDsOn runs the payload offload's id reservation
// (MessageIDsReserve) on conn.
func ReserveIDsOn(ctx context.Context, conn *pgx.Conn, n int) error {
	_, err := dbsqlc.New(conn).MessageIDsReserve(ctx, int32(n))
	return err
}

// SetDeliveryGetHook sets what d's DeliveryGet runs after its first read
// (nil: nothing). Call it while nothing else uses d.
func SetDeliveryGetHook(d *DB, f func()) { d.hooks.deliveryGetRead = f }

// OnClaimHomeConn runs f on a connection from the claim statements' home
// list, as DeliveryClaim would get it.
func OnClaimHomeConn(ctx context.Context, d *DB, f func(*pgx.Conn) error) error {
	l, err := d.claimConns.get(ctx)
	if err != nil {
		return err
	}
	err = f(l.conn.Conn())
	d.claimConns.put(l, err)
	return err
}

// PoolSettings reports a setting of every idle session of the pool, one entry
// per distinct value.
func PoolSettings(ctx context.Context, t testing.TB, d *DB, name string) []string {
	t.Helper()
	conns := d.pool.AcquireAllIdle(ctx)
	seen := map[string]bool{}
	var out []string
	for _, c := range conns {
		var v string
		if err := c.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
		c.Release()
	}
	return out
}

// RunPipeline runs sqls as one pipeline (runPipeline) on conn, each through
// QueryRow, and returns the single integer each one answered.
func RunPipeline(ctx context.Context, conn *pgx.Conn, sqls ...string) ([]int64, error) {
	out := make([]int64, len(sqls))
	steps := make([]step, len(sqls))
	for i, sql := range sqls {
		steps[i] = func(tx dbsqlc.DBTX) error { return tx.QueryRow(ctx, sql).Scan(&out[i]) }
	}
	return out, runPipeline(ctx, conn, steps...)
}

// SessionSettings returns the session's statement_timeout,
// vacuum_cost_delay and vacuum_cost_limit as the server shows them.
func SessionSettings(ctx context.Context, s *Session) (timeout, delay, limit string, err error) {
	err = s.conn.QueryRow(ctx, "SELECT current_setting('statement_timeout'), current_setting('vacuum_cost_delay'), current_setting('vacuum_cost_limit')").
		Scan(&timeout, &delay, &limit)
	return timeout, delay, limit, err
}

// OpenSessionNotices opens a maintenance session whose server notices (and
// messages of the levels its client_min_messages lets through) go to
// onNotice.
func OpenSessionNotices(ctx context.Context, d *DB, cfg SessionConfig, onNotice func(string)) (*Session, error) {
	return d.openSession(ctx, cfg, func(_ *pgconn.PgConn, n *pgconn.Notice) { onNotice(n.Message) })
}

// SessionExec runs sql on the session.
func SessionExec(ctx context.Context, s *Session, sql string) error {
	_, err := s.conn.Exec(ctx, sql)
	return err
}

// ClaimSessionSettings reports whether d's claim home sessions get settings
// of their own (claimSession).
func ClaimSessionSettings(d *DB) bool { return d.claimConns.session != nil }

// The exports below serve db's own tests only: the product does not call
// them, so they are not part of the package's surface.

// StatExactBacklog is statExactBacklog.
const StatExactBacklog = statExactBacklog

// StatSlice is statSlice.
const StatSlice = statSlice

// ParseAnnouncement is parseAnnouncement.
func ParseAnnouncement(payload string) Announcement { return parseAnnouncement(payload) }

// DeliveryResumeEndpoint makes an endpoint's held rows visible now (not those
// in flight, not parked non-heads).
func (db *DB) DeliveryResumeEndpoint(ctx context.Context, endpointID int64) (int64, error) {
	n, err := db.q.DeliveryResumeByEndpoint(ctx, endpointID)
	if err != nil {
		return 0, fmt.Errorf("resume endpoint %d: %w", endpointID, unavailable(err))
	}
	return n, nil
}

// SessionSettings returns the timeouts and synchronous_commit in force on a
// pooled session, as PostgreSQL shows them (e.g. "30s", "on").
func (db *DB) SessionSettings(ctx context.Context) (map[string]string, error) {
	r, err := db.q.SessionSettingsGet(ctx)
	if err != nil {
		return nil, fmt.Errorf("session settings: %w", unavailable(err))
	}
	return map[string]string{
		"statement_timeout":                   r.StatementTimeout,
		"idle_in_transaction_session_timeout": r.IdleInTransactionSessionTimeout,
		"lock_timeout":                        r.LockTimeout,
		"synchronous_commit":                  r.SynchronousCommit,
	}, nil
}

// PID returns the server process id of the listening session.
func (l *DueListener) PID() uint32 { return l.sess.PID() }

// SessionVacuumsBuilt returns how many VACUUM statements s has built and
// kept.
func SessionVacuumsBuilt(s *Session) int { return len(s.vacuums) }
