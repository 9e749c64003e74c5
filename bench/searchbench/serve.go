package searchbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// benchEncryptionKey is the key the API runs with unless HOOKRELAY_ENCRYPTION_KEY
// is set: serve requires one, and a benchmark's database holds no real secret,
// so a fixed key keeps one fill readable by every later measure.
const benchEncryptionKey = "aG9va3JlbGF5LXNlYXJjaGJlbmNoLWtleS0zMmJ5dGU="

// api is a started `hookrelay serve --roles api`.
type api struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startAPI starts bin's API role on dbURL with adminToken, its log in dir.
func startAPI(ctx context.Context, bin, dbURL, adminToken, dir string) (*api, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--roles", "api")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL, "HOOKRELAY_ADDR="+addr, "HOOKRELAY_ADMIN_TOKEN="+adminToken,
		"HOOKRELAY_DATA_DIR="+dir, "HOOKRELAY_S3_EMBED_ADDR=127.0.0.1:0", "HOOKRELAY_LOG_FORMAT=json")
	if os.Getenv("HOOKRELAY_ENCRYPTION_KEY") == "" {
		cmd.Env = append(cmd.Env, "HOOKRELAY_ENCRYPTION_KEY="+benchEncryptionKey)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logFile, err := os.Create(filepath.Join(dir, "api.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	a := &api{url: "http://" + addr, cmd: cmd, exited: make(chan struct{})}
	go func() { // owned: ends when the child exits
		_ = cmd.Wait()
		logFile.Close()
		close(a.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, fmt.Errorf("API not ready within 60s (log: %s)", logFile.Name())
		}
		select {
		case <-ctx.Done():
			a.stop()
			return nil, ctx.Err()
		case <-a.exited:
			b, _ := os.ReadFile(logFile.Name())
			return nil, errors.New("API exited before it was ready: " + string(b[max(0, len(b)-2000):]))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (a *api) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}
