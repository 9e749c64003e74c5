package searchbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// explainSettings make the server log the plan of every statement of the
// database's new sessions, as EXPLAIN (ANALYZE, BUFFERS) prints it
// (auto_explain): the plans of the product's own statements, with the
// parameters the API sent.
var explainSettings = [][2]string{
	{"session_preload_libraries", "auto_explain"},
	{"auto_explain.log_min_duration", "0"},
	{"auto_explain.log_analyze", "on"},
	{"auto_explain.log_buffers", "on"},
	{"auto_explain.log_timing", "on"},
	{"auto_explain.log_nested_statements", "on"},
}

// explain runs one search of each kind through an API started with
// explainSettings and writes the plans it logs, under the kind's name, to
// OutDir/plans.log.
func (r *runner) explain(ctx context.Context, pool *pgxpool.Pool, dbURL, bin string, kinds []search, c MeasureConfig, dir string) error {
	var name string
	if err := pool.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	for _, s := range explainSettings {
		if _, err := pool.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET %s = '%s'", ident, s[0], s[1])); err != nil {
			return err
		}
	}
	defer func() {
		for _, s := range explainSettings {
			_, _ = pool.Exec(context.WithoutCancel(ctx), fmt.Sprintf("ALTER DATABASE %s RESET %s", ident, s[0]))
		}
	}()
	// A data directory of its own: the API timed is still running.
	dir = filepath.Join(dir, "explain")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	a, err := startAPI(ctx, bin, dbURL, r.admin, dir)
	if err != nil {
		return err
	}
	defer a.stop()
	saved := r.api
	r.api = a
	defer func() { r.api = saved }()
	out, err := os.Create(filepath.Join(c.OutDir, "plans.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	for _, k := range kinds {
		q, tok, err := k.query(0)
		if err != nil {
			return err
		}
		from, err := fileSize(c.PGLog)
		if err != nil {
			return err
		}
		if _, err := r.get(ctx, q, tok); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond) // the server's log line is written after the answer
		fmt.Fprintf(out, "==== %s: GET /v1/messages?%s\n", k.name, q.Encode())
		if err := copyPlans(out, c.PGLog, from); err != nil {
			return err
		}
	}
	return nil
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// copyPlans copies the plan entries of log from offset from to out: the
// entries whose first line says "plan:", with their continuation lines.
func copyPlans(out io.Writer, log string, from int64) error {
	f, err := os.Open(log)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		cont := strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ")
		if !cont {
			in = strings.Contains(line, "plan:")
		}
		if in {
			fmt.Fprintln(out, line)
		}
	}
	return nil
}
