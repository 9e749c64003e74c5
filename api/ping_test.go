package api_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookrelay/hookrelay"
)

type fakePinger struct{ got chan int64 }

func (f fakePinger) Ping(_ context.Context, id int64) (hookrelay.PingResult, error) {
	f.got <- id
	return hookrelay.PingResult{StatusCode: 204, Latency: 7 * time.Millisecond, Success: true}, nil
}

func TestEndpointTestPing(t *testing.T) {
	t.Parallel()
	p := fakePinger{got: make(chan int64, 1)}
	b := setupWith(t, privateOK(), p)
	w := b.world(t)
	st, out := b.call(t, http.MethodPost, "/v1/endpoints/"+w.E1+"/test", w.M1Key, nil)
	require.Equal(t, http.StatusOK, st, "%v", out)
	require.Equal(t, float64(204), out["status_code"])
	require.Equal(t, true, out["success"])
	require.Equal(t, map[string]any{"status_code": float64(204), "latency_ms": float64(7), "success": true}, out,
		"the answer's shape: error and response_excerpt only when not empty")
	require.Equal(t, w.E1, strconv.FormatInt(<-p.got, 10))
}

type panicPinger struct{}

func (panicPinger) Ping(context.Context, int64) (hookrelay.PingResult, error) {
	panic("pinger bug")
}

// A bug (here a panic) is a 500 with a generic message; the cause is logged.
func TestInternalErrorIsGeneric(t *testing.T) {
	t.Parallel()
	b := setupWith(t, privateOK(), panicPinger{})
	w := b.world(t)
	st, out := b.call(t, http.MethodPost, "/v1/endpoints/"+w.E1+"/test", w.M1Key, nil)
	require.Equal(t, http.StatusInternalServerError, st)
	require.Equal(t, "internal", errCode(out))
	require.Equal(t, "internal error", out["error"].(map[string]any)["message"])
	require.Contains(t, b.Logs.String(), "pinger bug")
}
