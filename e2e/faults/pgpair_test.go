//go:build faults

package faults

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pgPair is the two-node cluster of scripts/pg-cluster.sh — a primary and a
// synchronous streaming standby — in a temporary directory on free ports,
// owned by one test and destroyed when it ends.
type pgPair struct {
	t   testing.TB
	env []string
}

// startPair creates and starts the pair; sync says whether the standby is
// synchronous.
func startPair(t testing.TB, sync bool) *pgPair {
	t.Helper()
	root, err := os.MkdirTemp("", "hookrelay-faults-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	// The server runs as the postgres user when the test runs as root: it
	// must reach its data directories under root.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("FAULTS_KEEP_CLUSTER") == "" || !t.Failed() {
			os.RemoveAll(root)
		}
	})
	port := func() string { _, p, _ := net.SplitHostPort(freeAddr(t)); return p }
	syncMode := "off"
	if sync {
		syncMode = "on"
	}
	p := &pgPair{t: t, env: append(os.Environ(),
		"PG_CLUSTER_DIR="+filepath.Join(root, "pg"),
		"PG_CLUSTER_PRIMARY_PORT="+port(),
		"PG_CLUSTER_STANDBY_PORT="+port(),
		"PG_CLUSTER_SYNC="+syncMode,
		// A throw-away cluster: the scenarios kill processes, not the
		// machine, so the page cache keeps what fsync would have.
		"PG_CLUSTER_FSYNC=off",
	)}
	t.Cleanup(func() {
		if os.Getenv("FAULTS_KEEP_CLUSTER") != "" && t.Failed() {
			t.Logf("FAULTS_KEEP_CLUSTER: kept %s (%v)", root, p.env[len(p.env)-5:])
			return
		}
		p.try("destroy")
	})
	start := time.Now()
	p.run("start")
	t.Logf("cluster up in %s: %s", time.Since(start).Round(time.Millisecond), p.run("status"))
	return p
}

// run runs one command of scripts/pg-cluster.sh and returns its output; a
// failure fails the test.
func (p *pgPair) run(args ...string) string {
	p.t.Helper()
	out, err := p.cmd(args...)
	if err != nil {
		p.t.Fatalf("pg-cluster.sh %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(out)
}

// try runs a command and ignores its failure (cleanup).
func (p *pgPair) try(args ...string) { _, _ = p.cmd(args...) }

func (p *pgPair) cmd(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(productDir, "scripts", "pg-cluster.sh"), args...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// URL is the multi-host DATABASE_URL (target_session_attrs=read-write).
func (p *pgPair) URL() string { return p.run("url") }

// ReplicaURL is the standby's URL.
func (p *pgPair) ReplicaURL() string { return p.run("replica-url") }

// PrimaryURL is the primary's own URL.
func (p *pgPair) PrimaryURL() string { return p.run("primary-url") }
