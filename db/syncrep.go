package db

import (
	"cmp"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// commitWarnings counts the WARNING notices each pool connection received.
//
// Why: with a synchronous standby (synchronous_standby_names), a commit waits
// until the standby has the transaction. When that wait is cut short — the
// statement_timeout fires, a cancel request arrives — PostgreSQL does not
// fail the commit: it has already committed locally, so it sends a WARNING
// ("canceling wait for synchronous replication ... might not have been
// replicated to the standby") and then reports success. An ingest that
// answered 202 on that success would acknowledge a callback that is on one
// machine only, and lost if that machine is lost before the standby catches
// up. MessageInsertMany compares the count of its connection before and
// after its statements and fails the batch (503, the client retries) when a
// warning came: it never acknowledges a commit the standby did not confirm.
// Any WARNING counts (its text is localised, and the ingest statements send
// no other), which errs on the side of a retry.
type commitWarnings struct {
	mu   sync.Mutex
	byPC map[*pgconn.PgConn]warningCount // guarded by mu
}

type warningCount struct {
	n    uint64
	last string // the message and detail of the latest warning
}

func newCommitWarnings() *commitWarnings {
	return &commitWarnings{byPC: map[*pgconn.PgConn]warningCount{}}
}

// record is the pool's notice handler.
func (w *commitWarnings) record(pc *pgconn.PgConn, n *pgconn.Notice) {
	if cmp.Or(n.SeverityUnlocalized, n.Severity) != "WARNING" {
		return
	}
	w.mu.Lock()
	c := w.byPC[pc]
	c.n++
	c.last = n.Message
	if n.Detail != "" {
		c.last += " (" + n.Detail + ")"
	}
	w.byPC[pc] = c
	w.mu.Unlock()
}

// count returns how many warnings pc received and the latest one.
func (w *commitWarnings) count(pc *pgconn.PgConn) (uint64, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.byPC[pc]
	return c.n, c.last
}

// forget drops pc's count; the pool calls it when it closes the connection.
func (w *commitWarnings) forget(pc *pgconn.PgConn) {
	w.mu.Lock()
	delete(w.byPC, pc)
	w.mu.Unlock()
}
