package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The replay routes: 202 with the count, progress, cancel; bad windows and
// statuses are 400 and another merchant's endpoint or replay 404, with the
// error shape.
func TestReplayAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, privateOK())
	w := b.world(t)
	now := time.Now().UTC()
	hour := now.Add(-time.Hour).Format(time.RFC3339)
	body := func(since, until, status string) map[string]any {
		return map[string]any{"since": since, "until": until, "status": status}
	}
	for name, req := range map[string]any{
		"inverted":      body(now.Format(time.RFC3339), hour, "all"),
		"no until":      map[string]any{"since": hour, "status": "all"},
		"not RFC 3339":  body("yesterday", hour, "all"),
		"status":        body(hour, now.Format(time.RFC3339), "dead"),
		"unknown field": map[string]any{"since": hour, "until": now.Format(time.RFC3339), "status": "all", "limit": 3},
	} {
		code, out := b.call(t, http.MethodPost, "/v1/endpoints/"+w.E1+"/replay", w.M1Key, req)
		require.Equal(t, http.StatusBadRequest, code, "%s: %v", name, out)
		require.Equal(t, "invalid", errCode(out), name)
	}
	ok := body(hour, now.Format(time.RFC3339), "delivered")
	code, out := b.call(t, http.MethodPost, "/v1/endpoints/"+w.E2+"/replay", w.M1Key, ok)
	require.Equal(t, http.StatusNotFound, code, "%v", out)
	require.Equal(t, "not_found", errCode(out))

	code, out = b.call(t, http.MethodPost, "/v1/endpoints/"+w.E1+"/replay", w.M1Key, ok)
	require.Equal(t, http.StatusAccepted, code, "%v", out)
	require.Equal(t, float64(0), out["count"])
	id := out["id"].(string)
	code, out = b.call(t, http.MethodGet, "/v1/replays/"+id, w.M2Key, nil)
	require.Equal(t, http.StatusNotFound, code, "%v", out)
	require.Equal(t, "not_found", errCode(out))
	code, out = b.call(t, http.MethodGet, "/v1/replays/"+id, w.M1Key, nil)
	require.Equal(t, http.StatusOK, code, "%v", out)
	require.Equal(t, "running", out["state"])
	require.Equal(t, w.E1, out["endpoint_id"])
	for _, k := range []string{"total", "done", "failed", "created_at", "finished_at"} {
		require.Contains(t, out, k)
	}
	code, out = b.call(t, http.MethodPost, "/v1/replays/"+id+"/cancel", adminToken, nil)
	require.Equal(t, http.StatusOK, code, "%v", out)
	require.Equal(t, "cancelled", out["state"])
	require.NotNil(t, out["finished_at"])
}
