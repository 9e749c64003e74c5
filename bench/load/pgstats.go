package load

// This file reads PostgreSQL's own statistics views for the report. It is
// measurement, not application SQL: the service's queries stay in
// db/queries; the benchmark only samples pg_stat_* catalogs.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// PGStats samples counters of the database the service uses.
type PGStats struct {
	conn       *pgx.Conn
	statements bool // pg_stat_statements is queryable
	// Postmaster is the server's postmaster pid when it could be read (its
	// data directory is local and readable), else 0.
	Postmaster int
}

// PGSample is one snapshot of the counters.
type PGSample struct {
	Commits    int64 // pg_stat_database.xact_commit of the database
	Statements int64 // sum of pg_stat_statements.calls of the database; -1 if unavailable
	WALBytes   int64 // pg_current_wal_lsn() as bytes (cluster-wide)
}

// OpenPGStats connects to url. It tries to create pg_stat_statements (which
// works only where shared_preload_libraries loads it).
func OpenPGStats(ctx context.Context, url string) (*PGStats, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("stats connection: %w", err)
	}
	p := &PGStats{conn: conn}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err == nil {
		var n int64
		if conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_statements LIMIT 1").Scan(&n) == nil {
			p.statements = true
		}
	}
	var dir string
	if conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir) == nil {
		if raw, err := os.ReadFile(filepath.Join(dir, "postmaster.pid")); err == nil {
			first, _, _ := strings.Cut(string(raw), "\n")
			p.Postmaster, _ = strconv.Atoi(strings.TrimSpace(first))
		}
	}
	return p, nil
}

// HasStatements reports whether pg_stat_statements is available.
func (p *PGStats) HasStatements() bool { return p.statements }

// Sample reads the counters now. pg_stat_database lags by up to a second
// (stats are flushed at most once a second), so samples are taken after the
// traffic settled.
func (p *PGStats) Sample(ctx context.Context) (PGSample, error) {
	var s PGSample
	_, _ = p.conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	err := p.conn.QueryRow(ctx, `SELECT xact_commit, (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.Commits, &s.WALBytes)
	if err != nil {
		return s, fmt.Errorf("sample pg_stat_database: %w", err)
	}
	s.Statements = -1
	if p.statements {
		err := p.conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&s.Statements)
		if err != nil {
			return s, fmt.Errorf("sample pg_stat_statements: %w", err)
		}
	}
	return s, nil
}

// ResetStatements clears pg_stat_statements (before a phase, so TopStatements
// shows that phase only).
func (p *PGStats) ResetStatements(ctx context.Context) error {
	if !p.statements {
		return nil
	}
	_, err := p.conn.Exec(ctx, "SELECT pg_stat_statements_reset()")
	return err
}

// TopStatements writes the n statements of the database with the most total
// execution time, with calls per callback, to w.
func (p *PGStats) TopStatements(ctx context.Context, w io.Writer, n int, callbacks int64) error {
	if !p.statements {
		return nil
	}
	rows, err := p.conn.Query(ctx, `SELECT calls, total_exec_time, rows, shared_blks_hit + shared_blks_read,
			regexp_replace(left(query, 160), '\s+', ' ', 'g')
		FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT $1`, n)
	if err != nil {
		return fmt.Errorf("top statements: %w", err)
	}
	defer rows.Close()
	fmt.Fprintf(w, "%10s %9s %10s %9s %9s  %s\n", "calls", "per_cb", "total_ms", "ms/call", "blks/call", "query")
	for rows.Next() {
		var calls, nrows, blks int64
		var total float64
		var q string
		if err := rows.Scan(&calls, &total, &nrows, &blks, &q); err != nil {
			return err
		}
		perCB := 0.0
		if callbacks > 0 {
			perCB = float64(calls) / float64(callbacks)
		}
		fmt.Fprintf(w, "%10d %9.3f %10.1f %9.3f %9.1f  %s\n", calls, perCB, total, total/float64(max(calls, 1)), float64(blks)/float64(max(calls, 1)), q)
	}
	return rows.Err()
}

// Close ends the connection.
func (p *PGStats) Close() { _ = p.conn.Close(context.Background()) }

// DropDatabase drops the database url names, disconnecting its sessions.
func DropDatabase(ctx context.Context, url string) error {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	name := cc.Database
	cc.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}
