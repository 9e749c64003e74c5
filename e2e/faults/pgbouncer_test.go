//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/bench/load"
)

// pgbouncerBin is Debian's pgbouncer (scripts/pgbouncer-deps.sh installs it).
const pgbouncerBin = "/usr/sbin/pgbouncer"

// bouncer is a private PgBouncer in transaction mode in front of one
// database of the test server, run as the non-root postgres user (PgBouncer
// refuses to run as root). The test may kill it and start it again.
type bouncer struct {
	t    testing.TB
	dir  string
	port int
	cred *syscall.Credential
	db   string // the database name clients ask for

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// startBouncer starts PgBouncer in transaction mode in front of the database
// of direct, with serverConns server connections at most.
func startBouncer(t testing.TB, direct string, serverConns int) *bouncer {
	t.Helper()
	if _, err := os.Stat(pgbouncerBin); err != nil {
		t.Fatalf("%s is missing: run scripts/pgbouncer-deps.sh (make test-faults does)", pgbouncerBin)
	}
	u, err := url.Parse(direct)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	dbName := strings.TrimPrefix(u.Path, "/")
	userName := u.User.Username()

	dir, err := os.MkdirTemp("", "hookrelay-pgbouncer-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := &bouncer{t: t, dir: dir, db: dbName}
	if os.Geteuid() == 0 {
		pu, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root needs a postgres user for pgbouncer")
		uid, _ := strconv.Atoi(pu.Uid)
		gid, _ := strconv.Atoi(pu.Gid)
		b.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		require.NoError(t, os.Chown(dir, uid, gid))
	}
	_, p, _ := net.SplitHostPort(freeAddr(t))
	b.port, _ = strconv.Atoi(p)
	conf := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s pool_size=%d
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
admin_users = %s
pool_mode = transaction
max_client_conn = 500
server_lifetime = 3600
stats_period = 1
logfile = %s
`, dbName, host, port, dbName, serverConns, b.port, filepath.Join(dir, "users.txt"), userName,
		filepath.Join(dir, "pgbouncer.log"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(conf), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.txt"), []byte(fmt.Sprintf("%q \"\"\n", userName)), 0o644))
	b.start()
	t.Cleanup(b.kill)
	return b
}

// URL returns the URL of the database through PgBouncer.
func (b *bouncer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", b.port, b.db)
}

// start runs PgBouncer and waits until it accepts connections.
func (b *bouncer) start() {
	b.t.Helper()
	cmd := exec.Command(pgbouncerBin, filepath.Join(b.dir, "pgbouncer.ini"))
	if b.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: b.cred}
	}
	require.NoError(b.t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	b.mu.Lock()
	b.cmd, b.done = cmd, done
	b.mu.Unlock()
	ok := waitFor(context.Background(), 20*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", b.port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !ok {
		log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
		b.t.Fatalf("pgbouncer did not listen within 20s; log:\n%s", log)
	}
}

// kill sends SIGKILL and waits for PgBouncer to be gone: every client and
// server connection it had is cut.
func (b *bouncer) kill() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// stats returns PgBouncer's total transaction and query counts for the
// database, from its admin console (SHOW STATS).
func (b *bouncer) stats(ctx context.Context) (xacts, queries int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", b.port))
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SHOW STATS")
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		// The simple protocol answers in text: the raw values are the numbers.
		names := rows.FieldDescriptions()
		row := map[string]string{}
		for i, v := range rows.RawValues() {
			row[names[i].Name] = string(v)
		}
		if row["database"] == b.db {
			xacts, _ = strconv.ParseInt(row["total_xact_count"], 10, 64)
			queries, _ = strconv.ParseInt(row["total_query_count"], 10, 64)
		}
	}
	return xacts, queries, rows.Err()
}

// TestPgBouncer: every process (an api, two dispatchers, the maintenance
// role) reaches PostgreSQL through PgBouncer in transaction mode with fewer
// server connections than the processes' pools hold, and a direct URL for
// what needs a session (migrations, the maintenance role's lock, LISTEN).
// Under load a dispatcher chosen at random is killed with SIGKILL and
// started again, twice, and PgBouncer itself is killed and started again
// once (every pooled connection cut). Nothing acknowledged is lost, order
// per key holds, duplicates stay within what was in flight, and no session
// setting of hookrelay's reaches the server sessions other clients share.
func TestPgBouncer(t *testing.T) {
	direct := dbURL(t)
	ctx := t.Context()
	// The timeouts hookrelay cannot send through PgBouncer come from the
	// role, as docs/operations/postgresql.md ("PgBouncer") asks.
	conn, err := pgx.Connect(ctx, direct)
	require.NoError(t, err)
	var dbName string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&dbName))
	for _, set := range []string{"statement_timeout = '30s'", "idle_in_transaction_session_timeout = '60s'", "lock_timeout = '10s'"} {
		_, err = conn.Exec(ctx, "ALTER ROLE CURRENT_USER IN DATABASE "+pgx.Identifier{dbName}.Sanitize()+" SET "+set)
		require.NoError(t, err)
	}
	conn.Close(ctx)

	const serverConns = 12
	pgb := startBouncer(t, direct, serverConns)
	s3 := startS3(t)
	env := serviceEnv(pgb.URL(), s3, map[string]string{
		"HOOKRELAY_DB_POOLER":           "pgbouncer",
		"HOOKRELAY_DATABASE_DIRECT_URL": direct,
	})
	api := newProc(t, "api", "api,maintenance", env)
	api.start()
	var ds []*proc
	for i := range 2 {
		d := newProc(t, fmt.Sprintf("dispatch%d", i), "dispatch", env)
		d.start()
		ds = append(ds, d)
	}
	procs := append([]*proc{api}, ds...)
	dumpLogs(t, procs...)

	w := newWorld(t, api.URL(), 2, 20, load.SinkConfig{Latency: 2 * time.Millisecond})
	l := w.load(loadConfig{Targets: []string{api.URL()}, Interval: 50 * time.Millisecond, GiveUpAfter: 60 * time.Second})
	stop := runLoad(l)

	// While the load runs, the server sessions PgBouncer hands out carry
	// none of the claim's planner settings (a SET there would reach every
	// client of the pool).
	leaks := make(chan string, 1)
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		leaks <- probeSettings(ctx, pgb.URL()+"&default_query_exec_mode=exec", 3*time.Second)
	}()

	const kills = 2
	for range kills {
		time.Sleep(2 * time.Second)
		victim := ds[rand.IntN(len(ds))]
		victim.kill()
		time.Sleep(300 * time.Millisecond)
		victim.start()
	}
	<-probeDone
	time.Sleep(time.Second)
	pgb.kill()
	time.Sleep(500 * time.Millisecond)
	upAt := time.Now()
	pgb.start()
	require.True(t, waitFor(ctx, 60*time.Second, func() bool {
		return firstAcceptAfter(l.answers(), upAt, false) >= 0
	}), "ingest did not accept again within 60s of PgBouncer's restart")
	recovery := firstAcceptAfter(l.answers(), upAt, false)
	time.Sleep(2 * time.Second)
	stop()
	drain := w.drain(90 * time.Second)

	xacts, queries, err := pgb.stats(ctx)
	require.NoError(t, err)
	w.account(result{Scenario: "PgBouncer (transaction mode): kill -9 dispatchers, PgBouncer restart", Faults: kills + 1,
		Drain: drain.Round(time.Millisecond).String(), MaxRecovery: recovery.Round(time.Millisecond).String(),
		Extra: map[string]any{"max_end_to_end": maxLatency(w.ledger).String(), "server_connections": serverConns,
			"pgbouncer_transactions_after_restart": xacts, "pgbouncer_queries_after_restart": queries}},
		l, kills*inFlightBound+inFlightBound)

	require.Empty(t, <-leaks, "a session setting reached PgBouncer's shared server sessions")
	// The traffic went through PgBouncer: its counters (reset by the
	// restart) saw the claims and acknowledgements of the drain.
	require.Greater(t, xacts, int64(100), "PgBouncer carried almost no transactions")
	for _, p := range procs {
		for _, line := range p.logLines("WARN") {
			require.NotContains(t, line, "lack a configured timeout", "%s: the role's timeouts were not seen through PgBouncer", p.name)
			require.NotContains(t, line, "prepared statement", "%s: a prepared statement went astray behind PgBouncer", p.name)
		}
	}
}

// probeSettings opens short connections through PgBouncer for d, each
// reading the planner settings the claim's sessions set when they keep
// prepared statements; it returns the first one found changed ("" if none).
func probeSettings(ctx context.Context, pooled string, d time.Duration) string {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(cctx, pooled)
		if err == nil {
			var plan, seq, jit string
			err = conn.QueryRow(cctx, "SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan'), current_setting('jit')").
				Scan(&plan, &seq, &jit)
			conn.Close(context.Background())
			if err == nil && (plan != "auto" || seq != "on") {
				cancel()
				return fmt.Sprintf("plan_cache_mode=%s enable_seqscan=%s jit=%s", plan, seq, jit)
			}
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	return ""
}
