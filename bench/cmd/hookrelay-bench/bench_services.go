package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

// benchService is one `hookrelay serve` child process started by the
// benchmark.
type benchService struct {
	roles  string
	url    string // http://addr of its API/metrics listener
	s3URL  string // embedded S3 store, when it runs one
	pid    int
	stop   func() error
	logTo  string // log file
	exited chan struct{}
	// started is closed when start-up log reading ends; log forwarders stop
	// sending lines then.
	started chan struct{}
}

// benchLauncher starts service processes with a shared base environment.
type benchLauncher struct {
	bin    string // the hookrelay binary
	env    map[string]string
	logDir string
}

// start runs `hookrelay serve --roles roles` with extra env on top of the
// base and waits until it logs its address and answers /readyz.
func (l *benchLauncher) start(ctx context.Context, name, roles string, extra map[string]string) (*benchService, error) {
	env := map[string]string{}
	for k, v := range l.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	svc := &benchService{roles: roles, exited: make(chan struct{}), started: make(chan struct{})}
	lines := make(chan string, 64)
	if err := l.startChild(svc, name, env, lines); err != nil {
		return nil, err
	}
	if err := svc.awaitAddr(ctx, lines); err != nil {
		_ = svc.stop()
		return nil, fmt.Errorf("%s (%s): %w", name, roles, err)
	}
	if err := waitReady(ctx, svc.url, svc.exited); err != nil {
		_ = svc.stop()
		return nil, fmt.Errorf("%s (%s): %w", name, roles, err)
	}
	return svc, nil
}

// awaitAddr reads log lines until the service reports its listener.
func (s *benchService) awaitAddr(ctx context.Context, lines <-chan string) error {
	defer close(s.started)
	timeout := time.NewTimer(90 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return errors.New("did not log its address within 90s")
		case <-s.exited:
			return errors.New("exited during start-up")
		case line, ok := <-lines:
			if !ok {
				return errors.New("exited during start-up")
			}
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
				URL  string `json:"url"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			switch rec.Msg {
			case "embedded S3 store started":
				s.s3URL = rec.URL
			case "hookrelay serving":
				s.url = "http://" + rec.Addr
				return nil
			}
		}
	}
}

// startChild execs the hookrelay binary; its log goes to a file and, during
// start-up, to lines.
func (l *benchLauncher) startChild(svc *benchService, name string, env map[string]string, lines chan<- string) error {
	cmd := exec.Command(l.bin, "serve", "--roles", svc.roles)
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	svc.logTo = filepath.Join(l.logDir, name+".log")
	logFile, err := os.Create(svc.logTo)
	if err != nil {
		return err
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return err
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	svc.pid = cmd.Process.Pid
	var copied sync.WaitGroup
	copied.Add(1)
	go func() { // owned: ends when the child closes stderr
		defer copied.Done()
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		forward := true
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			if forward {
				select {
				case lines <- sc.Text():
				case <-svc.started:
					forward = false
				}
			}
		}
	}()
	var waitErr error
	go func() { // owned: ends when the child exits
		copied.Wait()
		waitErr = cmd.Wait()
		logFile.Close()
		close(svc.exited)
	}()
	svc.stop = func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-svc.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-svc.exited
		}
		var exitErr *exec.ExitError
		if errors.As(waitErr, &exitErr) && exitErr.Sys().(syscall.WaitStatus).Signaled() {
			return nil
		}
		return waitErr
	}
	return nil
}

// waitReady polls /readyz until it answers 200.
func waitReady(ctx context.Context, base string, exited <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within 60s (last: %v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return errors.New("exited before it was ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
