package db

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// homeConns keeps a few pool connections for one kind of hot statement (the
// claim, the acknowledgement, the group commit), so that the kind runs on
// the same few sessions instead of on every connection of the pool.
//
// Why: each session keeps its own plan of each prepared statement, and a
// VACUUM of the hot queue table (the maintenance role runs several a second
// under load) invalidates every plan that reads the table in every session.
// A session plans a statement again the next time it runs it, ~1 ms for the
// claim. With every kind spread over the whole pool, a VACUUM cost about a
// dozen plans of each kind; with each kind at home on as many sessions as
// run it at once (its claim loops, its flushers), it costs that many.
//
// get hands out a home connection, acquiring one from the pool while fewer
// than max are held, and otherwise an ordinary pool connection; put takes it
// back. A connection that saw an error, is inside a transaction or has been
// held for maxHold goes back to the pool (which closes a broken one).
//
// A kind may give its home sessions settings of their own (session): set when
// a connection becomes home, reset (with the session's prepared statements,
// whose plans were made under them) before it goes back to the pool.
type homeConns struct {
	pool    *pgxpool.Pool
	max     int
	session *sessionSettings

	mu     sync.Mutex
	free   []homeConn // last in, first out
	held   int        // home connections, free or in use
	closed bool
}

type homeConn struct {
	conn  *pgxpool.Conn
	since time.Time // when it became a home connection
	idle  time.Time // when it was last put back
}

// maxHold bounds how long a connection stays home, so that the pool's own
// lifetime and idle rules still apply to it now and then.
const maxHold = 10 * time.Minute

func newHomeConns(pool *pgxpool.Pool, max int, session *sessionSettings) *homeConns {
	return &homeConns{pool: pool, max: max, session: session}
}

// sessionSettings are run on a home connection's session: set when it
// becomes home, reset when it leaves.
type sessionSettings struct {
	set, reset string
}

// applySession runs sql (set or reset) on c and drops the session's prepared
// statements (a plan made under the other settings would otherwise be kept).
func applySession(ctx context.Context, c *pgx.Conn, sql string) error {
	if _, err := c.Exec(ctx, sql); err != nil {
		return err
	}
	return c.DeallocateAll(ctx)
}

// lease is a connection from get; release it with put.
type lease struct {
	homeConn
	home bool // counted in held
}

// get returns a connection: a free home one, a new home one, or, when max
// are held, a plain pool connection. A home connection idle for over a
// second is pinged first, as the pool does with its idle connections, so
// that a server restart costs a ping rather than a failed statement.
func (h *homeConns) get(ctx context.Context) (lease, error) {
	for {
		c, ok := h.pop()
		if !ok {
			break
		}
		l := lease{homeConn: c, home: true}
		if time.Since(c.idle) <= time.Second {
			return l, nil
		}
		err := c.conn.Ping(ctx)
		if err == nil {
			return l, nil
		}
		h.put(l, err) // back to the pool, which closes it
		if ctx.Err() != nil {
			return lease{}, ctx.Err()
		}
	}
	h.mu.Lock()
	home := !h.closed && h.held < h.max
	if home {
		h.held++
	}
	h.mu.Unlock()
	conn, err := h.pool.Acquire(ctx)
	if err == nil && home && h.session != nil {
		if err = applySession(ctx, conn.Conn(), h.session.set); err != nil {
			h.discard(conn)
		}
	}
	if err != nil {
		if home {
			h.mu.Lock()
			h.held--
			h.mu.Unlock()
		}
		return lease{}, err
	}
	return lease{homeConn: homeConn{conn: conn, since: time.Now()}, home: home}, nil
}

// leave gives a home connection back to the pool, its session reset first;
// one that cannot be reset is closed instead.
func (h *homeConns) leave(conn *pgxpool.Conn) {
	if h.session == nil || conn.Conn().PgConn().IsClosed() || conn.Conn().PgConn().TxStatus() != 'I' {
		// The pool closes a connection that is closed or inside a transaction.
		conn.Release()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := applySession(ctx, conn.Conn(), h.session.reset); err != nil {
		h.discard(conn)
		return
	}
	conn.Release()
}

// discard closes conn and gives it back to the pool, which drops it.
func (h *homeConns) discard(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release()
}

// pop takes the most recently used free home connection, if any.
func (h *homeConns) pop() (homeConn, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.free)
	if n == 0 {
		return homeConn{}, false
	}
	c := h.free[n-1]
	h.free = h.free[:n-1]
	return c, true
}

// put takes back a connection from get; err is the error its statements
// ended with, if any.
func (h *homeConns) put(l lease, err error) {
	if !l.home {
		l.conn.Release()
		return
	}
	pc := l.conn.Conn().PgConn()
	keep := err == nil && !pc.IsClosed() && pc.TxStatus() == 'I' && time.Since(l.since) < maxHold
	h.mu.Lock()
	if keep && !h.closed {
		l.idle = time.Now()
		h.free = append(h.free, l.homeConn)
		h.mu.Unlock()
		return
	}
	h.held--
	h.mu.Unlock()
	h.leave(l.conn)
}

// close gives every free home connection back to the pool; those in use go
// back when put. Call it before closing the pool: the sessions are not reset
// (the pool closes them next), so closing never waits on the server.
func (h *homeConns) close() {
	h.mu.Lock()
	free := h.free
	h.free = nil
	h.held -= len(free)
	h.closed = true
	h.mu.Unlock()
	for _, c := range free {
		c.conn.Release()
	}
}
