//go:build faults

package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/testenv"
)

// binPath is the hookrelay binary built once by TestMain, from the product
// module's directory productDir.
var binPath, productDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hookrelay-faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(2)
	}
	productDir, err = testenv.ModuleDir()
	if err == nil {
		binPath, err = testenv.BuildHookrelay(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// proc is one `hookrelay serve` process. It can be killed, paused, resumed
// and started again with the same environment (and so the same address).
type proc struct {
	t     testing.TB
	name  string
	roles string
	addr  string   // HOOKRELAY_ADDR
	env   []string // full environment
	log   string   // file collecting stdout and stderr of every run

	mu   sync.Mutex
	cmd  *exec.Cmd     // guarded by mu
	done chan struct{} // closed when the current run exited; guarded by mu
}

// newProc prepares (does not start) a process running roles with env on top
// of a minimal base environment.
func newProc(t testing.TB, name, roles string, env map[string]string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, roles: roles, addr: env["HOOKRELAY_ADDR"]}
	if p.addr == "" {
		p.addr = freeAddr(t)
	}
	base := map[string]string{
		"PATH":                 os.Getenv("PATH"),
		"HOME":                 os.TempDir(),
		"HOOKRELAY_ADDR":       p.addr,
		"HOOKRELAY_LOG_FORMAT": "json",
		"HOOKRELAY_DATA_DIR":   t.TempDir(),
		// One key for every process of a scenario, as in a deployment.
		"HOOKRELAY_ENCRYPTION_KEY": dbtest.TestEncryptionKey,
	}
	for k, v := range env {
		base[k] = v
	}
	base["HOOKRELAY_ADDR"] = p.addr
	for k, v := range base {
		p.env = append(p.env, k+"="+v)
	}
	p.log = filepath.Join(t.TempDir(), name+".log")
	t.Cleanup(p.kill)
	return p
}

// URL returns the process's HTTP base URL.
func (p *proc) URL() string { return "http://" + p.addr }

// start launches the process and waits until it serves /healthz.
func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("%s: log file: %v", p.name, err)
	}
	fmt.Fprintf(f, "==== start %s %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(binPath, "serve", "--roles", p.roles)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		p.t.Fatalf("%s: start: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	p.waitHealthy(done)
}

func (p *proc) waitHealthy(done chan struct{}) {
	p.t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			p.t.Fatalf("%s exited during start-up; log:\n%s", p.name, p.tail(60))
		default:
		}
		resp, err := client.Get(p.URL() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("%s not healthy within 60s; log:\n%s", p.name, p.tail(60))
}

// running reports whether the process is up.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// kill sends SIGKILL (after SIGCONT, in case it is stopped) and waits for the
// process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.t.Errorf("%s did not die within 10s of SIGKILL", p.name)
	}
}

// pause and resume stop and continue the process (SIGSTOP, SIGCONT).
func (p *proc) pause()  { p.signal(syscall.SIGSTOP) }
func (p *proc) resume() { p.signal(syscall.SIGCONT) }

// tail returns the last n lines of the process log.
func (p *proc) tail(n int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logLines returns the JSON log records of every run whose level is at least
// minLevel ("WARN", "ERROR").
func (p *proc) logLines(minLevel string) []string {
	rank := map[string]int{"DEBUG": 0, "INFO": 1, "WARN": 2, "ERROR": 3}
	f, err := os.Open(p.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		if rank[rec.Level] >= rank[minLevel] {
			out = append(out, string(bytes.Clone(sc.Bytes())))
		}
	}
	return out
}

// waitFor polls cond every 50 ms until it is true or d passed; it reports
// whether cond became true.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
