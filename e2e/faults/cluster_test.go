//go:build faults

package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is a private PostgreSQL cluster owned by one test: its own data
// directory, port and server process, run as the non-root postgres user
// (initdb refuses root). The test may stop and start it at will.
type pgCluster struct {
	t    testing.TB
	bin  string // directory of initdb and pg_ctl
	dir  string // data directory
	port int
	cred *syscall.Credential // nil when not root
}

// startCluster initialises and starts a private cluster; it is stopped and
// removed when the test ends.
func startCluster(t testing.TB) *pgCluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Fatal("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)")
	}
	sort.Strings(bins)
	c := &pgCluster{t: t, bin: filepath.Dir(bins[len(bins)-1])}

	root, err := os.MkdirTemp("", "hookrelay-faults-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	c.dir = filepath.Join(root, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user for initdb: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	c.port, _ = strconv.Atoi(port)

	c.run("initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	conf := "listen_addresses = '127.0.0.1'\n" +
		fmt.Sprintf("port = %d\n", c.port) +
		fmt.Sprintf("unix_socket_directories = '%s'\n", root) +
		"max_connections = 200\nfsync = off\nfull_page_writes = off\nshared_buffers = 64MB\n"
	f, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(conf)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	c.start()
	t.Cleanup(func() { c.ctl("stop", "-m", "immediate") })
	return c
}

func (c *pgCluster) run(name string, args ...string) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	cmd.Dir = filepath.Dir(c.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// ctl runs pg_ctl with the cluster's data directory and log file.
func (c *pgCluster) ctl(args ...string) {
	c.t.Helper()
	c.run("pg_ctl", append([]string{"-D", c.dir, "-l", filepath.Join(filepath.Dir(c.dir), "server.log"), "-w", "-t", "60"}, args...)...)
}

func (c *pgCluster) start() { c.ctl("start") }

// stop shuts the server down in fast mode (open sessions are cut).
func (c *pgCluster) stop() { c.ctl("stop", "-m", "fast") }

// URL returns the URL of database name on the cluster.
func (c *pgCluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// query runs one statement returning a single int64 on database name.
func queryInt(ctx context.Context, url, sql string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	err = conn.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}
