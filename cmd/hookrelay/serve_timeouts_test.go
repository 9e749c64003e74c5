package main

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHTTPServerDeadlines: every phase of a request has a deadline (a client
// that never reads its answer cannot hold a goroutine forever), and the
// write deadline leaves room for the slowest call that can still succeed.
func TestHTTPServerDeadlines(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := loadConfig(func(string) string { return "" })
	require.NoError(t, err)
	srv := newHTTPServer(c, http.NotFoundHandler(), logger)
	require.Positive(t, srv.ReadHeaderTimeout)
	require.Positive(t, srv.ReadTimeout)
	require.Positive(t, srv.IdleTimeout)
	require.Positive(t, srv.WriteTimeout)
	// An endpoint test waits up to the longest endpoint timeout.
	require.Greater(t, srv.WriteTimeout, 120*time.Second)
	// A callback: its body, the payload store, its batch.
	require.Greater(t, srv.WriteTimeout, srv.ReadTimeout+15*time.Second+30*time.Second)
	require.Greater(t, srv.WriteTimeout, c.DB.StatementTimeout)

	c, err = loadConfig(func(k string) string {
		if k == "HOOKRELAY_STATEMENT_TIMEOUT" {
			return "10m"
		}
		return ""
	})
	require.NoError(t, err)
	require.Greater(t, newHTTPServer(c, http.NotFoundHandler(), logger).WriteTimeout, 10*time.Minute,
		"an operator call may run a statement up to HOOKRELAY_STATEMENT_TIMEOUT")
}
