package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay/internal/logtest"
)

func TestPprofOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	stop, err := startPprof("", logger)
	require.NoError(t, err)
	stop()

	var logs logtest.Buffer
	stop, err = startPprof("127.0.0.1:0", slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	defer stop()
	addr := servingAddrOf(t, logs.String())
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func servingAddrOf(t *testing.T, logs string) string {
	t.Helper()
	_, rest, ok := strings.Cut(logs, `"addr":"`)
	require.True(t, ok, "pprof logged its address: %s", logs)
	addr, _, _ := strings.Cut(rest, `"`)
	return addr
}
