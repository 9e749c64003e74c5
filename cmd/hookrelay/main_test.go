package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/db/dbtest"
	"github.com/hookrelay/hookrelay/internal/apitest"
	"github.com/hookrelay/hookrelay/internal/logtest"
)

// testServer is a `hookrelay serve` running in-process through run().
type testServer struct {
	URL    string          // http://127.0.0.1:port
	Logs   *logtest.Buffer // everything logged (JSON lines)
	Stdout *logtest.Buffer
	stop   context.CancelFunc
	done   chan struct{} // closed when run returns
	err    error         // run's result, set before done is closed
}

// Stop cancels the server and returns run's error.
func (s *testServer) Stop(t *testing.T) error {
	t.Helper()
	s.stop()
	select {
	case <-s.done:
		return s.err
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s")
		return nil
	}
}

// startServe runs `hookrelay serve` with a fresh database, the embedded S3
// store on a free port and a temporary data dir; env entries override.
func startServe(t *testing.T, env map[string]string, args ...string) *testServer {
	t.Helper()
	base := map[string]string{
		"DATABASE_URL":                    dbtest.NewURL(t),
		"HOOKRELAY_ADDR":                  "127.0.0.1:0",
		"HOOKRELAY_S3_EMBED_ADDR":         "127.0.0.1:0",
		"HOOKRELAY_DATA_DIR":              t.TempDir(),
		"HOOKRELAY_ADMIN_TOKEN":           "hra_test_admin_token_0123456789",
		"HOOKRELAY_ENCRYPTION_KEY":        dbtest.TestEncryptionKey,
		"HOOKRELAY_LOG_FORMAT":            "json",
		"HOOKRELAY_ALLOW_PRIVATE_TARGETS": "true",
	}
	for k, v := range env {
		base[k] = v
	}
	getenv := func(k string) string { return base[k] }
	environ := make([]string, 0, len(base))
	for k, v := range base {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{Logs: &logtest.Buffer{}, Stdout: &logtest.Buffer{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = run(ctx, append([]string{"hookrelay", "serve"}, args...), getenv, s.Stdout, s.Logs, environ...)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if addr := servingAddr(s.Logs.String()); addr != "" {
			s.URL = "http://" + addr
			break
		}
		select {
		case <-s.done:
			t.Fatalf("serve exited early: %v\nlogs:\n%s", s.err, s.Logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.NotEmpty(t, s.URL, "serve did not log its address; logs:\n%s", s.Logs.String())
	return s
}

func servingAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "hookrelay serving" {
			return line.Addr
		}
	}
	return ""
}

func TestServeReadyAndCleanShutdown(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(s.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	require.NoError(t, s.Stop(t))
	require.Contains(t, s.Logs.String(), `"msg":"stopped"`)
}

func TestServeGeneratesAdminTokenOnce(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "HOOKRELAY_ADMIN_TOKEN": ""}
	s := startServe(t, env)
	require.Contains(t, s.Stdout.String(), "admin token (shown once")
	require.NoError(t, s.Stop(t))
	s2 := startServe(t, env)
	require.NotContains(t, s2.Stdout.String(), "admin token")
	require.NotContains(t, s.Logs.String(), "hra_", "the token is never logged")
}

// TestNoLogRecordHoldsTheAdminToken: a configured admin token, used and
// misused, never appears in the log stream, and serve prints nothing of it.
func TestNoLogRecordHoldsTheAdminToken(t *testing.T) {
	t.Parallel()
	const admin = "hra_test_admin_token_0123456789"
	s := startServe(t, map[string]string{"HOOKRELAY_LOG_LEVEL": "debug"})
	st, _, _ := ingestCall(t, s, http.MethodGet, "/v1/carriers", admin, nil)
	require.Equal(t, http.StatusOK, st)
	st, _, _ = ingestCall(t, s, http.MethodGet, "/v1/carriers", admin+"x", nil)
	require.Equal(t, http.StatusUnauthorized, st)
	require.NoError(t, s.Stop(t))
	require.NotContains(t, s.Logs.String(), admin)
	require.NotContains(t, s.Logs.String(), "hra_")
	require.NotContains(t, s.Stdout.String(), admin)
}

func TestConfigErrorsNameEveryBadVariable(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"HOOKRELAY_LEASE":                 "soon",
		"HOOKRELAY_OFFLOAD_BYTES":         "-1",
		"HOOKRELAY_ALLOW_PRIVATE_TARGETS": "maybe",
		"DATABASE_URL":                    "mysql://x",
		"HOOKRELAY_DISPATCH_BATCH":        "0",
		"HOOKRELAY_VACUUM_INTERVAL":       "x",
	}
	_, err := loadConfig(func(k string) string { return env[k] })
	require.Error(t, err)
	for k := range env {
		require.Contains(t, err.Error(), k)
	}
	_, err = loadConfig(func(k string) string {
		return map[string]string{"HOOKRELAY_OPS_RETRY_BASE": "10m", "HOOKRELAY_OPS_RETRY_MAX": "1m"}[k]
	})
	require.ErrorContains(t, err, "HOOKRELAY_OPS_RETRY_MAX (1m0s) is shorter than HOOKRELAY_OPS_RETRY_BASE (10m0s)")
}

func TestUnknownCommandAndRole(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"hookrelay", "nope"}, func(string) string { return "" }, &out, &errOut)
	require.ErrorIs(t, err, errUsage)
	err = run(context.Background(), []string{"hookrelay", "serve", "--roles", "api,bogus"}, func(string) string { return "" }, &out, &errOut)
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, err.Error(), "bogus")
}

func TestErrorShapeWithoutAPIRole(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil, "--roles", "maintenance")
	resp, err := apitest.Client(t).Get(s.URL + "/v1/nope")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.NotEmpty(t, body.Error.Code)
}
